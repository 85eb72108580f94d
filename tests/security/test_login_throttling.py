"""Sign-in guessing is throttled and its audit trail aggregated: after ATHENA_LOGIN_FAILURES_PER_NAME failures
the password is not even checked, and a flood of failures writes a handful of events with counts, not one
event per attempt under the chain's global lock."""

from __future__ import annotations

import time

import pytest
from django.test import Client

from audit.models import AuditEvent
from tests.factories import UserFactory

pytestmark = [pytest.mark.integration, pytest.mark.django_db]


def test_guessing_a_password_is_throttled(settings) -> None:  # type: ignore[no-untyped-def]
    settings.ATHENA_LOGIN_FAILURES_PER_NAME = 5
    UserFactory(username="alice", password="the-right-password")
    client = Client()
    for attempt in range(5):
        assert not client.login(username="alice", password=f"guess-{attempt}")
    # the right password no longer helps while the name is throttled
    assert not client.login(username="alice", password="the-right-password")
    # another name from elsewhere is unaffected
    UserFactory(username="bob", password="bobs-password")
    assert Client().login(username="bob", password="bobs-password")


def test_a_login_flood_is_audited_aggregated(settings) -> None:  # type: ignore[no-untyped-def]
    settings.ATHENA_LOGIN_FAILURES_PER_NAME = 1000
    client = Client()
    attacker_name = "=cmd|' /C calc'!A0"
    for attempt in range(25):
        client.post("/accounts/login/", {"username": attacker_name, "password": f"p{attempt}"})
    events = AuditEvent.objects.filter(kind="login_failed").order_by("id")
    assert [event.payload["count"] for event in events] == [1, 10]
    assert all(event.actor == attacker_name for event in events)


def test_a_successful_login_clears_the_name_counter(settings) -> None:  # type: ignore[no-untyped-def]
    settings.ATHENA_LOGIN_FAILURES_PER_NAME = 3
    UserFactory(username="carol", password="carols-password")
    client = Client()
    for attempt in range(2):
        assert not client.login(username="carol", password=f"typo-{attempt}")
    assert client.login(username="carol", password="carols-password")
    client.logout()
    for attempt in range(2):
        assert not client.login(username="carol", password=f"typo-again-{attempt}")
    assert client.login(username="carol", password="carols-password")


def test_an_ended_window_gets_one_event_with_its_exact_count(settings) -> None:  # type: ignore[no-untyped-def]
    """The 1st/10th/100th... events are written at once; the window's true total (here 25, which no milestone
    says) is written once when the window has ended, and only once."""
    from audit.aggregation import AGGREGATE_WINDOW_SECONDS, audit_aggregates_flush

    settings.ATHENA_LOGIN_FAILURES_PER_NAME = 1000
    client = Client()
    for attempt in range(25):
        client.post("/accounts/login/", {"username": "mallory", "password": f"p{attempt}"})
    assert audit_aggregates_flush() == 0  # the window is still open
    later = time.time() + AGGREGATE_WINDOW_SECONDS + 1
    assert audit_aggregates_flush(now=later) == 1
    assert audit_aggregates_flush(now=later) == 0
    events = list(AuditEvent.objects.filter(kind="login_failed", actor="mallory").order_by("id"))
    assert [event.payload["count"] for event in events] == [1, 10, 25]
    assert events[-1].payload["window_closed"] is True and events[-1].verdict == "denied"
    assert events[-1].payload["window_started"] == events[0].payload["window_started"]


