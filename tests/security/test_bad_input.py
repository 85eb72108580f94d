"""Adversarial input never gives a server error nor a silently wrong result: values the database cannot hold
(NUL, lone surrogates, non-finite numbers), wrong JSON types, repeated parameters, numbers past the database's
range, and operator commands given bad files. Each case is a 4xx (or a CommandError) with a clear message, and
what must be audited still is."""

from __future__ import annotations

import pytest

from athena import throttling
from audit.models import AuditEvent
from tests.api import client_for, make_user

pytestmark = [pytest.mark.integration, pytest.mark.django_db]


@pytest.fixture()
def uploader(settings, tmp_path):  # type: ignore[no-untyped-def]
    settings.MEDIA_ROOT = tmp_path / "media"
    user = make_user("uploader", "employees")
    throttling.user_counters_clear(user)
    yield user
    throttling.user_counters_clear(user)


def _multipart(disposition: str, content: bytes = b"hello there") -> tuple[bytes, str]:
    boundary = "athena-test-boundary"
    body = (
        f"--{boundary}\r\nContent-Disposition: {disposition}\r\nContent-Type: text/plain\r\n\r\n".encode()
        + content
        + f"\r\n--{boundary}--\r\n".encode()
    )
    return body, f"multipart/form-data; boundary={boundary}"


# --- the audit log keeps a refusal whatever characters the request quoted ------------------------------------


def test_an_upload_field_named_with_a_nul_is_refused_and_the_refusal_audited(uploader) -> None:  # type: ignore[no-untyped-def]
    # the refusal quotes the unknown field's name; PostgreSQL's JSONB cannot hold its NUL, and writing the
    # upload_refused event failed: a 500, and the refusal went unaudited
    body, content_type = _multipart('form-data; name="fi\x00le"; filename="notes.txt"')
    client = client_for(uploader)
    client.raise_request_exception = False
    response = client.generic("POST", "/api/v1/documents/upload", body, content_type=content_type)
    assert response.status_code == 400, response.content
    assert "unknown field" in response.json()["error"]["message"]
    (event,) = AuditEvent.objects.filter(kind="upload_refused", actor="uploader")
    assert event.payload["message"] == "unknown field(s): fi\ufffdle"


def test_an_audit_event_keeps_what_the_database_cannot_hold_readable() -> None:
    from audit.services import audit_record, audit_verify

    event = audit_record(
        kind="test_event",
        actor="op\x00erator",
        verdict="re\ud800fused",
        documents=["a\x00.md"],
        payload={"k\x00ey": ["v\x00", "\udcff", float("nan")], "n": float("inf")},
    )
    event.refresh_from_db()
    assert event.actor == "op\ufffderator" and event.verdict == "re\ufffdfused"
    assert event.documents == ["a\ufffd.md"]
    assert event.payload == {"k\ufffdey": ["v\ufffd", "\ufffd", "nan"], "n": "inf"}
    assert audit_verify().ok  # hashed as stored
