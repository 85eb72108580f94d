"""`python manage.py backup DIR` — back the embedded stack up into a new folder (athena/backup.py), running or not.

It lives in the knowledge app, as bootstrap does, because it records the audit keys' fingerprints and audits
itself: the core layer imports no app above it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from athena.backup import BackupError, backup_create
from audit.services import audit_key_fingerprints, audit_record


class Command(BaseCommand):
    help = (
        "Back the knowledge base up into the new folder DIR: the database (one consistent snapshot, taken while "
        "the stack runs), the private uploads and the audit checkpoints, with a manifest. Secrets are not in it: "
        "keep ATHENA_SECRET_KEY and ATHENA_AUDIT_KEY elsewhere. Restore with `manage.py restore DIR`."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("dir", help="the folder to create (it must not exist, or be empty)")

    def handle(self, *args: Any, **options: Any) -> None:
        target = Path(options["dir"])
        try:
            manifest = backup_create(
                target, extra={"audit": {"keys": audit_key_fingerprints()}}, echo=self.stdout.write
            )
        except BackupError as exc:
            raise CommandError(str(exc)) from exc
        tables = manifest["database"]["tables"]
        size = sum(entry["size"] for entry in manifest["files"].values())
        self.stdout.write(
            f"{len(tables)} tables ({sum(tables.values())} rows), {len(manifest['files'])} files, "
            f"{size / 2**20:.1f} MB; the secrets are not in it (ATHENA_SECRET_KEY, ATHENA_AUDIT_KEY)"
        )
        # after the snapshot, so not in this backup: the record of who took a copy of every document
        audit_record(
            kind="backup_created", payload={"dir": str(target.resolve()), "files": len(manifest["files"])}
        )
