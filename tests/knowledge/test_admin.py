"""The document admin's list filters name every value they offer: a document without a department or vendor
(the empty value) is offered as "(blank)", not as a link with no text that a screen reader cannot name. The
group pickers and filters of the document and user admin stay small with an organisation's thousands of
groups."""

from __future__ import annotations

import re

import pytest
from django.contrib.auth.models import Group, Permission
from django.test import Client

from athena.services import ROLE_ADMIN
from knowledge.models import Document
from tests.factories import DocumentFactory, UserFactory

pytestmark = [pytest.mark.django_db, pytest.mark.integration]


def test_the_document_filters_name_the_empty_value() -> None:
    DocumentFactory(vendor="", department="")
    DocumentFactory(vendor="Arista", department="NOC")
    client = Client()
    client.force_login(UserFactory(username="curator", groups=(ROLE_ADMIN,), superuser=True))
    page = client.get("/admin/knowledge/document/")
    assert page.status_code == 200
    html = page.content.decode()
    for field in ("vendor", "department"):
        links = dict(re.findall(rf'<a href="\?{field}=([^"&]*)"[^>]*>\s*([^<]*?)\s*</a>', html))
        assert links.get("") == "(blank)", (field, links)
    # a value is filtered on as before
    assert "Arista" in client.get("/admin/knowledge/document/?vendor=Arista").content.decode()


def test_the_group_pickers_and_filters_hold_no_list_of_every_group() -> None:
    # an organisation's 2,000 groups made the document's and the user's change forms a picker of every group
    # (1-2 s, 120 KiB) and each list page a filter link per group; now a box that searches the groups by name
    Group.objects.bulk_create([Group(name=f"team-{i:04d}") for i in range(300)])
    document = DocumentFactory(
        source="runbook.md", access_tier="restricted", groups=["team-0007", ROLE_ADMIN]
    )
    member = UserFactory(username="member", groups=("team-0007",))
    curator = UserFactory(username="curator", groups=(ROLE_ADMIN,), superuser=True)
    client = Client()
    client.force_login(curator)
    pages = {
        "document form": f"/admin/knowledge/document/{document.pk}/change/",
        "document list": "/admin/knowledge/document/",
        "user form": f"/admin/auth/user/{member.pk}/change/",
        "user list": "/admin/auth/user/",
    }
    for label, url in pages.items():
        html = client.get(url).content.decode()
        named = set(re.findall(r"team-\d{4}", html))
        assert named <= {"team-0007"}, (label, len(named))  # only a chosen group, never the other 299
    form = client.get(pages["document form"]).content.decode()
    assert re.search(r'<option value="\d+" selected>team-0007</option>', form)
    # the box searches the groups by name
    found = client.get(
        "/admin/autocomplete/",
        {
            "app_label": "knowledge",
            "model_name": "document",
            "field_name": "allowed_groups",
            "term": "team-02",
        },
    ).json()
    assert {row["text"] for row in found["results"]} <= {f"team-{i:04d}" for i in range(200, 300)}
    assert found["results"] and found["pagination"]["more"]
    # the lists are filtered by a typed group name, keeping the page's other filters
    listed = client.get(
        "/admin/knowledge/document/", {"allowed_groups__name": "team-0007", "status": "indexed"}
    )
    assert "runbook.md" in listed.content.decode()
    assert 'name="status" value="indexed"' in listed.content.decode()
    other = client.get("/admin/knowledge/document/", {"allowed_groups__name": "team-0008"}).content.decode()
    assert "runbook.md" not in other
    users = client.get("/admin/auth/user/", {"groups__name": "team-0007"}).content.decode()
    assert re.findall(r'<th class="field-username"><a [^>]*>([^<]*)</a>', users) == ["member"]


def test_the_group_search_box_answers_only_who_may_view_groups() -> None:
    Group.objects.create(name="team-0001")
    staff = UserFactory(username="editor", groups=(ROLE_ADMIN,))
    staff.is_staff = True
    staff.save(update_fields=["is_staff"])
    staff.user_permissions.add(*Permission.objects.filter(codename__in=["view_document", "change_document"]))
    client = Client()
    client.force_login(staff)
    query = {
        "app_label": "knowledge",
        "model_name": "document",
        "field_name": "allowed_groups",
        "term": "team",
    }
    assert client.get("/admin/autocomplete/", query).status_code == 403
    staff.user_permissions.add(Permission.objects.get(codename="view_group"))
    assert [row["text"] for row in client.get("/admin/autocomplete/", query).json()["results"]] == [
        "team-0001"
    ]


