"""The optional syslog sink: with ATHENA_AUDIT_SYSLOG set, each committed audit event's chain entry goes to a
UDP syslog receiver (here a socket of the test's own); unset, nothing is sent."""

from __future__ import annotations

import json
import socket

import pytest

from audit.services import audit_record

pytestmark = [pytest.mark.integration, pytest.mark.django_db]


@pytest.fixture()
def receiver():  # type: ignore[no-untyped-def]
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sock.bind(("127.0.0.1", 0))
    sock.settimeout(2)
    yield sock
    sock.close()


def test_a_committed_event_reaches_the_syslog_receiver(
    settings, receiver, django_capture_on_commit_callbacks
):  # type: ignore[no-untyped-def]
    settings.ATHENA_AUDIT_SYSLOG = f"udp://127.0.0.1:{receiver.getsockname()[1]}"
    with django_capture_on_commit_callbacks(execute=True):
        event = audit_record(
            kind="acl_change", actor="admin", verdict="ok", payload={"question": "secret text"}
        )
    datagram = receiver.recv(65535).decode()
    assert datagram.startswith("<134>1 ") and " athena - audit - " in datagram
    entry = json.loads(datagram.split(" audit - ", 1)[1])
    assert entry["id"] == event.pk and entry["hash"] == event.hash and entry["prev_hash"] == event.prev_hash
    assert entry["kind"] == "acl_change" and entry["actor"] == "admin"
    assert "secret text" not in datagram  # the payload stays in the database


def test_nothing_is_sent_by_default_or_for_a_rolled_back_event(
    settings, receiver, django_capture_on_commit_callbacks
):  # type: ignore[no-untyped-def]
    assert settings.ATHENA_AUDIT_SYSLOG == ""
    with django_capture_on_commit_callbacks(execute=True) as callbacks:
        audit_record(kind="acl_change", actor="admin")
    assert callbacks == []
    settings.ATHENA_AUDIT_SYSLOG = f"udp://127.0.0.1:{receiver.getsockname()[1]}"
    with django_capture_on_commit_callbacks(execute=False) as callbacks:  # the transaction never commits
        audit_record(kind="acl_change", actor="admin")
    assert len(callbacks) == 1  # queued for a commit that did not happen: nothing went out
    receiver.settimeout(0.3)
    with pytest.raises(TimeoutError):
        receiver.recv(65535)
