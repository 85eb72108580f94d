"""A question reaches the realtime worker sealed (athena.sealing): the input guard screens it there, so until
then neither the broker message (body, `argsrepr` header, a copy left in the queue) nor the result backend
may hold its text. These tests read everything in the real Redis."""

from __future__ import annotations

import base64
import json
import time
from typing import Any

import pytest
from django.test import override_settings

from agents import realtime
from agents.models import Answer, Conversation
from athena.sealing import InvalidToken, Purpose, seal, seal_json, unseal, unseal_json
from audit.models import AuditEvent
from tests.api import client_for, make_user

pytestmark = [pytest.mark.integration]

SSN = "536-22-1234"
QUESTION = f"My SSN is {SSN}, can you update my HR record?"


def _decoded(raw: bytes) -> list[bytes]:
    """A stored value as is, plus, for a kombu message envelope, its body decoded (base64 on Redis)."""
    out = [raw]
    try:
        envelope = json.loads(raw)
    except (ValueError, UnicodeDecodeError):
        return out
    if isinstance(envelope, list) and envelope and isinstance(envelope[0], str):  # unacked: [message, ...]
        try:
            envelope = json.loads(envelope[0])
        except ValueError:
            return out
    if isinstance(envelope, dict) and isinstance(envelope.get("body"), str):
        try:
            out.append(base64.b64decode(envelope["body"]))
        except ValueError:
            pass
    return out


def redis_values(client: Any) -> list[bytes]:
    """Every key name and value in the Redis database, message bodies decoded."""
    values: list[bytes] = []
    for key in client.scan_iter(count=1000):
        values.append(key)
        kind = client.type(key)
        if kind == b"string":
            items = [client.get(key)]
        elif kind == b"list":
            items = client.lrange(key, 0, -1)
        elif kind == b"hash":
            items = [v for pair in client.hgetall(key).items() for v in pair]
        elif kind == b"set":
            items = list(client.smembers(key))
        elif kind == b"zset":
            items = [member for member, _ in client.zrange(key, 0, -1, withscores=True)]
        else:
            items = []
        for item in items:
            if item is not None:
                values.extend(_decoded(item))
    return values


@pytest.mark.unit
def test_sealed_text_opens_only_with_the_key(settings) -> None:  # type: ignore[no-untyped-def]
    token = seal(QUESTION, purpose=Purpose.QUESTION)
    assert SSN not in token and unseal(token, purpose=Purpose.QUESTION) == QUESTION
    tampered = token[:-6] + ("A" if token[-6] != "A" else "B") + token[-5:]
    with pytest.raises(InvalidToken):
        unseal(tampered, purpose=Purpose.QUESTION)
    # a rotated key still opens a question sealed before the change; another key opens nothing
    settings.SECRET_KEY_FALLBACKS = [settings.SECRET_KEY]
    settings.SECRET_KEY = "a-new-secret-key-for-this-test-0123456789abcdefghijklmnop"
    assert unseal(token, purpose=Purpose.QUESTION) == QUESTION
    settings.SECRET_KEY_FALLBACKS = []
    with pytest.raises(InvalidToken):
        unseal(token, purpose=Purpose.QUESTION)


