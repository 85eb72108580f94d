"""How an ingest batch's embedding is cut into tasks. A worker process that embeds also answers questions (the
stack's worker, the compose file's model worker); it takes a waiting question only once the task it runs has
ended, so an embed task holds about one model batch of chunks, not the whole ingest batch's."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from celery.signals import task_prerun

from knowledge.models import Document, IngestRun
from knowledge.services import IngestOptions
from knowledge.tasks import EMBED_TASK_CHUNKS, chunk_groups, folder_ingest_enqueue, staged_unseal
from tests.knowledge.conftest import write_docs

pytestmark = [pytest.mark.integration, pytest.mark.django_db]


def test_chunk_groups_keep_the_order_and_the_limit():
    assert chunk_groups([10, 10, 10, 10], 32) == [[0, 1, 2], [3]]
    assert chunk_groups([40, 5, 30, 2], 32) == [[0], [1], [2, 3]]
    assert chunk_groups([], 32) == []


def _runbook(number: int) -> str:
    sections = []
    for section in range(8):
        lines = " ".join(f"Check relay node {k} of site {number} in part {section}." for k in range(6))
        sections.append(f"## Section {section} of runbook {number}\n\n{lines}\n")
    return f"# Relay runbook {number}\n\n" + "\n".join(sections)


@pytest.mark.slow
def test_an_ingest_batch_is_embedded_in_tasks_of_about_one_model_batch(tmp_path: Path, eager: None) -> None:
    """Six documents of eight sections each in one ingest batch (48 chunks or more): embedded by tasks of at
    most EMBED_TASK_CHUNKS chunks (or one document each), every document indexed and counted once."""
    root = write_docs(tmp_path / "kb", {f"relay-{i}.md": _runbook(i) for i in range(6)})
    embedded: list[tuple[int, int]] = []  # (documents, chunks) per embed task

    def record(sender: Any = None, args: Any = None, **_: Any) -> None:
        if sender is not None and sender.name == "knowledge.tasks.embed_index_task":
            staged = staged_unseal(args[1])
            embedded.append((len(staged), sum(len(item["chunks"]) for item in staged)))

    task_prerun.connect(record, weak=False)
    try:
        run_id = folder_ingest_enqueue(root=root, options=IngestOptions(), batch_size=16)
    finally:
        task_prerun.disconnect(record)
    run = IngestRun.objects.get(pk=run_id)
    assert run.status == "finished", run.counts
    assert run.counts.get("new") == 6 and not run.counts.get("failed"), run.counts
    assert Document.objects.filter(status="indexed").count() == 6
    assert sum(documents for documents, _ in embedded) == 6
    assert sum(chunks for _, chunks in embedded) >= 48
    assert all(chunks <= EMBED_TASK_CHUNKS or documents == 1 for documents, chunks in embedded), embedded
