"""Ingestion that fails midway loses, strands or double-counts nothing: a document whose embedding or indexing
fails is marked failed and its run finishes; a batch retried after a database error is indexed and counted
once; one missing source folder does not stop the nightly sync; an embed batch that crashed its worker is split;
an expired upload's file is deleted even after a failed attempt; a removal wins over a batch already queued."""

from __future__ import annotations

import logging
import os
import uuid
from collections.abc import Iterator, Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np
import psycopg
import pytest
from celery.signals import task_retry
from django.core.files.uploadedfile import SimpleUploadedFile
from django.db import connection
from django.test import override_settings
from django.utils import timezone

from athena import throttling
from audit.models import AuditEvent
from knowledge.embedders import MiniLMEmbedder
from knowledge.indexing import staged_from_json, staged_to_json
from knowledge.models import Chunk, Document, DocumentStatus, IngestRun
from knowledge.services import (
    IngestOptions,
    IngestSummary,
    document_reingest,
    document_tombstone,
    files_ingest,
    files_stage,
    folder_remove,
    ingest_run_add,
    ingest_run_lost,
    ingest_run_start,
    staged_index,
    uploads_expire,
)
from knowledge.tasks import (
    CRASH_LIMIT,
    delivery_start,
    embed_index_task,
    folder_ingest_enqueue,
    ingest_files_task,
    sync_source_folders_task,
)
from tests.api import client_for, make_user
from tests.knowledge.conftest import write_docs

pytestmark = [pytest.mark.integration]

DOC = "# {name}\n\nThe standby generator {name} is run under load every second Tuesday for 30 minutes.\n"


class FailingEmbedder:
    """An embedder whose every call fails, as one whose GPU ran out of memory does."""

    name = "failing-embedder"

    def __init__(self, *, dimension: int = 384, max_tokens: int = 256, **options: Any) -> None:
        self.dimension = dimension
        self.max_tokens = max_tokens

    def warm_up(self) -> None:
        return None

    def embed_passages(self, texts: Sequence[str], *, batch_size: int = 32) -> np.ndarray:
        raise RuntimeError("CUDA out of memory")

    def embed_query(self, text: str) -> np.ndarray:
        raise RuntimeError("CUDA out of memory")


class OneAtATimeEmbedder(MiniLMEmbedder):
    """The real model, on a device with memory for one passage at a time: a batch of more fails."""

    def embed_passages(self, texts: Sequence[str], *, batch_size: int = 32) -> np.ndarray:
        if len(texts) > 1:
            raise RuntimeError("CUDA out of memory")
        return super().embed_passages(texts, batch_size=batch_size)

    def embed_passages_pooled(self, texts: Sequence[str], spans: Any) -> Any:
        if len(texts) > 1:
            raise RuntimeError("CUDA out of memory")
        return super().embed_passages_pooled(texts, spans)


def _embedder(backend: str) -> Any:
    from django.conf import settings

    return override_settings(ATHENA_EMBEDDER={**settings.ATHENA_EMBEDDER, "BACKEND": backend})


FAILING = "tests.knowledge.test_ingest_failures.FailingEmbedder"


def _files(root: Path, *names: str) -> list[tuple[str, str]]:
    return [(name, str(root / name)) for name in names]


# --- a document whose embedding or indexing fails -------------------------------------------------------------


@pytest.mark.django_db
def test_a_failing_embedder_marks_the_batch_failed_and_the_run_finishes(tmp_path: Path, eager: None) -> None:
    root = write_docs(tmp_path / "kb", {name: DOC.format(name=name) for name in ("a.md", "b.md")})
    with _embedder(FAILING):
        run_id = folder_ingest_enqueue(root=root, options=IngestOptions())
    run = IngestRun.objects.get(pk=run_id)
    assert run.status == "finished"
    assert (run.counts["new"], run.counts["changed"], run.counts["failed"]) == (0, 0, 2)
    assert run.counts["errors"] == {
        "a.md": "embedding failed: CUDA out of memory",
        "b.md": "embedding failed: CUDA out of memory",
    }
    documents = Document.objects.order_by("source")
    assert [(d.source, d.status) for d in documents] == [("a.md", "failed"), ("b.md", "failed")]
    assert all(d.error == "embedding failed: CUDA out of memory" for d in documents)


