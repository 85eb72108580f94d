"""The audit table is append-only in the database itself, and tampering is detected by audit_verify."""

from __future__ import annotations

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.db import DatabaseError, connection, transaction

from audit.models import AuditEvent
from audit.services import audit_record

pytestmark = [pytest.mark.django_db, pytest.mark.integration]


def _three_events() -> list[AuditEvent]:
    return [
        audit_record(
            kind="question",
            actor=f"user{i}",
            verdict="answered",
            documents=[f"d{i}.md"],
            payload={"question": f"q{i}"},
        )
        for i in range(3)
    ]


def test_raw_update_is_refused_by_the_database() -> None:
    event = _three_events()[1]
    with (
        pytest.raises(DatabaseError, match="append-only"),
        transaction.atomic(),
        connection.cursor() as cursor,
    ):
        cursor.execute("UPDATE audit_auditevent SET verdict = 'answered-ok' WHERE id = %s", [event.pk])
    assert AuditEvent.objects.get(pk=event.pk).verdict == "answered"


def test_raw_delete_is_refused_by_the_database() -> None:
    event = _three_events()[0]
    with (
        pytest.raises(DatabaseError, match="append-only"),
        transaction.atomic(),
        connection.cursor() as cursor,
    ):
        cursor.execute("DELETE FROM audit_auditevent WHERE id = %s", [event.pk])
    assert AuditEvent.objects.filter(pk=event.pk).exists()


def test_orm_update_and_delete_are_refused_too() -> None:
    event = _three_events()[0]
    with pytest.raises(DatabaseError), transaction.atomic():
        AuditEvent.objects.filter(pk=event.pk).update(actor="someone-else")
    with pytest.raises(DatabaseError), transaction.atomic():
        event.delete()


def test_audit_verify_reports_an_intact_chain(capsys) -> None:  # type: ignore[no-untyped-def]
    _three_events()
    call_command("audit_verify")
    assert f"chain intact ({AuditEvent.objects.count()} events)" in capsys.readouterr().out


def test_altering_a_stored_event_is_detected(tamper) -> None:  # type: ignore[no-untyped-def]
    events = _three_events()
    victim = events[1]
    tamper(
        "audit_no_update",
        "UPDATE audit_auditevent SET payload = jsonb_set(payload, '{question}', '\"harmless\"') WHERE id = %s",
        [victim.pk],
    )
    with pytest.raises(CommandError, match=rf"chain broken at event {victim.pk}: content does not match"):
        call_command("audit_verify")


def test_removing_an_event_is_detected(tamper) -> None:  # type: ignore[no-untyped-def]
    events = _three_events()
    tamper("audit_no_delete", "DELETE FROM audit_auditevent WHERE id = %s", [events[1].pk])
    with pytest.raises(CommandError, match=rf"chain broken at event {events[2].pk}: prev_hash"):
        call_command("audit_verify")


def test_audit_verify_exits_non_zero_from_the_shell(tamper) -> None:  # type: ignore[no-untyped-def]
    """CommandError makes manage.py exit with status 1 (checked through the real entry point)."""
    from django.core.management import ManagementUtility

    events = _three_events()
    tamper("audit_no_update", "UPDATE audit_auditevent SET actor = 'x' WHERE id = %s", [events[0].pk])
    with pytest.raises(SystemExit) as exit_info:
        ManagementUtility(["manage.py", "audit_verify"]).execute()
    assert exit_info.value.code == 1


def test_failed_login_is_audited(client) -> None:  # type: ignore[no-untyped-def]
    from tests.factories import UserFactory

    UserFactory(username="alice", password="right")
    response = client.post("/accounts/login/", {"username": "alice", "password": "wrong"})
    assert response.status_code == 200  # the form again, with an error
    event = AuditEvent.objects.get(kind="login_failed")
    assert event.actor == "alice" and event.verdict == "denied"
    assert "wrong" not in str(event.payload)


def test_events_written_by_hosts_whose_clocks_disagree_are_timed_by_one_clock(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    # Web processes and workers on several hosts write to one chain. Each stamped its event with its own
    # clock: one an hour ahead put its event an hour into the future, after the events written later by the
    # others, and a compliance search by day could find it on the wrong day. The time is the database's.
    from datetime import datetime, timedelta

    import audit.services

    class HourAhead(datetime):
        @classmethod
        def now(cls, tz=None):  # type: ignore[no-untyped-def, override]
            return datetime.now(tz) + timedelta(hours=1)

    with monkeypatch.context() as ahead:
        ahead.setattr(audit.services, "datetime", HourAhead)
        first = audit_record(kind="question", actor="on-a-fast-host", payload={"question": "q1"})
    second = audit_record(kind="question", actor="on-a-true-host", payload={"question": "q2"})
    with connection.cursor() as cursor:
        cursor.execute("SELECT clock_timestamp()")
        database_now = cursor.fetchone()[0]
    assert first.created_at <= second.created_at <= database_now
    assert database_now - first.created_at < timedelta(minutes=1)
    call_command("audit_verify")
