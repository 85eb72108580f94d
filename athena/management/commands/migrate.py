"""`manage.py migrate` runs as the owner role: the application's own role may not change the schema.

Django's command with two changes: `--database` defaults to the `owner` alias when settings define one
(athena/settings/base.py), so `manage.py migrate` and `bootstrap` need no extra flag; and a database that a newer
release migrated is refused before anything is applied (a downgrade: older code on a newer schema writes rows it
does not take, e.g. a NOT NULL column added since, and the old `make run` then waited for ever on failing ingests).
"""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.core.management.base import CommandError, CommandParser
from django.core.management.commands.migrate import Command as DjangoMigrate
from django.db import connections
from django.db.backends.base.base import BaseDatabaseWrapper
from django.db.migrations.loader import MigrationLoader


def _number(name: str) -> int | None:
    prefix = name.split("_", 1)[0]
    return int(prefix) if prefix.isdigit() else None


def migrations_from_newer_release(connection: BaseDatabaseWrapper) -> list[str]:
    """The migrations recorded as applied in the database that this code lacks and that are numbered above every
    migration of their app that it has ("app.name", sorted): the database was migrated by a newer release.

    Applied rows of migrations this code lacks but numbered lower are left alone: Django keeps the rows of
    migrations that a squashed one replaced after their files are deleted. An unnumbered name cannot be placed,
    and is left alone too. Apps this code does not install are not looked at."""
    loader = MigrationLoader(connection, ignore_no_migrations=True)
    newest: dict[str, int] = {}
    for app, name in loader.disk_migrations:
        number = _number(name)
        if number is not None:
            newest[app] = max(newest.get(app, number), number)
    newer = []
    for app, name in loader.applied_migrations or {}:
        number = _number(name)
        # an app this code has no numbered migration of compares its number with itself: not newer
        if (
            (app, name) not in loader.disk_migrations
            and number is not None
            and number > newest.get(app, number)
        ):
            newer.append(f"{app}.{name}")
    return sorted(newer)


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

    def handle(self, *args: Any, **options: Any) -> None:
        newer = migrations_from_newer_release(connections[options["database"]])
        if newer:
            raise CommandError(
                f"this database was migrated by a newer release of Athena KB: this code lacks the migrations "
                f"{', '.join(newer)}. Nothing was changed. Run the release that migrated it (or a later one), or "
                "restore the backup made before the upgrade to go back to this release."
            )
        super().handle(*args, **options)