@pytest.mark.django_db
def test_an_upload_sent_through_celery_ends_failed_when_embedding_fails(  # type: ignore[no-untyped-def]
    tmp_path: Path, settings, eager: None, django_capture_on_commit_callbacks
) -> None:
    settings.MEDIA_ROOT = tmp_path / "media"
    settings.ATHENA_REALTIME_VIA_CELERY = True
    user = make_user("uploader", "employees")
    throttling.user_counters_clear(user)
    upload = SimpleUploadedFile("mine.md", DOC.format(name="mine").encode(), content_type="text/markdown")
    try:
        with _embedder(FAILING), django_capture_on_commit_callbacks(execute=True):
            response = client_for(user).post("/api/v1/documents/upload", {"file": upload}, format="multipart")
    finally:
        throttling.user_counters_clear(user)
    assert response.status_code == 201, response.content
    document = Document.objects.get(source=f"uploads/{user.pk}/mine.md")
    assert document.status == DocumentStatus.FAILED  # not pending for ever
    assert document.error == "embedding failed: CUDA out of memory"
    assert document.owner_id == user.pk and document.access_tier == "confidential"


@pytest.mark.slow
@pytest.mark.django_db
def test_a_batch_too_big_to_embed_at_once_is_embedded_document_by_document(tmp_path: Path) -> None:
    root = write_docs(tmp_path / "kb", {name: DOC.format(name=name) for name in ("a.md", "b.md")})
    with _embedder("tests.knowledge.test_ingest_failures.OneAtATimeEmbedder"):
        summary = files_ingest(root=str(root), files=_files(root, "a.md", "b.md"), options=IngestOptions())
    assert (summary.new, summary.failed) == (2, 0), summary.errors
    assert set(Document.objects.values_list("source", "status")) == {("a.md", "indexed"), ("b.md", "indexed")}


@pytest.mark.slow
@pytest.mark.django_db
def test_a_changed_document_that_fails_to_embed_keeps_its_indexed_version(tmp_path: Path) -> None:
    root = write_docs(tmp_path / "kb", {"a.md": DOC.format(name="a")})
    files_ingest(root=str(root), files=_files(root, "a.md"), options=IngestOptions())
    chunks = list(Chunk.objects.filter(document__source="a.md").values_list("id", flat=True))
    (root / "a.md").write_text(DOC.format(name="a").replace("Tuesday", "Friday"))
    with _embedder(FAILING):
        summary = files_ingest(root=str(root), files=_files(root, "a.md"), options=IngestOptions())
    assert (summary.new, summary.changed, summary.failed) == (0, 0, 1)
    assert summary.errors == {"a.md": "embedding failed: CUDA out of memory"}
    document = Document.objects.get(source="a.md")
    assert (document.status, document.version) == (DocumentStatus.INDEXED, 1)  # still served
    assert document.error == "embedding failed: CUDA out of memory"
    assert list(Chunk.objects.filter(document=document, active=True).values_list("id", flat=True)) == chunks


@pytest.mark.slow
@pytest.mark.django_db
def test_a_document_that_cannot_be_indexed_does_not_stop_its_batch(tmp_path: Path, eager: None) -> None:
    deep = "/".join(["d" * 200] * 5) + "/deep.md"  # a source id longer than the table takes (1000)
    root = write_docs(tmp_path / "kb", {name: DOC.format(name=name[-7:]) for name in ("a.md", deep, "c.md")})
    run_id = folder_ingest_enqueue(root=root, options=IngestOptions())
    run = IngestRun.objects.get(pk=run_id)
    assert run.status == "finished"
    assert (run.counts["new"], run.counts["failed"]) == (2, 1)
    assert run.counts["errors"][deep].startswith("indexing failed: ")
    assert set(Document.objects.values_list("source", "status")) == {("a.md", "indexed"), ("c.md", "indexed")}


# --- a batch retried after a database error is indexed and counted once --------------------------------------


@pytest.fixture()
def lock_holder() -> Iterator[psycopg.Connection]:
    """A second database session, holding locks as another worker or autovacuum would."""
    params = connection.settings_dict
    holder = psycopg.connect(
        dbname=params["NAME"],
        user=params["USER"],
        host=params["HOST"],
        port=params["PORT"] or None,
        password=params.get("PASSWORD") or None,
    )
    yield holder
    holder.rollback()
    holder.close()


