"""Where a restricted answer's text may end up besides the asker's screen, the audit log and the conversation's
history: not in the worker's log (Celery logs each task's return value when it succeeds), not in Redis's
result backend once the asker has it (Celery kept each answer, and each guarded passage, for an hour), and not
in anything Redis was ever sent: its append-only file keeps every write, a broker message taken and deleted or
a result forgotten included, until its next rewrite (athena.sealing). A failed task leaves only what failed
(athena.errors.TaskFailed). These tests drive a real worker and read its real log and the real Redis."""

from __future__ import annotations

import base64
import binascii
import re
import threading
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from django.test import override_settings

from agents import realtime
from athena.errors import TaskFailed
from athena.paths import var_dir
from tests.api import client_for
from tests.factories import DocumentFactory, NocAdminFactory

pytestmark = [pytest.mark.integration, pytest.mark.slow]

# a phrase only the restricted document holds, and a question it answers
PHRASE = "quartzline fabric keepalive every 47 seconds"
BODY = f"The core routers on the quartzline fabric keep their BGP sessions up with a {PHRASE}."
QUESTION = "What keepalive do the core routers use on the quartzline fabric?"
PACKAGES = {"agents", "athena", "audit", "knowledge", "retrieval", "screening"}


def _worker_log() -> Path:
    return var_dir() / "log" / "test-worker.log"  # where tests/conftest.py's worker writes


def _ask_restricted(redis_client) -> tuple[str, dict]:  # type: ignore[no-untyped-def]
    """A noc-admin asks about a noc-admins document through the real worker; returns (question id, body)."""
    reader = NocAdminFactory()
    DocumentFactory(body=BODY, access_tier="restricted", groups=["noc-admins"])
    redis_client.delete(realtime.user_pending_key(reader.pk))
    deadline = time.monotonic() + 60  # the worker heartbeats once its queues are set up
    while not realtime.workers_alive() and time.monotonic() < deadline:
        time.sleep(0.2)
    with override_settings(ATHENA_REALTIME_VIA_CELERY=True, ATHENA_MAX_QUEUE_WAIT_SECONDS=0):
        response = client_for(reader).post("/api/v1/ask", {"question": QUESTION}, format="json")
        assert response.status_code == 200, response.content
        body = response.json()
        assert not body["abstained"] and "47 seconds" in body["answer"], body["answer"]
        passage = client_for(reader).get(f"/api/v1/passages/{body['citations'][0]['chunk_id']}")
        assert passage.status_code == 200 and "47 seconds" in passage.json()["text"], passage.content
    from audit.models import AuditEvent

    event = AuditEvent.objects.filter(kind="question", actor=reader.username).get()
    return event.payload["question_id"], body


@pytest.mark.django_db(transaction=True)
def test_the_worker_log_names_a_finished_task_without_its_answer(  # type: ignore[no-untyped-def]
    celery_worker_process, redis_client
) -> None:
    log = _worker_log()
    start = log.stat().st_size
    question_id, _ = _ask_restricted(redis_client)
    written = b""
    deadline = time.monotonic() + 10  # the worker writes its line as the task returns
    while time.monotonic() < deadline:
        written = log.read_bytes()[start:]
        if f"answer_task[{question_id}] succeeded".encode() in written and b"passage_guard_task" in written:
            break
        time.sleep(0.1)
    assert f"answer_task[{question_id}] succeeded".encode() in written, written[-2000:]
    assert b"47 seconds" not in written and b"quartzline" not in written, written[-2000:]


@pytest.mark.django_db(transaction=True)
def test_an_answer_and_a_guarded_passage_do_not_stay_in_the_result_backend(  # type: ignore[no-untyped-def]
    celery_worker_process, redis_client
) -> None:
    before = set(redis_client.scan_iter(match="celery-task-meta-*", count=1000))  # results of earlier tests
    question_id, _ = _ask_restricted(redis_client)
    assert not redis_client.exists(f"celery-task-meta-{question_id}")
    kept = [
        key
        for key in set(redis_client.scan_iter(match="celery-task-meta-*", count=1000)) - before
        if b"47 seconds" in (redis_client.get(key) or b"")
    ]
    assert not kept, kept
    # a copy of the message delivered later (republished while the first ran) is not answered and stored again
    assert realtime.abandoned(question_id)