def test_a_window_whose_closing_write_fails_is_closed_by_the_next_run(settings) -> None:  # type: ignore[no-untyped-def]
    """The database refuses the closing event (a trigger stands for it being down): the window's total is not
    forgotten, the next run writes it once; and a runner killed after its write, which left the window's
    counters and its place in the queue behind, is not followed by a second closing event."""
    from django.db import connection

    from athena.throttling import redis_client
    from audit.aggregation import AGGREGATE_WINDOW_SECONDS, aggregate_open_key, audit_aggregates_flush

    settings.ATHENA_LOGIN_FAILURES_PER_NAME = 1000
    client = Client()
    for attempt in range(3):
        client.post("/accounts/login/", {"username": "trudy", "password": f"p{attempt}"})
    later = time.time() + AGGREGATE_WINDOW_SECONDS + 1
    redis = redis_client()
    keys = [k.decode() for k in redis.zrangebyscore(aggregate_open_key(), 0, later)]
    ours = [(k, redis.zscore(aggregate_open_key(), k), redis.mget(k, f"{k}:meta")) for k in keys]
    with connection.cursor() as cursor:  # rolled back with the test's transaction
        cursor.execute(
            "CREATE FUNCTION refuse_closing() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN "
            "IF NEW.payload ? 'window_closed' THEN RAISE EXCEPTION 'database is shutting down'; END IF; "
            "RETURN NEW; END $$"
        )
        cursor.execute(
            "CREATE TRIGGER refuse_closing BEFORE INSERT ON audit_auditevent "
            "FOR EACH ROW EXECUTE FUNCTION refuse_closing()"
        )
    assert audit_aggregates_flush(now=later) == 0
    with connection.cursor() as cursor:
        cursor.execute("DROP TRIGGER refuse_closing ON audit_auditevent")
    assert audit_aggregates_flush(now=later) == 1
    assert [e.payload["count"] for e in AuditEvent.objects.filter(actor="trudy").order_by("id")] == [1, 3]

    for key, score, (count, meta) in ours:  # what a runner killed before forgetting the window leaves
        redis.set(key, count)
        redis.set(f"{key}:meta", meta)
        redis.zadd(aggregate_open_key(), {key: score})
    assert audit_aggregates_flush(now=later) == 0
    assert [e.payload["count"] for e in AuditEvent.objects.filter(actor="trudy").order_by("id")] == [1, 3]


def test_a_throttled_question_flood_is_a_handful_of_events_with_the_total(settings) -> None:  # type: ignore[no-untyped-def]
    """One user hammering the throttled ask endpoint: 1 + 10 + the window's total, not 40 chain events."""
    from athena.throttling import user_counters_clear
    from audit.aggregation import AGGREGATE_WINDOW_SECONDS, audit_aggregates_flush
    from tests.api import client_for, make_user

    settings.ATHENA_QUESTIONS_PER_HOUR = 0  # every question is over the limit
    user = make_user("hammer", "employees")
    user_counters_clear(user)
    api = client_for(user)
    for _ in range(40):
        assert api.post("/api/v1/ask", {"question": "again?"}, format="json").status_code == 429
    audit_aggregates_flush(now=time.time() + AGGREGATE_WINDOW_SECONDS + 1)
    events = list(AuditEvent.objects.filter(actor="hammer").order_by("id"))
    assert [(event.kind, event.payload["count"]) for event in events] == [
        ("throttled", 1),
        ("throttled", 10),
        ("throttled", 40),
    ]
    user_counters_clear(user)


def test_the_window_totals_are_flushed_by_beat() -> None:
    from athena.celery import app
    from audit.tasks import audit_aggregates_flush_task

    app.finalize()
    tasks = {entry["task"] for entry in app.conf.beat_schedule.values()}
    assert "audit.tasks.audit_aggregates_flush_task" in tasks
    assert audit_aggregates_flush_task() == 0  # called as beat calls it: no ended window, nothing written


def test_a_blocked_name_is_told_so_and_for_how_long(settings) -> None:  # type: ignore[no-untyped-def]
    settings.ATHENA_LOGIN_FAILURES_PER_NAME = 3
    UserFactory(username="dave", password="daves-password")
    client = Client()
    first = client.post("/accounts/login/", {"username": "dave", "password": "typo"})
    assert "didn&#x27;t match" in first.content.decode()
    for attempt in range(2):
        client.post("/accounts/login/", {"username": "dave", "password": f"typo-{attempt}"})
    # the right password while blocked: not signed in, and told why (it read "didn't match")
    page = client.post("/accounts/login/", {"username": "dave", "password": "daves-password"})
    html = page.content.decode()
    assert page.status_code == 200 and "_auth_user_id" not in client.session
    assert "Too many failed sign-ins" in html and "Try again in 15 minutes" in html
    assert "match" not in html
