"""Role matrix: what employees, kb-admins, compliance staff and anonymous callers can reach."""

from __future__ import annotations

import json

import pytest
from django.contrib.auth.models import Group
from rest_framework.test import APIClient

from knowledge.models import Document
from tests.api import client_for, make_user

pytestmark = [pytest.mark.django_db, pytest.mark.integration]

ADMIN_ONLY = [
    ("get", "/api/v1/curation"),
    ("post", "/api/v1/curation/1/resolve"),
    ("put", "/api/v1/documents/{doc}/acl"),
    ("post", "/api/v1/documents/{doc}/reingest"),
]
COMPLIANCE_ONLY = [
    ("get", "/api/v1/audit/events"),
    ("get", "/api/v1/audit/events/1"),
    ("get", "/api/v1/audit/chain"),
    ("get", "/api/v1/audit/export.csv"),
    ("get", "/api/v1/audit/export.jsonl"),
]
ANY_SIGNED_IN = [
    ("get", "/api/v1/documents"),
    ("get", "/api/v1/conversations"),
    ("post", "/api/v1/ask"),
    ("post", "/api/v1/documents/upload"),
    ("get", "/api/v1/documents/{doc}"),
    ("get", "/api/v1/passages/1"),
    ("post", "/api/v1/answers/1/feedback"),
]


def call(client: APIClient, method: str, url: str, doc: Document) -> int:
    return getattr(client, method)(url.format(doc=doc.pk), {}, format="json").status_code


@pytest.fixture()
def doc(db) -> Document:  # type: ignore[no-untyped-def]
    return Document.objects.create(source="public/a.md", title="A", status="indexed")


def test_anonymous_reaches_nothing_but_health(doc) -> None:  # type: ignore[no-untyped-def]
    client = client_for(None)
    for method, url in ADMIN_ONLY + COMPLIANCE_ONLY + ANY_SIGNED_IN:
        assert call(client, method, url, doc) == 401, url  # sign in (again), not "forbidden"
    assert client.get("/api/v1/health").status_code in (200, 503)


def test_employee_cannot_reach_admin_or_compliance_data(doc) -> None:  # type: ignore[no-untyped-def]
    client = client_for(make_user("emp", "employees"))
    for method, url in ADMIN_ONLY + COMPLIANCE_ONLY:
        assert call(client, method, url, doc) == 403, url


def test_admin_cannot_read_the_audit_log(doc) -> None:  # type: ignore[no-untyped-def]
    for user in (make_user("kbadmin", "employees", "kb-admins"), make_user("root", superuser=True)):
        client = client_for(user)
        for method, url in COMPLIANCE_ONLY:
            assert call(client, method, url, doc) == 403, url


def test_compliance_cannot_curate(doc) -> None:  # type: ignore[no-untyped-def]
    client = client_for(make_user("auditor", "compliance"))
    for method, url in ADMIN_ONLY:
        assert call(client, method, url, doc) == 403, url


def test_roles_get_past_the_role_check(doc) -> None:  # type: ignore[no-untyped-def]
    admin = client_for(make_user("kbadmin", "kb-admins"))
    assert admin.get("/api/v1/curation").status_code == 200
    # past the role check, the body is validated (not 403)
    assert call(admin, "put", "/api/v1/documents/{doc}/acl", doc) == 400
    auditor = client_for(make_user("auditor", "compliance"))
    assert auditor.get("/api/v1/audit/events").status_code == 200
    assert auditor.get("/api/v1/audit/chain").status_code == 200


def test_admin_document_list_is_acl_filtered_like_anyones(doc) -> None:  # type: ignore[no-untyped-def]
    secret = Document.objects.create(
        source="restricted/s.md", title="S", status="indexed", access_tier="restricted"
    )
    secret.allowed_groups.add(Group.objects.get_or_create(name="vault-admins")[0])
    root = client_for(make_user("root", "kb-admins", superuser=True))
    sources = [d["source"] for d in root.get("/api/v1/documents").json()["results"]]
    assert sources == ["public/a.md"]
    assert root.get(f"/api/v1/documents/{secret.pk}").status_code == 404


def test_django_admin_is_for_staff_only(client) -> None:  # type: ignore[no-untyped-def]
    make_user("emp", "employees")
    client.login(username="emp", password="pw")
    assert client.get("/admin/").status_code == 302  # to the admin login