@pytest.fixture()
def short_lock_timeout() -> Iterator[None]:
    """A lock this session waits for past 200 ms fails with an OperationalError (lock_timeout)."""
    with connection.cursor() as cursor:
        cursor.execute("SET lock_timeout = '200ms'")
    try:
        yield
    finally:
        with connection.cursor() as cursor:
            cursor.execute("RESET lock_timeout")


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_a_failed_statistics_refresh_neither_fails_nor_recounts_the_batch(  # type: ignore[no-untyped-def]
    tmp_path: Path, eager: None, lock_holder, short_lock_timeout, caplog
) -> None:
    root = write_docs(tmp_path / "kb", {name: DOC.format(name=name) for name in ("a.md", "b.md")})
    with lock_holder.cursor() as cursor:  # the lock a VACUUM or ANALYZE of the table takes
        cursor.execute("LOCK TABLE knowledge_termstat IN SHARE UPDATE EXCLUSIVE MODE")
    with caplog.at_level(logging.WARNING, logger="knowledge.services"):
        run_id = folder_ingest_enqueue(root=root, options=IngestOptions())
    run = IngestRun.objects.get(pk=run_id)
    assert run.status == "finished"
    assert (run.counts["new"], run.counts["failed"]) == (2, 0)
    assert set(Document.objects.values_list("source", "version")) == {("a.md", 1), ("b.md", 1)}
    assert any("refreshing the index statistics" in r.getMessage() for r in caplog.records)


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_an_ingest_batch_retried_after_its_merge_failed_is_embedded_once(  # type: ignore[no-untyped-def]
    tmp_path: Path, eager: None, lock_holder, short_lock_timeout
) -> None:
    root = write_docs(tmp_path / "kb", {name: DOC.format(name=name) for name in ("a.md", "b.md")})
    options = IngestOptions()
    run, files = ingest_run_start(root=root, options=options)
    with lock_holder.cursor() as cursor:  # the run's row, locked by another batch's merge
        cursor.execute("SELECT id FROM knowledge_ingestrun WHERE id = %s FOR UPDATE", [run.pk])
    retries = []

    def release(**kwargs: Any) -> None:  # the first retry: the other batch has committed
        retries.append(kwargs["sender"].name)
        lock_holder.commit()

    task_retry.connect(release)
    try:
        ingest_files_task.apply(args=[run.pk, run.root, [list(f) for f in files], options.as_dict()])
    finally:
        task_retry.disconnect(release)
    assert retries == ["knowledge.tasks.ingest_files_task"]
    run.refresh_from_db()
    assert run.status == "finished"
    assert (run.counts["new"], run.counts["failed"]) == (2, 0)
    assert set(Document.objects.values_list("source", "version")) == {("a.md", 1), ("b.md", 1)}


# --- the nightly sync ------------------------------------------------------------------------------------------


@pytest.mark.django_db
def test_a_missing_folder_does_not_stop_the_nightly_sync_of_the_others(tmp_path: Path) -> None:
    missing = tmp_path / "share-not-mounted"
    present = tmp_path / "present"  # empty: its run is created and nothing is queued
    present.mkdir()
    entries = [f"{missing}|tier=internal", f"{tmp_path}|colour=blue", f"{present}|tier=internal"]
    with override_settings(ATHENA_SOURCE_FOLDERS=entries):
        run_ids = sync_source_folders_task()
    assert [IngestRun.objects.get(pk=pk).root for pk in run_ids] == [str(present.resolve())]
    events = AuditEvent.objects.filter(kind="folder_sync_failed").order_by("id")
    assert [(e.verdict, e.payload["folder"]) for e in events] == [
        ("error", str(missing)),
        ("error", str(tmp_path)),
    ]
    assert "is not a directory" in events[0].payload["error"]
    assert "colour=blue" in events[1].payload["error"]


# --- an embed batch that crashed its worker ---------------------------------------------------------------------


def _crashed_before(task_id: str) -> None:
    for _ in range(CRASH_LIMIT):  # deliveries whose worker died: counted at start, never cleared
        delivery_start(task_id)


