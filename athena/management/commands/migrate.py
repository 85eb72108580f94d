"""`manage.py migrate` runs as the owner role: the application's own role may not change the schema.

Django's command with one change: `--database` defaults to the `owner` alias when settings define one
(athena/settings/base.py), so `manage.py migrate` and `bootstrap` need no extra flag.
"""

from __future__ import annotations

from django.conf import settings
from django.core.management.base import CommandParser
from django.core.management.commands.migrate import Command as DjangoMigrate


class Command(DjangoMigrate):
    def add_arguments(self, parser: CommandParser) -> None:
        super().add_arguments(parser)
        parser.set_defaults(database="owner" if "owner" in settings.DATABASES else "default")