def test_audit_events_are_read_only_in_the_admin(client) -> None:  # type: ignore[no-untyped-def]
    from audit.services import audit_record

    event = audit_record(kind="question", actor="x", payload={"question": "q"})
    make_user("root", superuser=True)
    client.login(username="root", password="pw")
    # a superuser is no auditor: the audit log is for compliance staff
    assert client.get("/admin/audit/auditevent/").status_code == 403
    assert client.get(f"/admin/audit/auditevent/{event.pk}/change/").status_code == 403
    assert client.get("/admin/agents/curationitem/").status_code == 200
    # records the application makes cannot be added by hand (the forms could only fail with a 500)
    for model in ("curationitem", "conversation", "answer", "feedback"):
        assert client.get(f"/admin/agents/{model}/add/").status_code == 403, model
        assert client.post(f"/admin/agents/{model}/add/", {}).status_code == 403, model
    make_user("root-auditor", "compliance", superuser=True)
    client.login(username="root-auditor", password="pw")
    assert client.get("/admin/audit/auditevent/").status_code == 200
    assert client.get("/admin/audit/auditevent/add/").status_code == 403
    assert client.get(f"/admin/audit/auditevent/{event.pk}/delete/").status_code == 403
    view = client.get(f"/admin/audit/auditevent/{event.pk}/change/")
    assert view.status_code == 200 and b'name="_save"' not in view.content
    assert client.get("/admin/agents/curationitem/").status_code == 200


@pytest.mark.slow
def test_the_django_admin_names_no_document_its_admin_may_not_read(client) -> None:  # type: ignore[no-untyped-def]
    from agents.models import Answer, Conversation, CurationItem
    from knowledge.models import DocumentLink, Entity
    from tests.factories import DocumentFactory

    canary = "CANARY-41d2 vault unseal"
    secret = DocumentFactory(
        source="restricted/vault.md",
        title=canary,
        body="Run vaultctl-unseal-41d2 --shares 5 and keep /etc/vault41d2/unseal.keys offline.",
        access_tier="restricted",
        groups=("vault-admins",),
    )
    readable = DocumentFactory(source="public/readme.md", title="Readme")
    Document.objects.filter(pk=readable.pk).update(superseded_by=secret)
    DocumentLink.objects.create(source=secret, target=readable, target_ref="readme.md")
    assert Entity.objects.filter(mentions__chunk__document=secret).exists()
    curator = make_user("curator", "employees", "kb-admins", superuser=True)
    answer = Answer.objects.create(
        conversation=Conversation.objects.create(user=curator), user=curator, question="How to unseal?"
    )
    item = CurationItem.objects.create(answer=answer, reason="abstained", resolved_document=secret)
    client.login(username="curator", password="pw")
    pages = [
        "/admin/knowledge/document/",
        f"/admin/knowledge/document/{readable.pk}/change/",
        "/admin/knowledge/entity/",
        "/admin/knowledge/documentlink/",
        "/admin/agents/curationitem/",
        f"/admin/agents/curationitem/{item.pk}/change/",
    ]
    for page in pages:
        response = client.get(page)
        assert response.status_code == 200, page
        body = response.content.decode()
        assert canary not in body and "41d2" not in body, page
    # the pointer they cannot read is kept when the admin saves the document, and named to its group's admins
    change = client.get(f"/admin/knowledge/document/{readable.pk}/change/").content.decode()
    assert "a document you cannot read" in change
    form = {
        "source": readable.source,
        "title": "Readme, edited",
        "access_tier": readable.access_tier,
        "doc_type": readable.doc_type,
        "analyzer_version": readable.analyzer_version,
        "metadata": json.dumps(readable.metadata),
    }
    saved = client.post(f"/admin/knowledge/document/{readable.pk}/change/", form)
    assert saved.status_code == 302, saved.content.decode()[:2000]
    readable.refresh_from_db()
    assert readable.title == "Readme, edited" and readable.superseded_by_id == secret.pk
    # a readable pointer to a document removed since stays a choice: saving another change keeps it
    removed = DocumentFactory(source="public/old-readme.md", title="Old readme")
    other = DocumentFactory(source="public/guide.md", title="Guide")
    Document.objects.filter(pk=other.pk).update(superseded_by=removed)
    Document.objects.filter(pk=removed.pk).update(status="tombstoned")
    other.refresh_from_db()
    form = {
        "source": other.source,
        "title": "Guide, edited",
        "access_tier": other.access_tier,
        "doc_type": other.doc_type,
        "analyzer_version": other.analyzer_version,
        "metadata": json.dumps(other.metadata),
        "superseded_by": str(removed.pk),
    }
    assert client.post(f"/admin/knowledge/document/{other.pk}/change/", form).status_code == 302
    other.refresh_from_db()
    assert other.title == "Guide, edited" and other.superseded_by_id == removed.pk
    link = DocumentLink.objects.create(source=readable, target=other, target_ref="guide.md")
    assert client.get(f"/admin/knowledge/documentlink/{link.pk}/delete/").status_code == 403
    make_user("vault-curator", "employees", "kb-admins", "vault-admins", superuser=True)
    client.login(username="vault-curator", password="pw")
    assert canary in client.get(f"/admin/knowledge/document/{readable.pk}/change/").content.decode()
    assert canary in client.get("/admin/agents/curationitem/").content.decode()
