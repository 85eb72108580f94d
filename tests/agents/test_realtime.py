"""Admission and liveness of the realtime queue, through the ask API, with the real Redis.

The worker state these tests need (a heartbeat, questions waiting, the mean answer time) is written to Redis
in the form the workers and web processes write it; the fault suite (tests/faults/) covers real workers."""

from __future__ import annotations

import time

import pytest
from django.test import override_settings

from agents import realtime
from agents.models import Conversation
from audit.models import AuditEvent
from tests.api import client_for, make_user

pytestmark = [pytest.mark.django_db, pytest.mark.integration]


@pytest.fixture()
def clean_realtime_keys(redis_client):  # type: ignore[no-untyped-def]
    keys = [realtime.workers_key(), realtime.pending_key(), realtime.service_key()]
    redis_client.delete(*keys)
    yield redis_client
    redis_client.delete(*keys)


def _busy(redis_client, *, processes: int, waiting: int, service_ms: float) -> None:  # type: ignore[no-untyped-def]
    redis_client.zadd(realtime.workers_key(), {f"celery@busy|{processes}": time.time()})
    redis_client.zadd(realtime.pending_key(), {f"q{i}": time.time() for i in range(waiting)})
    redis_client.set(realtime.service_key(), str(service_ms))


def test_expected_wait_counts_the_questions_ahead_served_in_parallel():
    def wait(pending: int) -> float:
        return realtime.Capacity(
            workers=1, processes=2, pending=pending, service_seconds=2.0
        ).expected_wait_seconds

    # `pending` counts the asking question itself
    assert wait(1) == wait(2) == 0.0  # a process is free
    assert wait(3) == 1.0  # both busy: half an answer, on average, until one frees up
    assert wait(5) == 3.0  # and one more round for the two queued ahead
    no_worker = realtime.Capacity(workers=0, processes=0, pending=0, service_seconds=1.0)
    assert no_worker.expected_wait_seconds == float("inf")


def test_a_question_that_would_wait_too_long_is_refused_at_once_with_retry_after(clean_realtime_keys):
    _busy(
        clean_realtime_keys, processes=2, waiting=12, service_ms=1500
    )  # 12 ahead: (.5 + 5) x 1.5 s = 8.25 s
    user = make_user("crowded", "employees")
    started = time.monotonic()
    with override_settings(ATHENA_REALTIME_VIA_CELERY=True, ATHENA_MAX_QUEUE_WAIT_SECONDS=5):
        response = client_for(user).post("/api/v1/ask", {"question": "How do I restart BGP?"}, format="json")
    assert time.monotonic() - started < 2
    assert response.status_code == 503, response.content
    assert response["Retry-After"] == "9"  # rounded up
    assert response.json()["error"]["code"] == "overloaded"
    assert response.json()["error"]["retry_after"] == 9
    event = AuditEvent.objects.filter(kind="question", actor="crowded").latest("id")
    assert event.verdict == "unavailable" and event.payload["error"] == "overloaded"
    assert "restart BGP" not in str(event.payload)  # not screened for personal data: not logged
    assert clean_realtime_keys.zcard(realtime.pending_key()) == 12  # the refused question is not waiting
    assert not Conversation.objects.filter(user=user).exists()  # nor did it leave an empty conversation


def test_no_live_worker_gives_503_with_retry_after_after_the_grace_not_the_answer_timeout(
    clean_realtime_keys,
):
    # a worker whose last heartbeat is older than WORKER_TTL_SECONDS is dead
    clean_realtime_keys.zadd(realtime.workers_key(), {"celery@dead|2": time.time() - 60})
    user = make_user("nobody-home", "employees")
    started = time.monotonic()
    with override_settings(
        ATHENA_REALTIME_VIA_CELERY=True,
        ATHENA_REALTIME_QUEUE="realtime-nobody-listens",
        ATHENA_ANSWER_TIMEOUT_SECONDS=60,
        ATHENA_NO_WORKER_GRACE_SECONDS=2,
    ):
        response = client_for(user).post(
            "/api/v1/ask", {"question": "Where is the DNS runbook?"}, format="json"
        )
    elapsed = time.monotonic() - started
    assert response.status_code == 503, response.content
    assert 2 <= elapsed < 5, elapsed
    assert int(response["Retry-After"]) >= 1
    assert "realtime-nobody-listens" in response.json()["error"]["message"]
    event = AuditEvent.objects.filter(kind="question", actor="nobody-home").latest("id")
    assert event.payload["error"] == "no_worker" and event.payload["question_id"]
    assert clean_realtime_keys.zcard(realtime.pending_key()) == 0  # it no longer counts as waiting
    assert clean_realtime_keys.exists(realtime.abandoned_key(event.payload["question_id"]))
