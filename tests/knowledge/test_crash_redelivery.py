"""A file that kills its worker is not redelivered forever: deliveries that never finished are counted, a
batch is split to find the culprit, and the culprit is marked failed (keeping its ACL) instead of retried."""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest

from athena.celery import app
from knowledge.indexing import staged_to_json
from knowledge.models import Chunk, Document, DocumentStatus
from knowledge.services import IngestOptions
from knowledge.tasks import CRASH_LIMIT, crash_key, delivery_start, files_unseal, ingest_files_task
from tests.knowledge.conftest import write_docs

pytestmark = [pytest.mark.integration, pytest.mark.django_db]

DOC = "# Generator test\n\nThe standby generator is run under load every second Tuesday for 30 minutes.\n"


def _crashed_before(task_id: str) -> None:
    for _ in range(CRASH_LIMIT):  # deliveries whose worker died: counted at start, never cleared
        delivery_start(task_id)


@pytest.mark.slow
def test_a_file_that_crashed_the_worker_twice_is_marked_failed(tmp_path: Path, redis_client) -> None:  # type: ignore[no-untyped-def]
    root = write_docs(tmp_path / "kb", {"generator.md": DOC})
    task_id = f"crash-{uuid.uuid4()}"
    _crashed_before(task_id)
    options = IngestOptions(access_tier="restricted", acl_groups=("facilities",)).as_dict()
    ingest_files_task.apply(
        args=[None, str(root), [["generator.md", str(root / "generator.md")]], options], task_id=task_id
    )
    document = Document.objects.get(source="generator.md")
    assert document.status == DocumentStatus.FAILED and "died" in document.error
    assert document.access_tier == "restricted"
    assert list(document.allowed_groups.values_list("name", flat=True)) == ["facilities"]
    assert not Chunk.objects.filter(document=document).exists()
    assert not redis_client.exists(crash_key(task_id))


@pytest.mark.slow
def test_a_crashing_batch_is_split_into_one_task_per_file(tmp_path: Path) -> None:
    root = write_docs(tmp_path / "kb", {"a.md": DOC, "b.md": DOC.replace("Tuesday", "Friday")})
    task_id = f"crash-{uuid.uuid4()}"
    _crashed_before(task_id)
    files = [["a.md", str(root / "a.md")], ["b.md", str(root / "b.md")]]
    app.conf.task_always_eager = True  # the split tasks run here, as a worker would run them
    try:
        ingest_files_task.apply(args=[None, str(root), files, IngestOptions().as_dict()], task_id=task_id)
    finally:
        app.conf.task_always_eager = False
    # each file on its own task succeeded: only a file that crashes by itself ends up failed
    assert set(Document.objects.values_list("source", "status")) == {("a.md", "indexed"), ("b.md", "indexed")}


@pytest.mark.slow
def test_a_task_that_finishes_leaves_no_count(tmp_path: Path, redis_client) -> None:  # type: ignore[no-untyped-def]
    root = write_docs(tmp_path / "kb", {"generator.md": DOC})
    task_id = f"ok-{uuid.uuid4()}"
    app.conf.task_always_eager = True
    try:
        ingest_files_task.apply(
            args=[None, str(root), [["generator.md", str(root / "generator.md")]], IngestOptions().as_dict()],
            task_id=task_id,
        )
    finally:
        app.conf.task_always_eager = False
    assert not redis_client.exists(crash_key(task_id))
    assert Document.objects.get(source="generator.md").status == DocumentStatus.INDEXED


def _batch(root: Path, *names: str) -> list[list[str]]:
    return [[name, str(root / name)] for name in names]


def test_a_crashed_batch_redelivered_while_being_split_queues_each_file_once(
    tmp_path: Path, monkeypatch
) -> None:  # type: ignore[no-untyped-def]
    root = write_docs(tmp_path / "kb", {name: DOC for name in ("a.md", "b.md", "c.md")})
    task_id = f"crash-{uuid.uuid4()}"
    queued: list[str] = []

    class WorkerKilled(Exception):
        pass

    def queue_until_killed(args, *rest, **kwargs):  # type: ignore[no-untyped-def]
        if len(queued) == 1 and not killed:
            killed.append(True)
            raise WorkerKilled  # the worker dies while queueing the second part
        queued.append(files_unseal(args[2])[0][0])

    killed: list[bool] = []
    monkeypatch.setattr(ingest_files_task, "apply_async", queue_until_killed)
    batch = [None, str(root), _batch(root, "a.md", "b.md", "c.md"), IngestOptions().as_dict()]
    _crashed_before(task_id)
    with pytest.raises(WorkerKilled):
        ingest_files_task.apply(args=batch, task_id=task_id, throw=True)
    for _ in range(2):  # redelivered (its count survives a worker's death), and again
        _crashed_before(task_id)
        ingest_files_task.apply(args=batch, task_id=task_id, throw=True)
    assert queued == ["a.md", "b.md", "c.md"]


def test_a_crashed_embed_batch_redelivered_after_its_split_is_not_split_again(  # type: ignore[no-untyped-def]
    tmp_path: Path, monkeypatch
) -> None:
    from knowledge.services import files_stage
    from knowledge.tasks import embed_index_task, staged_unseal

    root = write_docs(tmp_path / "kb", {"a.md": DOC, "b.md": DOC.replace("Tuesday", "Friday")})
    _, staged = files_stage(
        root=str(root), files=[tuple(f) for f in _batch(root, "a.md", "b.md")], options=IngestOptions()
    )
    queued: list[tuple[str, dict]] = []
    monkeypatch.setattr(
        embed_index_task,
        "delay",
        lambda run_id, items, counts: queued.append((staged_unseal(items)[0]["source"], counts)),
    )
    task_id = f"crash-{uuid.uuid4()}"
    batch = [None, [staged_to_json(s) for s in staged], {"new": 2}]
    for _ in range(2):  # the worker died after the split, before the task was acknowledged: redelivered
        _crashed_before(task_id)
        embed_index_task.apply(args=batch, task_id=task_id, throw=True)
    assert queued == [("a.md", {"new": 1}), ("b.md", {"new": 1})]