@pytest.mark.django_db
def test_a_question_waiting_in_the_broker_is_sealed(redis_client) -> None:  # type: ignore[no-untyped-def]
    """No worker takes the question: its message stays in the queue, where its text must not be readable."""
    queue = "realtime-sealing-nobody-listens"
    redis_client.delete(queue, realtime.workers_key(), realtime.pending_key())
    user = make_user("sealed", "employees")
    with override_settings(
        ATHENA_REALTIME_VIA_CELERY=True, ATHENA_REALTIME_QUEUE=queue, ATHENA_NO_WORKER_GRACE_SECONDS=1
    ):
        response = client_for(user).post("/api/v1/ask", {"question": QUESTION}, format="json")
    assert response.status_code == 503, response.content
    try:
        messages = redis_client.lrange(queue, 0, -1)
        assert messages, "the unanswered question is still queued"
        assert not [v for v in redis_values(redis_client) if SSN.encode() in v or b"HR record" in v]
        bodies = [b for raw in messages for b in _decoded(raw)]
        assert any(b"gAAAA" in b for b in bodies)  # what travels is the token (Fernet's version prefix)
    finally:
        redis_client.delete(queue)


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_a_refused_question_leaves_no_text_in_redis_or_the_database(  # type: ignore[no-untyped-def]
    celery_worker_process, redis_client
) -> None:
    """Through a real worker: the guard on the worker refuses the question; Redis (broker and result backend)
    and the database hold none of its text."""
    user = make_user("refused", "employees")
    deadline = time.monotonic() + 30  # the worker heartbeats once its queues are set up
    while not realtime.workers_alive() and time.monotonic() < deadline:
        time.sleep(0.5)
    with override_settings(ATHENA_REALTIME_VIA_CELERY=True):
        response = client_for(user).post("/api/v1/ask", {"question": QUESTION}, format="json")
    assert response.status_code == 400, response.content
    body = response.json()["error"]
    assert body["code"] == "blocked" and body["details"]["guard"] == "pii"
    event = AuditEvent.objects.get(kind="question", actor="refused")
    # the worker answered and the web process, having read the result, deleted it from the backend
    assert not redis_client.exists(f"celery-task-meta-{event.payload['question_id']}")
    assert not [v for v in redis_values(redis_client) if SSN.encode() in v or b"HR record" in v]
    assert SSN not in json.dumps(list(AuditEvent.objects.values("payload")), default=str)
    assert not Answer.objects.filter(user=user).exists()
    assert not [t for t in Conversation.objects.filter(user=user).values_list("title", flat=True) if t]


@pytest.mark.unit
def test_a_token_opens_only_for_its_own_purpose(settings) -> None:  # type: ignore[no-untyped-def]
    answer = {"answer": f"Your SSN {SSN} is on file [1].", "timings_ms": {"total": 1.5}}
    token = seal_json(answer, purpose=Purpose.ANSWER)
    assert SSN not in token and unseal_json(token, purpose=Purpose.ANSWER) == answer
    for other in set(Purpose) - {Purpose.ANSWER}:  # an answer cannot be passed off as a question, and so on
        with pytest.raises(InvalidToken):
            unseal(token, purpose=other)
    settings.SECRET_KEY_FALLBACKS = [settings.SECRET_KEY]
    settings.SECRET_KEY = "a-new-secret-key-for-this-test-0123456789abcdefghijklmnop"
    assert unseal_json(token, purpose=Purpose.ANSWER) == answer  # rotation keeps every purpose's tokens


@pytest.mark.django_db
def test_conversation_memory_is_sealed_and_a_turn_is_taken_back(redis_client) -> None:  # type: ignore[no-untyped-def]
    from agents.memory import Turn, memory_append, memory_forget, memory_load

    conversation = "sealed-memory-conversation"
    redis_client.delete(f"athena:memory:{conversation}")
    kept, taken = (Turn(QUESTION, QUESTION, f"Answer {n} [1].", "parameter_lookup", [n]) for n in (1, 2))
    memory_append(conversation, kept)
    memory_append(conversation, taken)
    assert not [v for v in redis_values(redis_client) if SSN.encode() in v or b"HR record" in v]
    assert memory_load(conversation) == [kept, taken]
    memory_forget(conversation, taken)
    assert memory_load(conversation) == [kept]
    redis_client.delete(f"athena:memory:{conversation}")


@pytest.mark.django_db
def test_remembered_turns_no_key_opens_are_left_out_and_said(redis_client, settings, caplog) -> None:  # type: ignore[no-untyped-def]
    """A secret key changed without the old one among the fallbacks: the turns sealed under it are left out of
    the conversation's memory, and the worker's log says so (they vanished without a word)."""
    from agents.memory import Turn, memory_append, memory_load

    conversation = "memory-under-an-old-key"
    redis_client.delete(f"athena:memory:{conversation}")
    old, new = (Turn(QUESTION, QUESTION, f"Answer {n} [1].", "parameter_lookup", [n]) for n in (1, 2))
    memory_append(conversation, old)
    settings.SECRET_KEY = "a-replacement-secret-key-for-this-test-0123456789abcdefgh"
    settings.SECRET_KEY_FALLBACKS = []
    memory_append(conversation, new)
    with caplog.at_level("WARNING", logger="agents.memory"):
        assert memory_load(conversation) == [new]
    assert "1 of 2 turns open under no secret key" in caplog.text, caplog.text
    redis_client.delete(f"athena:memory:{conversation}")