def test_the_document_admin_offers_no_add_form_that_makes_a_document_nothing_indexes() -> None:
    # a document added by hand had no source file: "added successfully", then "Pending" at version 0 for ever
    client = Client()
    client.force_login(UserFactory(username="curator", groups=(ROLE_ADMIN,), staff=True, superuser=True))
    assert client.get("/admin/knowledge/document/add/").status_code == 403
    created = client.post(
        "/admin/knowledge/document/add/",
        {"source": "manual/notes.md", "title": "Notes", "doc_type": "other", "access_tier": "internal"},
    )
    assert created.status_code == 403
    assert not Document.objects.filter(source="manual/notes.md").exists()
    listing = client.get("/admin/knowledge/document/").content.decode()
    assert "/admin/knowledge/document/add/" not in listing


def test_an_ingest_run_reads_as_its_progress_and_time_not_a_dict() -> None:
    from datetime import timedelta

    from knowledge.models import IngestRun
    from knowledge.services import IngestSummary

    run = IngestRun.objects.create(root="/srv/docs", total=5, counts=IngestSummary().as_dict())
    counts = {**run.counts, "new": 2, "unchanged": 1, "chunks": 9, "stage_seconds": {"embed": 4.25}}
    IngestRun.objects.filter(pk=run.pk).update(
        counts=counts, status="finished", finished_at=run.started_at + timedelta(seconds=12.5)
    )
    client = Client()
    client.force_login(UserFactory(username="curator", groups=(ROLE_ADMIN,), staff=True, superuser=True))
    html = client.get("/admin/knowledge/ingestrun/").content.decode()
    assert "3 of 5 file(s) done: 2 new, 0 changed, 1 unchanged, 0 deleted, 0 failed" in html
    assert "took 12.5 s" in html and "embed 4.25" in html
    # no raw dict, and no "seconds: 0.0" that a run never updates
    assert "&#x27;seconds&#x27;: 0.0" not in html and "{&#x27;new&#x27;" not in html


def test_the_admin_index_names_the_entities_in_english() -> None:
    client = Client()
    client.force_login(UserFactory(username="curator", groups=(ROLE_ADMIN,), staff=True, superuser=True))
    html = client.get("/admin/").content.decode()
    assert ">Entities<" in html and "Entitys" not in html


def test_an_admin_deletes_a_document_with_its_chunks_and_links() -> None:
    # the read-only chunk and link admins made Django refuse it: "Cannot delete document ... chunk, document link"
    from knowledge.models import Chunk, DocumentLink

    DocumentFactory(source="factory/target.md", title="Target runbook")
    document = DocumentFactory(
        source="factory/retired.md",
        title="Retired procedure",
        body="Reset the session as in [the target runbook](target.md); the keepalive is 60 seconds.",
    )
    assert Chunk.objects.filter(document=document).exists()
    assert DocumentLink.objects.filter(source=document).exists()
    client = Client()
    client.force_login(UserFactory(username="curator", groups=(ROLE_ADMIN,), staff=True, superuser=True))
    page = f"/admin/knowledge/document/{document.pk}/delete/"

    confirm = client.get(page).content.decode()
    assert "Cannot delete" not in confirm and "Are you sure" in confirm
    assert client.post(page, {"post": "yes"}).status_code == 302
    assert not Document.objects.filter(pk=document.pk).exists()
    assert not Chunk.objects.filter(document_id=document.pk).exists()
    assert Document.objects.filter(source="factory/target.md").exists()


def test_a_document_an_admin_deletes_or_tombstones_is_in_the_audit_log() -> None:
    # neither left a trace: the compliance search for who removed a document found nothing
    from audit.models import AuditEvent

    deleted = DocumentFactory(source="factory/deleted.md")
    tombstoned = DocumentFactory(source="factory/tombstoned.md")
    admin_user = UserFactory(username="curator", groups=(ROLE_ADMIN,), staff=True, superuser=True)
    client = Client()
    client.force_login(admin_user)

    assert client.post(f"/admin/knowledge/document/{deleted.pk}/delete/", {"post": "yes"}).status_code == 302
    changelist = "/admin/knowledge/document/"
    assert (
        client.post(changelist, {"action": "tombstone", "_selected_action": [tombstoned.pk]}).status_code
        == 302
    )

    events = list(AuditEvent.objects.filter(kind="documents_removed").order_by("id"))
    assert [(e.actor, e.documents, e.payload["how"]) for e in events] == [
        ("curator", ["factory/deleted.md"], "deleted in the admin"),
        ("curator", ["factory/tombstoned.md"], "tombstoned in the admin"),
    ]
    assert Document.objects.get(pk=tombstoned.pk).status == "tombstoned"
    # tombstoned again: left as it was, and not recorded as removed twice
    client.post(changelist, {"action": "tombstone", "_selected_action": [tombstoned.pk]})
    assert AuditEvent.objects.filter(kind="documents_removed").count() == 2


