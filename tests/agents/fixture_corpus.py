"""A small corpus of the test's own, ingested for a module: what the answering tests that need real documents share."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from knowledge.services import IngestOptions, files_ingest, folder_scan


@contextmanager
def corpus_ingested(folder: Path, django_db_blocker: Any) -> Iterator[None]:
    """Every file under `folder` ingested and committed to the test database (retrieval reads it from its own
    connections) for the duration; the database is flushed afterwards, since other modules expect it empty."""
    with django_db_blocker.unblock():
        summary = files_ingest(root=str(folder), files=list(folder_scan(folder)), options=IngestOptions())
        assert summary.failed == 0, summary.errors
    try:
        yield
    finally:
        with django_db_blocker.unblock():
            from django.core.management import call_command

            call_command("flush", interactive=False, verbosity=0)
