"""`python manage.py remove PATH` — tombstone every document ingested from a folder (and the folders beneath it),
so that someone moving from the demo knowledge base to their own documents can clear it. Audited."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandParser

from knowledge.services import folder_remove


class Command(BaseCommand):
    help = (
        "Remove from the knowledge base (tombstone) every document ingested from PATH or a folder beneath it; "
        "the removal is recorded in the audit log."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("path", help="the folder given to `manage.py ingest` (or a parent of it)")
        parser.add_argument(
            "--user", default="", help="who asked for the removal (recorded in the audit log)"
        )

    def handle(self, *args: Any, **options: Any) -> None:
        root = Path(options["path"])
        # the folder itself may be gone already: its documents are still in the index and can be removed
        sources = folder_remove(root=root, actor=options["user"] or None)
        for source in sources:
            self.stdout.write(f"removed: {source}")
        self.stdout.write(
            self.style.SUCCESS(f"{len(sources)} document(s) ingested from {root.resolve()} removed")
            if sources
            else f"no documents were ingested from {root.resolve()}"
        )
