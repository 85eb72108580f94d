"""The list and export APIs refuse query-string parameters they do not know: a misnamed filter (`actor=` for
`user=`, `page=` for `offset=`) returned the unfiltered list, and the audit export the whole log."""

from __future__ import annotations

import pytest

from audit.models import AuditEvent
from audit.services import audit_record
from tests.api import client_for, make_user

pytestmark = [pytest.mark.django_db, pytest.mark.integration]


@pytest.mark.parametrize(
    ("group", "url", "known"),
    [
        ("compliance", "/api/v1/audit/events", "user=bob&limit=5&offset=0"),
        ("compliance", "/api/v1/audit/export.csv", "user=bob&since=2026-01-01"),
        ("compliance", "/api/v1/audit/export.jsonl", "verdict=answered&text=drift"),
        ("employees", "/api/v1/documents", "q=bgp&mine=false&limit=5"),
        ("employees", "/api/v1/conversations", "limit=5&offset=0"),
        ("kb-admins", "/api/v1/curation", "resolved=true&limit=5"),
    ],
)
def test_unknown_query_parameters_are_refused(group, url, known) -> None:  # type: ignore[no-untyped-def]
    client = client_for(make_user("caller", group))
    assert client.get(f"{url}?{known}").status_code == 200
    refused = client.get(f"{url}?{known}&actor=bob&page=2")
    assert refused.status_code == 400
    assert refused.json()["error"]["details"]["unknown"] == ["actor", "page"]


def test_an_export_under_a_misnamed_filter_exports_nothing_and_is_not_audited() -> None:
    audit_record(kind="question", actor="alice", verdict="answered", payload={"question": "q"})
    client = client_for(make_user("auditor", "compliance"))
    exports = AuditEvent.objects.filter(kind="audit_export").count()
    response = client.get("/api/v1/audit/export.csv?actor=bob")
    assert response.status_code == 400 and "actor" in response.json()["error"]["message"]
    assert AuditEvent.objects.filter(kind="audit_export").count() == exports
