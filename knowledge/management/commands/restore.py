"""`python manage.py restore DIR` — restore a backup made by `manage.py backup` into a fresh var/ folder.

It lives in the knowledge app because it points the documents' stored paths into their new folders and checks
the audit chain: the core layer (athena/backup.py) imports no app above it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.core.management import call_command
from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.db.migrations.loader import MigrationLoader

from athena.backup import BackupError, backup_read, restore_into_fresh, restore_refusals
from athena.stack import StackError, launcher_held
from audit.services import audit_key_mismatches, audit_record, audit_verify
from knowledge.services import document_paths_relocate


class Command(BaseCommand):
    help = (
        "Restore the backup folder DIR (made by `manage.py backup`) into this var/ folder's stack, which must be "
        "fresh (a new clone, or ATHENA_VAR_DIR set to a new folder): the database with its roles' grants, the "
        "uploads and the audit checkpoints; then migrate, and verify the audit chain. Needs the audit keys the "
        "backup was made with (ATHENA_AUDIT_KEY / ATHENA_AUDIT_OLD_KEYS). Then start the stack (`make run`)."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("dir", help="a backup folder written by `manage.py backup`")

    def handle(self, *args: Any, **options: Any) -> None:
        # the launcher lock for the whole restore: a `make run` started meanwhile would start the servers,
        # migrate the empty database and load the sample documents under the restore (the fresh-folder check
        # passed before it began), and one already starting makes the folder not fresh
        try:
            with launcher_held("restore"):
                self._restore(Path(options["dir"]))
        except StackError as exc:
            raise CommandError(str(exc)) from exc

    def _restore(self, source: Path) -> None:
        try:
            manifest = backup_read(source)
            known = set(MigrationLoader(None, ignore_no_migrations=True).disk_migrations)
            problems = restore_refusals(manifest, known_migrations=known)
            problems += audit_key_mismatches(manifest.get("audit", {}).get("keys", {}))
            if problems:
                raise BackupError("nothing was restored: " + "; ".join(problems))
            moves = restore_into_fresh(source, manifest, echo=self.stdout.write)
        except BackupError as exc:
            raise CommandError(str(exc)) from exc
        # this code may be newer than the backup: its migrations run, and the application role's grants with them
        call_command("migrate", interactive=False, verbosity=0)
        moved = document_paths_relocate(moves=[(move.old, move.new) for move in moves])
        for move in moves:
            self.stdout.write(f"stored paths under {move.old} now point under {move.new}")
        self.stdout.write(f"{moved} document path(s) moved")
        report = audit_verify()
        audit_record(
            kind="backup_restored",
            verdict="intact" if report.ok else "broken",
            payload={
                "dir": str(source.resolve()),
                "created_at": manifest["created_at"],
                "chain": report.reason,
            },
        )
        if not report.ok:
            raise CommandError(
                f"restored, but the audit chain does not verify: {report.reason}; "
                + "; ".join(report.problems)
                + " (run `manage.py audit_verify` for the details)"
            )
        self.stdout.write(f"audit: chain intact ({report.checked} events)")
        self.stdout.write("restored; start the stack with `make run` (or `manage.py stack up`)")