@pytest.mark.django_db(transaction=True)
def test_a_deleted_conversation_leaves_no_turns_in_redis(redis_client) -> None:  # type: ignore[no-untyped-def]
    """Conversation memory (each turn's question and answer) stayed in Redis for its whole TTL after its owner
    deleted the conversation, which is never continued."""
    from agents.memory import Turn, memory_append, memory_load
    from agents.models import Conversation
    from tests.api import make_user

    owner = make_user("forgetful", "employees")
    conversation = Conversation.objects.create(user=owner, title="quartzline keepalive")
    kept = Conversation.objects.create(user=owner, title="another")
    for talk in (conversation, kept):
        memory_append(str(talk.pk), Turn(QUESTION, QUESTION, f"A {PHRASE} [1].", "parameter_lookup", [1]))
    assert memory_load(str(conversation.pk))
    response = client_for(owner).delete(f"/api/v1/conversations/{conversation.pk}")
    assert response.status_code == 204, response.content
    assert memory_load(str(conversation.pk)) == []
    assert not redis_client.exists(f"athena:memory:{conversation.pk}")
    assert memory_load(str(kept.pk))  # the owner's other conversations keep theirs


_BASE64_RUN = re.compile(rb"[A-Za-z0-9+/]{24,}={0,2}")


def _readable(raw: bytes) -> bytes:
    """`raw` and every base64 run in it decoded (a kombu message's body is base64 on Redis)."""
    decoded = [raw]
    for run in _BASE64_RUN.findall(raw):
        try:
            decoded.append(base64.b64decode(run + b"=" * (-len(run) % 4)))
        except (binascii.Error, ValueError):
            continue
    return b"\n".join(decoded)


@contextmanager
def _redis_writes(redis_client) -> Iterator[list[bytes]]:  # type: ignore[no-untyped-def]
    """Every command any client sends Redis while the block runs, with its arguments (MONITOR: a message pushed
    and taken, a result stored and deleted, a remembered turn: what an append-only file or a dump keeps of the
    writes), readable (base64 decoded), in the list yielded once the block ends. Whatever Redis this is, with
    or without an append-only file: the test never depends on how it persists."""
    stop = threading.Event()
    lines: list[bytes] = []
    with redis_client.monitor() as monitor:

        def read() -> None:
            while not stop.is_set():
                if monitor.connection.can_read(timeout=0.1):
                    line = monitor.connection.read_response()
                    lines.append(line if isinstance(line, bytes) else str(line).encode())

        reader = threading.Thread(target=read, daemon=True)
        reader.start()
        written: list[bytes] = []
        yield written
        marker = f"end of the block {uuid.uuid4()}"
        redis_client.echo(marker)  # a last command, seen once everything the block sent has been
        deadline = time.monotonic() + 10
        while not any(marker.encode() in line for line in lines) and time.monotonic() < deadline:
            time.sleep(0.05)
        stop.set()
        reader.join(timeout=5)
    written.append(_readable(b"\n".join(lines)))


def _plain(written: list[bytes]) -> list[bytes]:
    return [
        phrase for phrase in (b"47 seconds", b"quartzline", b"keepalive do") if phrase in b"".join(written)
    ]


@pytest.mark.django_db(transaction=True)
def test_an_answer_and_a_screened_passage_never_reach_redis_in_plain_text(  # type: ignore[no-untyped-def]
    celery_worker_process, redis_client
) -> None:
    """The question, the answer the worker stores and the passage the citation viewer has screened travel
    sealed: Redis's append-only file holds none of their text, also after the messages and results are gone."""
    with _redis_writes(redis_client) as written:
        _ask_restricted(redis_client)
    assert written and written[0], "the asking went through Redis"
    assert not _plain(written), _plain(written)


