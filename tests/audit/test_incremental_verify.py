"""The compliance pages verify the audit chain incrementally: a page load recomputes only the events appended
since the last verification (remembered, signed with the audit key, next to the checkpoints); the full
verification (audit_verify, the checkpoint beat task) still walks the whole chain and reports an edited older
event, and a page still says BROKEN when the recent part is broken."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.test import Client

from audit.models import AuditEvent
from audit.services import audit_record, audit_verify, audit_verify_incremental, verified_state_read
from tests.api import make_user

pytestmark = [pytest.mark.django_db, pytest.mark.integration]


def _events(count: int, start: int = 0) -> list[AuditEvent]:
    return [
        audit_record(kind="question", actor=f"user{i}", verdict="answered", payload={"question": f"q{i}"})
        for i in range(start, start + count)
    ]


@pytest.fixture()
def auditor() -> Client:
    make_user("auditor", "compliance")
    client = Client()
    assert client.login(username="auditor", password="pw")
    return client


def _page_chain(client: Client) -> dict:
    page = client.get("/compliance/")
    assert page.status_code == 200
    return dict(page.context["chain"]) | {"html": page.content.decode()}


def test_the_page_counts_one_verified_event_in_the_singular(auditor) -> None:  # type: ignore[no-untyped-def]
    _events(1)
    assert "Hash chain intact (1 event verified)." in _page_chain(auditor)["html"]


def test_a_page_load_verifies_only_the_events_since_the_last_verification(auditor) -> None:  # type: ignore[no-untyped-def]
    _events(30)
    first = _page_chain(auditor)  # nothing remembered yet: the whole chain
    assert first["ok"] and first["verified_now"] == 30 and first["checked"] == 30
    newer = _events(3, start=30)
    second = _page_chain(auditor)
    assert second["ok"] and second["verified_now"] == 3 and second["checked"] == 33
    assert second["verified_after_id"] == newer[0].pk - 1
    assert "Hash chain intact (33 events verified)" in second["html"]
    third = _page_chain(auditor)  # nothing new: nothing recomputed
    assert third["ok"] and third["verified_now"] == 0 and third["checked"] == 33
    state = verified_state_read()
    assert state is not None and state.event_id == newer[-1].pk and state.hash == newer[-1].hash


def test_a_tampered_older_event_is_reported_by_the_full_check(auditor, tamper) -> None:  # type: ignore[no-untyped-def]
    events = _events(10)
    assert audit_verify().ok  # the periodic / command verification remembers the head
    victim = events[3]
    tamper("audit_no_update", "UPDATE audit_auditevent SET verdict = 'x' WHERE id = %s", [victim.pk])
    _events(2, start=10)
    page = _page_chain(auditor)
    assert page["verified_now"] == 2  # the page does not walk the older part again...
    full = audit_verify()  # ...the full verification does, and reports the edit
    assert not full.ok and full.first_broken_id == victim.pk and full.verified_now >= 4
    with pytest.raises(CommandError, match=f"chain broken at event {victim.pk}"):
        call_command("audit_verify")
    # once a full check has found it, the pages show it too (the remembered head is dropped)
    assert verified_state_read() is None
    after = _page_chain(auditor)
    assert not after["ok"] and after["first_broken_id"] == victim.pk and "BROKEN at event" in after["html"]


def test_the_periodic_checkpoint_task_runs_the_full_check(auditor, tamper) -> None:  # type: ignore[no-untyped-def]
    from audit.tasks import audit_checkpoint_task

    events = _events(8)
    assert audit_checkpoint_task() == events[-1].pk
    assert _page_chain(auditor)["verified_now"] == 0  # the beat's full check left the head verified
    tamper("audit_no_update", "UPDATE audit_auditevent SET verdict = 'x' WHERE id = %s", [events[2].pk])
    assert audit_checkpoint_task() is None  # the full check refuses to checkpoint a tampered chain
    assert not _page_chain(auditor)["ok"]


def test_the_page_says_broken_when_the_recent_part_is_broken(auditor, tamper) -> None:  # type: ignore[no-untyped-def]
    _events(10)
    assert _page_chain(auditor)["ok"]
    recent = _events(3, start=10)
    tamper("audit_no_update", "UPDATE audit_auditevent SET verdict = 'x' WHERE id = %s", [recent[1].pk])
    page = _page_chain(auditor)
    assert not page["ok"] and page["first_broken_id"] == recent[1].pk and page["verified_now"] == 2
    assert "BROKEN at event" in page["html"]
    # a broken chain is not remembered as verified: the next load reports it again
    assert verified_state_read().event_id == recent[0].pk - 1  # type: ignore[union-attr]
    assert not _page_chain(auditor)["ok"]


def test_a_rewritten_or_deleted_verified_head_is_broken(auditor, tamper) -> None:  # type: ignore[no-untyped-def]
    events = _events(5)
    assert _page_chain(auditor)["ok"]
    head = events[-1]
    tamper("audit_no_delete", "DELETE FROM audit_auditevent WHERE id = %s", [head.pk])
    page = _page_chain(auditor)
    assert not page["ok"] and page["first_broken_id"] == head.pk and "missing" in page["reason"]


def test_a_forged_verified_state_is_ignored(auditor, audit_checkpoint_file: Path, tamper) -> None:  # type: ignore[no-untyped-def]
    events = _events(6)
    tamper("audit_no_update", "UPDATE audit_auditevent SET verdict = 'x' WHERE id = %s", [events[1].pk])
    # someone writes a state claiming the whole (tampered) chain was verified, without the key
    state_file = audit_checkpoint_file.with_name("verified.json")
    state_file.write_text(
        json.dumps(
            {
                "event_id": events[-1].pk,
                "hash": events[-1].hash,
                "checked": 6,
                "key_id": "k1",
                "mac": "0" * 64,
            }
        )
    )
    assert verified_state_read() is None
    report = audit_verify_incremental()  # falls back to the full verification
    assert not report.ok and report.first_broken_id == events[1].pk and report.verified_after_id is None


def test_a_state_left_by_another_log_is_ignored(auditor, tamper) -> None:  # type: ignore[no-untyped-def]
    """A test database created again under the same name (or a restored copy) reuses event ids: the state
    remembered for the old log must not make the new one read as altered."""
    _events(5)
    assert _page_chain(auditor)["ok"]  # remembers the head of this log
    # a new log under the same name: same ids, other events
    tamper("audit_no_delete", "DELETE FROM audit_auditevent", [])
    tamper("audit_no_delete", "SELECT setval(pg_get_serial_sequence('audit_auditevent', 'id'), 1, false)", [])
    _events(7, start=100)
    page = _page_chain(auditor)
    assert page["ok"] and page["checked"] == 7, page


def test_a_broken_log_is_not_walked_again_on_every_page_load(
    auditor, audit_checkpoint_file: Path, tamper
) -> None:  # type: ignore[no-untyped-def]
    """Once a full verification has found a break, the pages show what it found without walking the whole log
    again on each load (at ~27k events a second, a log of millions outlasted the request: the compliance page,
    search included, could not load while the chain was broken). A forged report is ignored; a full check that
    finds the chain intact again clears it."""
    events = _events(10)
    tamper("audit_no_update", "UPDATE audit_auditevent SET verdict = 'x' WHERE id = %s", [events[3].pk])
    assert not audit_verify().ok  # the command or the beat task
    _events(20, start=10)
    for _ in range(2):
        page = _page_chain(auditor)
        assert (
            not page["ok"] and page["first_broken_id"] == events[3].pk and "BROKEN at event" in page["html"]
        )
        assert page["verified_now"] == 0  # nothing recomputed by the page
    report = audit_checkpoint_file.with_name("broken.json")
    forged = json.loads(report.read_text())
    forged["report"]["first_broken_id"] = events[9].pk
    report.write_text(json.dumps(forged))
    walked = _page_chain(auditor)  # not signed: a full verification instead
    assert walked["first_broken_id"] == events[3].pk and walked["verified_now"] == 4
    tamper(
        "audit_no_update", "UPDATE audit_auditevent SET verdict = 'answered' WHERE id = %s", [events[3].pk]
    )
    assert audit_verify().ok and not report.exists()
    assert _page_chain(auditor)["ok"]
