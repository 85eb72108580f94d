"""`python manage.py bm25_repack [--if-stale FRACTION]` — rebuild the BM25 posting blocks from the postings table.

Ingestion keeps the blocks complete as it goes; what it leaves behind are postings of chunks deleted since
(changed or removed documents), which retrieval skips but still reads. A repack drops them and packs each term
into one block. It holds the statistics lock, so ingestion waits for it; searches go on meanwhile."""

from __future__ import annotations

import time
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from knowledge.indexing import postings_repack_if_stale


class Command(BaseCommand):
    help = "Rebuild the BM25 posting blocks from the postings table (drops postings of deleted chunks)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--if-stale",
            type=float,
            default=0.0,
            metavar="FRACTION",
            help="repack only when at least this share of the packed postings is stale (0..1; default: always)",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        threshold = options["if_stale"]
        if not 0.0 <= threshold <= 1.0:
            raise CommandError(f"--if-stale must be between 0 and 1, got {threshold}")
        started = time.perf_counter()
        stale, blocks = postings_repack_if_stale(threshold)
        if blocks is None:
            self.stdout.write(
                f"{stale:.1%} of the packed postings are stale (< {threshold:.0%}): nothing to do"
            )
            return
        self.stdout.write(
            f"repacked {blocks} terms in {time.perf_counter() - started:.1f} s ({stale:.1%} of the postings were stale)"
        )