@pytest.mark.slow
@pytest.mark.django_db
def test_an_embed_batch_that_crashed_its_worker_is_split_into_one_task_per_document(
    tmp_path: Path, eager: None
) -> None:
    root = write_docs(tmp_path / "kb", {"old.md": DOC.format(name="old")})
    files_ingest(root=str(root), files=_files(root, "old.md"), options=IngestOptions())
    write_docs(
        root, {"old.md": DOC.format(name="old").replace("Tuesday", "Friday"), "new.md": DOC.format(name="n")}
    )
    run, files = ingest_run_start(root=root, options=IngestOptions())
    summary, staged = files_stage(root=run.root, files=files, options=IngestOptions())
    assert (summary.new, summary.changed) == (1, 1)
    task_id = f"crash-{uuid.uuid4()}"
    _crashed_before(task_id)
    embed_index_task.apply(
        args=[run.pk, [staged_to_json(s) for s in staged], {"new": 1, "changed": 1}], task_id=task_id
    )
    # each document on its own task was indexed: only a document that crashes by itself ends up failed
    assert set(Document.objects.values_list("source", "status", "version")) == {
        ("old.md", "indexed", 2),
        ("new.md", "indexed", 1),
    }
    run.refresh_from_db()
    assert run.status == "finished"
    assert (run.counts["new"], run.counts["changed"], run.counts["failed"]) == (1, 1, 0)


@pytest.mark.django_db
def test_a_single_document_that_crashed_the_embed_worker_is_marked_failed_and_named(tmp_path: Path) -> None:
    root = write_docs(tmp_path / "kb", {"poison.md": DOC.format(name="poison")})
    options = IngestOptions(access_tier="restricted", acl_groups=("facilities",))
    run, files = ingest_run_start(root=root, options=options)
    _, staged = files_stage(root=run.root, files=files, options=options)
    task_id = f"crash-{uuid.uuid4()}"
    _crashed_before(task_id)
    embed_index_task.apply(args=[run.pk, [staged_to_json(s) for s in staged], {"new": 1}], task_id=task_id)
    document = Document.objects.get(source="poison.md")
    assert document.status == DocumentStatus.FAILED and "died" in document.error
    assert list(document.allowed_groups.values_list("name", flat=True)) == ["facilities"]
    run.refresh_from_db()
    assert run.status == "finished"
    assert (run.counts["new"], run.counts["failed"]) == (0, 1)
    assert run.counts["errors"] == {"poison.md": "crashed the worker"}


# --- expired uploads -------------------------------------------------------------------------------------------


def _upload(root: Path, owner_id: int, name: str, *, expired: bool = True) -> tuple[Document, Path]:
    source = f"uploads/{owner_id}/{name}"
    path = root / source
    write_docs(root, {source: DOC.format(name=name)})
    moment = timezone.now() + (timedelta(hours=-1) if expired else timedelta(hours=1))
    options = IngestOptions(owner_id=owner_id, access_tier="confidential", expires_at=moment)
    summary = files_ingest(root=str(root), files=[(source, str(path))], options=options)
    assert summary.failed == 0, summary.errors
    return Document.objects.get(source=source), path


@pytest.mark.slow
@pytest.mark.django_db
def test_an_expired_upload_whose_file_is_left_has_it_deleted_next_time(tmp_path: Path, settings) -> None:  # type: ignore[no-untyped-def]
    settings.MEDIA_ROOT = tmp_path / "media"
    media = Path(settings.MEDIA_ROOT).resolve()
    user = make_user("owner", "employees")
    document, path = _upload(media, user.pk, "left.md")
    document_tombstone(document=document)  # the expiry committed, and its worker died before the unlink
    assert path.exists()
    assert uploads_expire() == 0  # expired already: not counted or audited again
    assert not path.exists()
    assert not AuditEvent.objects.filter(kind="upload_expired").exists()


@pytest.mark.slow
@pytest.mark.django_db
def test_one_upload_whose_file_cannot_be_deleted_does_not_stop_the_others(tmp_path: Path, settings) -> None:  # type: ignore[no-untyped-def]
    settings.MEDIA_ROOT = tmp_path / "media"
    media = Path(settings.MEDIA_ROOT).resolve()
    user = make_user("owner", "employees")
    _, stuck = _upload(media, user.pk, "a-stuck.md")
    _, other = _upload(media, user.pk, "b-other.md")
    stuck.unlink()
    stuck.mkdir()  # a directory where the file was: unlink fails (IsADirectoryError)
    assert uploads_expire() == 2
    assert not other.exists()
    assert set(Document.objects.values_list("status", flat=True)) == {DocumentStatus.TOMBSTONED}
    assert AuditEvent.objects.filter(kind="upload_expired").count() == 2
    stuck.rmdir()
    stuck.write_text("the file left behind")
    os.utime(stuck, (0, 0))  # written long before the tombstone
    assert uploads_expire() == 0
    assert not stuck.exists()