@pytest.mark.django_db(transaction=True)
def test_an_ingested_restricted_documents_text_never_reaches_redis_in_plain_text(  # type: ignore[no-untyped-def]
    celery_worker_process, redis_client, tmp_path
) -> None:
    """A restricted document ingested through the real worker: its file's name travels to the ingest queue
    sealed, its chunks from the ingest queue to the embed queue too, and the ingest tasks store no result."""
    from knowledge.models import Document, IngestRun
    from knowledge.services import IngestOptions
    from knowledge.tasks import folder_ingest_enqueue

    (tmp_path / "fabric.md").write_text(f"# Fabric keepalives\n\n{BODY}\n")
    before = set(redis_client.scan_iter(match="celery-task-meta-*", count=1000))
    options = IngestOptions(access_tier="restricted", acl_groups=("noc-admins",))
    with _redis_writes(redis_client) as written:
        run_id = folder_ingest_enqueue(root=tmp_path, options=options)
        deadline = time.monotonic() + 120
        while IngestRun.objects.get(pk=run_id).status != "finished" and time.monotonic() < deadline:
            time.sleep(0.3)
    assert IngestRun.objects.get(pk=run_id).status == "finished"
    assert Document.objects.get(source="fabric.md").status == "indexed"
    # the batches went through this Redis, and neither the file's name nor its text is readable there
    assert b"knowledge.tasks.ingest_files_task" in b"".join(written)
    assert b"knowledge.tasks.embed_index_task" in b"".join(written)
    assert b"fabric" not in b"".join(written)
    assert not _plain(written), _plain(written)
    assert set(redis_client.scan_iter(match="celery-task-meta-*", count=1000)) == before


@pytest.mark.django_db(transaction=True)
def test_a_failed_question_leaves_only_what_failed_in_the_result_backend(  # type: ignore[no-untyped-def]
    celery_worker_process, redis_client
) -> None:
    """A question's task that fails on the worker with restricted text in its exception (here a user id that
    is a phrase of a restricted document): the stored failure names the exception's class only, the asker gets
    a clear error, the detail is in the worker's log, and the failure is deleted once read."""
    from agents.tasks import answer_task
    from athena.celery import app
    from athena.sealing import Purpose, seal

    log = _worker_log()
    start = log.stat().st_size
    question_id = str(uuid.uuid4())
    key = f"celery-task-meta-{question_id}"
    sealed = seal("What keepalive?", purpose=Purpose.QUESTION)
    # (the phrase travels in the message here by the test's own doing: the stored failure is what is read)
    answer_task.apply_async(
        args=[PHRASE, sealed, str(uuid.uuid4()), None],
        kwargs={"seal_answer": True},
        queue="realtime",
        task_id=question_id,
    )
    deadline = time.monotonic() + 60
    while not redis_client.exists(key) and time.monotonic() < deadline:
        time.sleep(0.1)
    stored = redis_client.get(key) or b""
    assert b"FAILURE" in stored, stored
    assert b"ValueError" in stored and not _plain([stored]), stored
    with pytest.raises(TaskFailed) as failed:
        realtime.answer_wait(
            question_id=question_id,
            publish=lambda: app.AsyncResult(question_id),
            timeout=30,
            no_worker_grace=30,
        )
    assert failed.value.kind == "ValueError" and "worker's log" in failed.value.message
    assert not redis_client.exists(key)  # read once, then deleted
    detail = b""
    deadline = time.monotonic() + 10
    while PHRASE.encode() not in detail and time.monotonic() < deadline:
        detail = log.read_bytes()[start:]
        time.sleep(0.1)
    assert f"answer_task[{question_id}] failed".encode() in detail and PHRASE.encode() in detail


@pytest.mark.unit
def test_only_the_tasks_whose_asker_reads_the_result_store_one() -> None:
    """Every task of the project stores nothing of what it returned or raised (CELERY_TASK_IGNORE_RESULT),
    but the realtime queue's two, whose asker reads the (sealed) result: a beat task's failure message can name
    a private upload's file, and the result backend kept it for an hour, its append-only file longer."""
    from athena.celery import app

    app.loader.import_default_modules()
    ours = {name: task for name, task in app.tasks.items() if name.split(".")[0] in PACKAGES}
    assert "knowledge.tasks.uploads_expire_task" in ours and "audit.tasks.audit_checkpoint_task" in ours
    storing = sorted(name for name, task in ours.items() if not task.ignore_result)
    assert storing == ["agents.tasks.answer_task", "agents.tasks.passage_guard_task"]
