"""The audit log is tamper-evident against whoever holds the database, its owner included: events are
HMAC-signed with a key the database does not hold, and signed checkpoints outside the database anchor the
head. The `tamper` fixture acts as the table owner (who can switch the append-only triggers off)."""

from __future__ import annotations

import hashlib
import hmac
import json
from pathlib import Path

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.db import connection, transaction
from django.test import override_settings

from audit.models import AuditEvent
from audit.services import (
    CONTENT_FIELDS,
    audit_checkpoint_write,
    audit_record,
    audit_verify,
    canonical_json,
    event_digest,
)

pytestmark = [pytest.mark.django_db, pytest.mark.integration]


def _events(count: int = 4) -> list[AuditEvent]:
    return [
        audit_record(kind="question", actor=f"user{i}", verdict="answered", payload={"question": f"q{i}"})
        for i in range(count)
    ]


def test_events_are_signed_with_the_key_and_carry_its_id(settings) -> None:  # type: ignore[no-untyped-def]
    event = _events(1)[0]
    assert event.key_id == settings.ATHENA_AUDIT_KEY_ID
    content = {name: getattr(event, name) for name in CONTENT_FIELDS}
    expected = event_digest(prev_hash=event.prev_hash, key=settings.ATHENA_AUDIT_KEY.encode(), **content)
    assert event.hash == expected
    assert event.hash != event_digest(prev_hash=event.prev_hash, **content)  # not a bare SHA-256
    with override_settings(ATHENA_AUDIT_KEY="another key entirely, thirty-two chars"):
        report = audit_verify()
    assert not report.ok and report.first_broken_id == event.pk


def test_a_deleted_tail_is_detected_by_the_checkpoint(tamper, audit_checkpoint_file: Path) -> None:  # type: ignore[no-untyped-def]
    events = _events()
    checkpoint = audit_checkpoint_write()
    assert checkpoint is not None and checkpoint.event_id == events[-1].pk
    assert audit_verify().ok
    # the owner removes the newest events: the rest of the chain is still perfectly linked
    tamper("audit_no_delete", "DELETE FROM audit_auditevent WHERE id >= %s", [events[2].pk])
    report = audit_verify()
    assert not report.ok and report.first_broken_id is None
    assert "deleted tail" in report.reason
    with pytest.raises(CommandError, match="deleted tail"):
        call_command("audit_verify")


def test_an_edited_payload_is_detected(tamper) -> None:  # type: ignore[no-untyped-def]
    events = _events()
    tamper(
        "audit_no_update",
        'UPDATE audit_auditevent SET payload = \'{"question": "harmless"}\' WHERE id = %s',
        [events[1].pk],
    )
    report = audit_verify()
    assert report.first_broken_id == events[1].pk and "altered" in report.reason


def test_a_chain_rehashed_without_the_key_is_detected(tamper) -> None:  # type: ignore[no-untyped-def]
    events = _events()
    audit_checkpoint_write()
    # the owner edits an event and recomputes every later link the only way it can: without the key
    tamper(
        "audit_no_update",
        'UPDATE audit_auditevent SET payload = \'{"question": "harmless"}\' WHERE id = %s',
        [events[1].pk],
    )
    prev = events[0].hash
    for event in AuditEvent.objects.filter(pk__gte=events[1].pk).order_by("id"):
        content = {name: getattr(event, name) for name in CONTENT_FIELDS}
        forged = event_digest(prev_hash=prev, **content)
        tamper(
            "audit_no_update",
            "UPDATE audit_auditevent SET prev_hash = %s, hash = %s WHERE id = %s",
            [prev, forged, event.pk],
        )
        prev = forged
    report = audit_verify()
    assert report.first_broken_id == events[1].pk
    assert "re-hashed without the key" in report.reason
    assert any("rewritten" in problem for problem in report.problems)


def test_a_rehash_that_drops_the_key_id_is_detected(tamper) -> None:  # type: ignore[no-untyped-def]
    events = _events()
    prev = events[1].hash
    for event in events[2:]:
        content = {name: getattr(event, name) for name in CONTENT_FIELDS} | {"key_id": ""}
        forged = event_digest(prev_hash=prev, **content)
        tamper(
            "audit_no_update",
            "UPDATE audit_auditevent SET key_id = '', prev_hash = %s, hash = %s WHERE id = %s",
            [prev, forged, event.pk],
        )
        prev = forged
    report = audit_verify()
    assert report.first_broken_id == events[2].pk and "unkeyed event follows keyed" in report.reason


