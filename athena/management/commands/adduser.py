"""`python manage.py adduser NAME [--group G ...] [--password P|-] [--staff]` — non-interactive user creation."""

from __future__ import annotations

import sys
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from athena.errors import ApplicationError
from athena.services import user_create_or_update


class Command(BaseCommand):
    stealth_options = ("stdin",)  # call_command(..., stdin=stream) for `--password -`
    help = (
        "Create a user non-interactively and put them in the given groups; for an existing user, add the groups "
        "(never removed here) and set what is given (password, email, --staff; staff is never taken away here: "
        "use the admin)"
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("name", help="user name (login)")
        parser.add_argument(
            "--group",
            action="append",
            default=[],
            dest="groups",
            help="Django auth group (created if missing); repeatable",
        )
        parser.add_argument(
            "--password",
            default=None,
            help="password (default: unusable; token/API only); `-` reads it from the first line of standard "
            "input, so that it is not on the command line, which every local account sees in the process list",
        )
        parser.add_argument("--email", default="", help="e-mail address (set when given)")
        parser.add_argument("--staff", action="store_true", help="may log into Django admin")

    def handle(self, *args: Any, **options: Any) -> None:
        password = options["password"]
        if password == "-":
            password = (options.get("stdin") or sys.stdin).readline().rstrip("\r\n")
            if not password:
                raise CommandError("--password -: no password on the first line of standard input")
        try:
            user, created = user_create_or_update(
                username=options["name"],
                groups=options["groups"],
                password=password,
                email=options["email"],
                staff=options["staff"],
            )
        except ApplicationError as exc:
            raise CommandError(exc.message) from exc
        verb = "created" if created else "updated"
        groups = ", ".join(sorted(g.name for g in user.groups.all())) or "no groups"
        self.stdout.write(f"{verb} user {user.username} ({groups})")