def test_a_bulk_delete_is_one_audited_transaction_and_view_only_staff_remove_nothing() -> None:
    from audit.models import AuditEvent
    from knowledge.models import Chunk

    first = DocumentFactory(source="factory/first.md", body="The first runbook restarts the resolver.")
    second = DocumentFactory(source="factory/second.md", body="The second runbook drains the edge router.")
    viewer = UserFactory(username="auditor-staff", staff=True)
    viewer.user_permissions.add(Permission.objects.get(codename="view_document"))
    changelist = "/admin/knowledge/document/"
    client = Client()
    client.force_login(viewer)
    # actions need the right they stand for: a staff member who may only view documents removes none
    for action in ("tombstone", "delete_selected", "reingest"):
        client.post(changelist, {"action": action, "_selected_action": [first.pk], "post": "yes"})
    assert Document.objects.get(pk=first.pk).status == "indexed"
    assert not AuditEvent.objects.filter(kind="documents_removed").exists()

    client.force_login(UserFactory(username="curator", groups=(ROLE_ADMIN,), staff=True, superuser=True))
    selected = {"action": "delete_selected", "_selected_action": [first.pk, second.pk]}
    confirm = client.post(changelist, selected).content.decode()
    # the documents by name and the rest counted, no chunk's text
    assert "Are you sure" in confirm and confirm.count("Document: ") == 2 and "Chunks: 2" in confirm
    assert "restarts the resolver" not in confirm
    assert client.post(changelist, {**selected, "post": "yes"}).status_code == 302
    assert not Document.objects.filter(pk__in=[first.pk, second.pk]).exists()
    assert not Chunk.objects.filter(document_id__in=[first.pk, second.pk]).exists()
    (event,) = AuditEvent.objects.filter(kind="documents_removed")
    assert (event.actor, sorted(event.documents), event.payload["count"]) == (
        "curator",
        ["factory/first.md", "factory/second.md"],
        2,
    )


def _change_data(client: Client, document: Document, **fields: str) -> dict[str, str]:
    """The document change form's POST as the admin page sends it (its hidden fields included), with `fields`
    changed."""
    change = f"/admin/knowledge/document/{document.pk}/change/"
    data = {
        "source": document.source,
        "title": document.title,
        "access_tier": document.access_tier,
        "doc_type": document.doc_type,
        "analyzer_version": document.analyzer_version,
        "metadata": "{}",
        "expires_at_0": "",
        "expires_at_1": "",
        **fields,
    }
    for hidden in client.get(change).context["adminform"].form.hidden_fields():
        data[hidden.html_name] = hidden.value()
    return data


def test_an_admin_who_closes_a_document_to_everyone_is_told_so() -> None:
    # saved "successfully", the document then vanished from the admin's own list with no word why
    document = DocumentFactory(source="factory/handover.md", title="Shift handover")
    client = Client()
    client.force_login(UserFactory(username="curator", groups=(ROLE_ADMIN,), staff=True, superuser=True))
    change = f"/admin/knowledge/document/{document.pk}/change/"
    data = _change_data(client, document, access_tier="restricted")
    page = client.post(change, data, follow=True).content.decode()
    assert "can now be read by no one" in page
    assert f"PUT /api/v1/documents/{document.pk}/acl" in page
    # a change that leaves the document readable says nothing of the kind
    other = DocumentFactory(source="factory/open.md", title="Open notes")
    change = f"/admin/knowledge/document/{other.pk}/change/"
    data = _change_data(client, other, title="Open notes, renamed", access_tier="internal")
    page = client.post(change, data, follow=True).content.decode()
    assert "was changed successfully" in page and "can now be read by" not in page


def test_a_save_that_hides_the_document_from_its_admin_links_to_no_page_they_cannot_open() -> None:
    # Django's "changed successfully" linked to the document's change page, and "Save and continue editing"
    # went back there: the page no longer opens for the admin who closed the document
    document = DocumentFactory(source="factory/keys.md", title="Key ceremony")
    client = Client()
    client.force_login(UserFactory(username="curator", groups=(ROLE_ADMIN,), staff=True, superuser=True))
    change = f"/admin/knowledge/document/{document.pk}/change/"
    data = _change_data(client, document, access_tier="restricted")
    for button in ({}, {"_continue": "1"}):
        Document.objects.filter(pk=document.pk).update(access_tier="internal")  # open to the admin again
        response = client.post(change, {**data, **button})
        assert response.status_code == 302 and response["Location"] == "/admin/knowledge/document/", button
        page = client.get(response["Location"])
        html = page.content.decode()
        assert change not in html, button  # no link to the page that no longer opens
        assert "The document “Key ceremony” was changed successfully." in html
        assert "can now be read by no one" in html
        assert client.get(change).status_code != 200  # what such a link led to
    # a save that leaves the document readable keeps Django's message, its link and "continue editing"
    Document.objects.filter(pk=document.pk).update(access_tier="internal")
    data["access_tier"] = "internal"
    response = client.post(change, {**data, "_continue": "1"})
    assert response["Location"] == change
    assert f'<a href="{change}">Key ceremony</a>' in client.get(change).content.decode()