@pytest.mark.slow
@pytest.mark.django_db
def test_a_file_written_after_its_upload_expired_is_kept(tmp_path: Path, settings) -> None:  # type: ignore[no-untyped-def]
    settings.MEDIA_ROOT = tmp_path / "media"
    media = Path(settings.MEDIA_ROOT).resolve()
    user = make_user("owner", "employees")
    document, path = _upload(media, user.pk, "again.md")
    document_tombstone(document=document)
    document.refresh_from_db()
    assert document.tombstoned_at is not None
    later = (document.tombstoned_at + timedelta(seconds=5)).timestamp()
    os.utime(path, (later, later))  # the same name uploaded again, its ingest not yet done
    uploads_expire()
    assert path.exists()


# --- a removal wins over a batch already queued --------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.django_db
def test_a_document_removed_while_its_ingest_was_queued_stays_removed(tmp_path: Path, eager: None) -> None:
    root = write_docs(tmp_path / "kb", {"a.md": DOC.format(name="a")})
    files_ingest(root=str(root), files=_files(root, "a.md"), options=IngestOptions())
    (root / "a.md").write_text(DOC.format(name="a").replace("Tuesday", "Friday"))
    run, files = ingest_run_start(root=root, options=IngestOptions())  # the nightly sync started
    assert folder_remove(root=root, actor="admin") == ["a.md"]  # `manage.py remove` before its batch ran
    ingest_files_task.apply(args=[run.pk, run.root, [list(f) for f in files], IngestOptions().as_dict()])
    document = Document.objects.get(source="a.md")
    assert document.status == DocumentStatus.TOMBSTONED and document.tombstoned_at is not None
    assert (document.version, document.error) == (1, "")
    assert not Chunk.objects.filter(document=document).exists()
    run.refresh_from_db()
    assert run.status == "finished"
    assert (run.counts["new"], run.counts["changed"], run.counts["failed"]) == (0, 0, 1)
    assert "removed while its ingest was queued" in run.counts["errors"]["a.md"]