def test_a_gap_is_detected(tamper) -> None:  # type: ignore[no-untyped-def]
    events = _events()
    tamper("audit_no_delete", "DELETE FROM audit_auditevent WHERE id = %s", [events[1].pk])
    report = audit_verify()
    assert report.first_broken_id == events[2].pk and "gap" in report.reason


def test_an_altered_checkpoint_line_is_detected(audit_checkpoint_file: Path) -> None:
    _events(2)
    audit_checkpoint_write()
    record = json.loads(audit_checkpoint_file.read_text())
    record["event_id"] += 100  # claim a longer log than there is, without the key to re-sign it
    audit_checkpoint_file.write_text(canonical_json(record) + "\n")
    report = audit_verify()
    assert not report.ok and any("does not match its signature" in p for p in report.problems)


def test_checkpoints_are_appended_and_linked(audit_checkpoint_file: Path) -> None:
    _events(2)
    first = audit_checkpoint_write()
    _events(1)
    second = audit_checkpoint_write()
    lines = audit_checkpoint_file.read_text().splitlines()
    assert len(lines) == 2 and first is not None and second is not None
    assert second.prev_mac == first.mac
    assert (audit_checkpoint_file.stat().st_mode & 0o777) == 0o600


def test_no_checkpoint_blesses_a_tampered_chain(tamper, audit_checkpoint_file: Path) -> None:  # type: ignore[no-untyped-def]
    events = _events()
    tamper("audit_no_update", "UPDATE audit_auditevent SET actor = 'x' WHERE id = %s", [events[0].pk])
    assert audit_checkpoint_write() is None
    assert not audit_checkpoint_file.exists()


def test_key_rotation_keeps_old_events_verifiable(settings) -> None:  # type: ignore[no-untyped-def]
    old_key, old_id = settings.ATHENA_AUDIT_KEY, settings.ATHENA_AUDIT_KEY_ID
    _events(2)
    settings.ATHENA_AUDIT_KEY, settings.ATHENA_AUDIT_KEY_ID = "the rotated audit key, 32+ characters", "2"
    settings.ATHENA_AUDIT_OLD_KEYS = [f"{old_id}:{old_key}"]
    newer = _events(1)[0]
    assert newer.key_id == "2"
    assert audit_verify().ok
    settings.ATHENA_AUDIT_OLD_KEYS = []
    report = audit_verify()
    assert not report.ok and "unknown audit key id" in report.reason


def test_audit_writes_commit_synchronously() -> None:
    with connection.cursor() as cursor:
        cursor.execute("SHOW synchronous_commit")
        assert cursor.fetchone() == ("on",), "the server must not run with synchronous_commit=off"
    with transaction.atomic():
        # even where a session lowered it, the audit write's transaction commits synchronously
        with connection.cursor() as cursor:
            cursor.execute("SET LOCAL synchronous_commit = off")
        audit_record(kind="question", actor="alice", payload={})
        with connection.cursor() as cursor:
            cursor.execute("SHOW synchronous_commit")
            assert cursor.fetchone() == ("on",)


def test_checkpoint_signature_is_an_hmac_of_its_body(settings, audit_checkpoint_file: Path) -> None:  # type: ignore[no-untyped-def]
    _events(1)
    checkpoint = audit_checkpoint_write()
    assert checkpoint is not None
    record = json.loads(audit_checkpoint_file.read_text())
    body = canonical_json({k: v for k, v in record.items() if k != "mac"}).encode()
    assert record["mac"] == hmac.new(settings.ATHENA_AUDIT_KEY.encode(), body, hashlib.sha256).hexdigest()


def test_checkpoint_command_says_when_nothing_new_was_written(audit_checkpoint_file: Path) -> None:  # type: ignore[no-untyped-def]
    """`audit_verify --checkpoint` with no event since the last checkpoint wrote nothing but said it had."""
    from io import StringIO

    head = _events()[-1].pk

    def run() -> str:
        out = StringIO()
        call_command("audit_verify", "--checkpoint", stdout=out)
        return out.getvalue()

    assert f"checkpoint written at event {head}" in run()
    lines = audit_checkpoint_file.read_text().splitlines()
    assert f"no checkpoint written: the last one already covers the head (event {head})" in run()
    assert audit_checkpoint_file.read_text().splitlines() == lines
