"""`manage.py migrate` runs as the owner role: the application's own role may not change the schema.

Django's command with one change: `--database` defaults to the `owner` alias when settings define one
(athena/settings/base.py), so `manage.py migrate` and `bootstrap` need no extra flag.
"""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.core.management.base import CommandParser
from django.core.management.commands.migrate import Command as DjangoMigrate
from django.db import connections


class Command(DjangoMigrate):
    def create_parser(self, prog_name: str, subcommand: str, **kwargs: Any) -> CommandParser:
        # `--database` is declared again below, replacing Django's
        return super().create_parser(prog_name, subcommand, conflict_handler="resolve", **kwargs)

    def add_arguments(self, parser: CommandParser) -> None:
        super().add_arguments(parser)
        database = "owner" if "owner" in settings.DATABASES else "default"
        # Django's help says the "default" database, which this command does not take
        parser.add_argument(
            "--database",
            default=database,
            choices=tuple(connections),
            help=f'Nominates a database to synchronize. Defaults to the "{database}" database'
            + (
                " (the owner role: the application's role may not change the schema)."
                if database == "owner"
                else "."
            ),
        )