@pytest.mark.slow
@pytest.mark.django_db
def test_a_removal_on_a_host_whose_clock_is_behind_still_wins_over_the_batch_queued_before_it(
    tmp_path: Path, eager: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The nightly sync starts on one host; `manage.py remove` runs minutes later on another whose clock is five
    # minutes behind. Compared on each host's own clock, the removal came first and the queued batch brought the
    # removed document back. Both moments are taken from the database's clock.
    root = write_docs(tmp_path / "kb", {"a.md": DOC.format(name="a")})
    files_ingest(root=str(root), files=_files(root, "a.md"), options=IngestOptions())
    (root / "a.md").write_text(DOC.format(name="a").replace("Tuesday", "Friday"))
    run, files = ingest_run_start(root=root, options=IngestOptions())
    with monkeypatch.context() as lagging:
        real_now = timezone.now
        lagging.setattr(timezone, "now", lambda: real_now() - timedelta(minutes=5))
        assert folder_remove(root=root, actor="admin") == ["a.md"]
    ingest_files_task.apply(args=[run.pk, run.root, [list(f) for f in files], IngestOptions().as_dict()])
    document = Document.objects.get(source="a.md")
    assert document.status == DocumentStatus.TOMBSTONED and document.version == 1
    assert not Chunk.objects.filter(document=document).exists()


@pytest.mark.django_db
def test_a_run_finished_or_lost_on_a_host_whose_clock_is_behind_does_not_end_before_it_started(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # a run starts on the database's clock (its batches' request time); its end, written by the worker of its
    # last batch or by the `ingest --wait` that found it lost, must be on the same clock
    root = write_docs(tmp_path / "kb", {"a.md": DOC.format(name="a"), "b.md": DOC.format(name="b")})
    finished, _ = ingest_run_start(root=root, options=IngestOptions())
    lost, _ = ingest_run_start(root=root, options=IngestOptions())
    with monkeypatch.context() as lagging:
        real_now = timezone.now
        lagging.setattr(timezone, "now", lambda: real_now() - timedelta(minutes=5))
        ingest_run_add(run_id=finished.pk, summary=IngestSummary(unchanged=2))
        ingest_run_lost(run_id=lost.pk)
    for run in (finished, lost):
        run.refresh_from_db()
        assert run.status in ("finished", "lost") and run.finished_at is not None
        assert run.finished_at >= run.started_at, (run.status, run.started_at, run.finished_at)


@pytest.mark.slow
@pytest.mark.django_db
def test_a_staged_version_older_than_the_removal_is_not_swapped_in(tmp_path: Path) -> None:
    root = write_docs(tmp_path / "kb", {"a.md": DOC.format(name="a")})
    files_ingest(root=str(root), files=_files(root, "a.md"), options=IngestOptions())
    summary, staged = files_stage(
        root=str(root), files=_files(root, "a.md"), options=IngestOptions(), force=True
    )
    folder_remove(root=root)
    staged_index([staged_from_json(staged_to_json(s)) for s in staged], summary)  # through the embed queue
    assert Document.objects.get(source="a.md").status == DocumentStatus.TOMBSTONED
    assert (summary.changed, summary.failed) == (0, 1)


@pytest.mark.slow
@pytest.mark.django_db
def test_a_file_put_back_after_its_removal_is_indexed_again(tmp_path: Path) -> None:
    root = write_docs(tmp_path / "kb", {"a.md": DOC.format(name="a")})
    files_ingest(root=str(root), files=_files(root, "a.md"), options=IngestOptions())
    folder_remove(root=root)
    summary = files_ingest(root=str(root), files=_files(root, "a.md"), options=IngestOptions())
    assert (summary.new, summary.failed) == (1, 0)
    assert Document.objects.get(source="a.md").status == DocumentStatus.INDEXED


@pytest.mark.slow
@pytest.mark.django_db
def test_a_document_removed_while_its_admin_reingest_was_queued_stays_removed(  # type: ignore[no-untyped-def]
    tmp_path: Path, eager: None, django_capture_on_commit_callbacks
) -> None:
    root = write_docs(tmp_path / "kb", {"a.md": DOC.format(name="a")})
    files_ingest(root=str(root), files=_files(root, "a.md"), options=IngestOptions())
    document = Document.objects.get(source="a.md")
    with django_capture_on_commit_callbacks() as queued:
        document_reingest(document=document)  # no ingest run: the batch carries when it was queued
    document_tombstone(document=document)  # `manage.py remove` while the batch waits in the queue
    for callback in queued:
        callback()  # the worker takes the batch
    document.refresh_from_db()
    assert document.status == DocumentStatus.TOMBSTONED and document.version == 1
    assert not Chunk.objects.filter(document=document).exists()
    with django_capture_on_commit_callbacks(execute=True):
        document_reingest(document=document)  # requested after the removal: it comes back
    document.refresh_from_db()
    assert (document.status, document.version) == (DocumentStatus.INDEXED, 2)


@pytest.mark.slow
@pytest.mark.django_db
def test_the_parts_of_a_crashed_batch_keep_the_time_it_was_queued_at(tmp_path: Path, eager: None) -> None:
    root = write_docs(tmp_path / "kb", {name: DOC.format(name=name) for name in ("a.md", "b.md")})
    files_ingest(root=str(root), files=_files(root, "a.md"), options=IngestOptions())
    queued_at = timezone.now()
    document_tombstone(document=Document.objects.get(source="a.md"))  # removed after the batch was queued
    options = IngestOptions(requested_at=queued_at).as_dict()
    task_id = f"crash-{uuid.uuid4()}"
    _crashed_before(task_id)
    ingest_files_task.apply(
        args=[None, str(root), [list(f) for f in _files(root, "a.md", "b.md")], options], task_id=task_id
    )
    assert set(Document.objects.values_list("source", "status")) == {
        ("a.md", DocumentStatus.TOMBSTONED),
        ("b.md", DocumentStatus.INDEXED),
    }


@pytest.mark.unit
def test_the_request_time_goes_with_a_batch_only_when_set() -> None:
    assert "requested_at" not in IngestOptions().as_dict()  # a worker not yet upgraded takes the others
    requested = datetime(2026, 3, 1, 2, 0, tzinfo=UTC)
    data = IngestOptions(existing_only=True, requested_at=requested).as_dict()
    assert IngestOptions.from_dict(data).requested_at == requested


@pytest.mark.slow
@pytest.mark.django_db
def test_an_expired_folder_document_is_not_indexed_again_by_each_sync(tmp_path: Path, eager: None) -> None:
    root = write_docs(tmp_path / "kb", {name: DOC.format(name=name) for name in ("a.md", "b.md")})
    files_ingest(root=str(root), files=_files(root, "a.md", "b.md"), options=IngestOptions())
    expired = timezone.now() - timedelta(minutes=1)
    Document.objects.filter(source="a.md").update(expires_at=expired)  # an admin set its expiry
    assert uploads_expire() == 1
    for _night in range(2):
        run_id = folder_ingest_enqueue(root=root, options=IngestOptions(), force=True)
        run = IngestRun.objects.get(pk=run_id)
        assert run.status == "finished"  # the expired file is accounted for
        assert (run.counts["new"], run.counts["changed"], run.counts["unchanged"]) == (0, 1, 1)
        assert run.counts["failed"] == 0
        assert "expired" in run.counts["errors"]["a.md"]
        document = Document.objects.get(source="a.md")
        assert (document.status, document.version, document.expires_at) == (
            DocumentStatus.TOMBSTONED,
            1,
            expired,
        )
        assert uploads_expire() == 0  # nothing to tombstone again


# --- an expiry that races a re-upload --------------------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.django_db
def test_an_upload_renewed_while_the_expiry_runs_is_kept(  # type: ignore[no-untyped-def]
    tmp_path: Path, settings, monkeypatch
) -> None:
    from knowledge import services

    settings.MEDIA_ROOT = tmp_path / "media"
    media = Path(settings.MEDIA_ROOT).resolve()
    user = make_user("owner", "employees")
    first, _ = _upload(media, user.pk, "a-first.md")
    renewed, renewed_path = _upload(media, user.pk, "b-renewed.md")
    tombstone = services.document_tombstone

    def tombstone_while_renewed(*, document: Document) -> None:
        # the owner uploads b-renewed.md again while the expiry is busy with a-first.md
        Document.objects.filter(pk=renewed.pk).update(expires_at=timezone.now() + timedelta(hours=1))
        tombstone(document=document)

    monkeypatch.setattr(services, "document_tombstone", tombstone_while_renewed)
    assert uploads_expire() == 1
    renewed.refresh_from_db()
    assert renewed.status == DocumentStatus.INDEXED and Chunk.objects.filter(document=renewed).exists()
    assert renewed_path.exists()
    assert list(AuditEvent.objects.filter(kind="upload_expired").values_list("documents", flat=True)) == [
        [first.source]
    ]


@pytest.mark.slow
@pytest.mark.django_db
def test_a_file_uploaded_again_as_its_upload_expires_is_kept(  # type: ignore[no-untyped-def]
    tmp_path: Path, settings, monkeypatch
) -> None:
    from knowledge import services

    settings.MEDIA_ROOT = tmp_path / "media"
    media = Path(settings.MEDIA_ROOT).resolve()
    user = make_user("owner", "employees")
    _, path = _upload(media, user.pk, "again.md")
    tombstone = services.document_tombstone

    def tombstone_then_uploaded_again(*, document: Document) -> None:
        tombstone(document=document)
        later = (timezone.now() + timedelta(seconds=5)).timestamp()
        os.utime(path, (later, later))  # the same name written again right after the tombstone committed

    monkeypatch.setattr(services, "document_tombstone", tombstone_then_uploaded_again)
    assert uploads_expire() == 1
    assert path.exists()


@pytest.mark.unit
def test_the_request_time_travels_with_a_staged_document_and_defaults_to_unknown() -> None:
    requested = datetime(2026, 3, 1, 2, 0, tzinfo=UTC)
    without = {
        "source": "a.md",
        "source_path": "/kb/a.md",
        "source_root": "/kb",
        "content_hash": "x",
        "title": "A",
        "author": "",
        "updated_at": None,
        "metadata": {},
        "links": [],
        "options": {},
        "chunks": [],
    }
    assert staged_from_json(without).requested_at is None  # staged by a worker that predates it
    staged = staged_from_json({**without, "requested_at": requested.isoformat()})
    assert staged.requested_at == requested
    assert staged_to_json(staged)["requested_at"] == requested.isoformat()
