"""Where a restricted answer's text may end up besides the asker's screen, the audit log and the conversation's
history: not in the worker's log (Celery logs each task's return value when it succeeds), and not in Redis's
result backend once the asker has it (Celery kept each answer, and each guarded passage, for an hour). These
tests drive a real worker and read its real log and the real Redis."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from django.test import override_settings

from agents import realtime
from athena.paths import var_dir
from tests.api import client_for
from tests.factories import DocumentFactory, NocAdminFactory

pytestmark = [pytest.mark.integration, pytest.mark.slow]

# a phrase only the restricted document holds, and a question it answers
PHRASE = "quartzline fabric keepalive every 47 seconds"
BODY = f"The core routers on the quartzline fabric keep their BGP sessions up with a {PHRASE}."
QUESTION = "What keepalive do the core routers use on the quartzline fabric?"


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
