"""`python manage.py bootstrap` — what `make run` does before serving: stack up, migrate, demo users, sample KB.

It lives in the knowledge app (not the athena core) because it loads knowledge's sample KB and reads its
documents: the core layer imports no app above it."""

from __future__ import annotations

import contextlib
import time
from typing import Any

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.core.management.base import BaseCommand, CommandError, CommandParser

from athena.paths import BASE_DIR
from athena.services import ROLE_ADMIN, ROLE_COMPLIANCE, ROLE_EMPLOYEE, user_create_or_update
from athena.stack import (
    LOG_MAX_BYTES,
    Stack,
    StackError,
    launcher_held,
    log_dir,
    runner_active,
    runner_refusal,
)
from knowledge.models import Document
from knowledge.services import embedding_models_stale

SAMPLE_KB = BASE_DIR / "knowledge" / "sample_kb"

DEMO_USERS = [
    # (name, password, groups, staff, superuser)
    ("alice", "alice-demo-pass", [ROLE_EMPLOYEE], False, False),
    ("noc-bob", "bob-demo-pass", [ROLE_EMPLOYEE, "noc-admins"], False, False),
    ("carol", "carol-demo-pass", [ROLE_COMPLIANCE], False, False),
    ("admin", "admin-demo-pass", [ROLE_ADMIN], True, True),
]


def demo_users_ensure(*, debug: bool) -> bool:
    """Create the demo users, resetting their printed passwords -- only under DEBUG (`make run`): outside
    development no account with a known password is created and no existing password is ever reset.
    Returns whether anything was done."""
    if not debug:
        return False
    for name, password, groups, staff, superuser in DEMO_USERS:
        existing = get_user_model().objects.filter(username=name).first()
        # set again only where it no longer holds: set anew (a new salt, a new hash) it signed the user out of
        # every session at each `make run` (Django checks a session against the password hash)
        holds = existing is not None and existing.check_password(password)
        user, _ = user_create_or_update(
            username=name, groups=groups, password=None if holds else password, staff=staff
        )
        if superuser and not user.is_superuser:
            user.is_superuser = True
            user.save(update_fields=["is_superuser"])
    return True


def demo_users_wanted() -> bool:
    """Whether this is a development stack, whose demo accounts exist: DEBUG, or `make run`'s local settings
    (ATHENA_DEMO_USERS), which keep the debug pages off."""
    return bool(settings.DEBUG or getattr(settings, "ATHENA_DEMO_USERS", False))


def ready_banner(*, port: int) -> list[str]:
    """What bootstrap prints when the stack is ready: the address and, where the demo accounts exist, their
    sign-in names and passwords (README: "the demo users that `make run` prints")."""
    lines = [
        f"\n  Athena KB: http://127.0.0.1:{port}/   (admin: /admin/, API: /api/v1/docs)",
        f"  logs: {log_dir()}/ (web, worker, answerer, beat, postgres, redis .log; each kept under "
        f"{LOG_MAX_BYTES // 2**20} MB with its previous part in .log.1)\n",
    ]
    if demo_users_wanted():
        lines.append("  demo logins (user / password):")
        for name, password, groups, _staff, _su in DEMO_USERS:
            lines.append(f"    {name:<8} / {password:<16} groups: {', '.join(groups)}")
    lines.append("")
    return lines


class Command(BaseCommand):
    help = (
        "Prepare the local stack: start database/broker/worker, migrate, collect static files, create demo users, "
        "load the sample KB (unless ATHENA_LOAD_SAMPLE_KB=false)."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--no-sample", action="store_true", help="do not load the sample knowledge base")

    def handle(self, *args: Any, **options: Any) -> None:
        other = runner_active()
        if other:
            # `make run` while one runs: stop before migrating or queueing the sample documents again
            raise CommandError(runner_refusal(other))
        with contextlib.ExitStack() as held:
            try:
                held.enter_context(launcher_held("bootstrap"))
            except StackError as exc:  # another `make run` is starting, or running, this stack
                raise CommandError(str(exc)) from exc
            self._bootstrap(options)

    def _bootstrap(self, options: dict[str, Any]) -> None:
        started = time.monotonic()
        Stack(components=("postgres", "redis", "worker")).up(echo=self.stdout.write)
        call_command("migrate", interactive=False, verbosity=0)
        self.stdout.write("database migrated")
        stale = embedding_models_stale()
        if stale:
            # an index from before an embedder change (e.g. the former int8 default): dense search would be
            # refused, so its vectors (and the sentence vectors pooled with them) are rebuilt first
            self.stdout.write(f"stored vectors were made by {', '.join(stale)}: re-embedding every chunk")
            call_command("reembed")
        # gunicorn serves pages whose stylesheets and scripts have hashed names from this manifest
        call_command("collectstatic", interactive=False, verbosity=0)
        self.stdout.write(f"static files collected in {settings.STATIC_ROOT}")
        # `make run` (local settings) is development even with debug pages off: its demo accounts exist there
        # and nowhere else
        if not demo_users_ensure(debug=demo_users_wanted()):
            self.stdout.write(
                "demo users skipped (not a development stack): no account is created or has its password reset"
            )
        load_sample = settings.ATHENA_LOAD_SAMPLE_KB and not options["no_sample"]
        if not load_sample:
            self.stdout.write("sample knowledge base not loaded (ATHENA_LOAD_SAMPLE_KB=false or --no-sample)")
            if Document.objects.filter(source_root__startswith=str(SAMPLE_KB.resolve())).exists():
                self.stdout.write(
                    f"  documents loaded from it earlier are still searchable: "
                    f"`python manage.py remove {SAMPLE_KB.relative_to(BASE_DIR)}` removes them"
                )
        elif (SAMPLE_KB / "public").is_dir():
            call_command(
                "ingest",
                str(SAMPLE_KB / "public"),
                "--prefix",
                "public/",
                "--access-tier",
                "internal",
                "--wait",
            )
            if (SAMPLE_KB / "restricted").is_dir():
                call_command(
                    "ingest",
                    str(SAMPLE_KB / "restricted"),
                    "--prefix",
                    "restricted/",
                    "--access-tier",
                    "restricted",
                    "--acl-group",
                    "noc-admins",
                    "--wait",
                )
        self.stdout.write(self.style.SUCCESS(f"ready in {time.monotonic() - started:.1f}s"))
        for line in ready_banner(port=settings.PORT):
            self.stdout.write(line)
