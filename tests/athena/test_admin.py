"""The admin at production table sizes: changelists whose cost does not grow with the table (a bounded count,
no SELECT DISTINCT for a filter, indexed searches) and change forms that do not list a whole table in a
select box."""

from __future__ import annotations

import pytest
from django.contrib import admin
from django.contrib.admin.widgets import ForeignKeyRawIdWidget
from django.contrib.postgres.search import SearchVector
from django.db import connection
from django.test import Client, RequestFactory
from django.test.utils import CaptureQueriesContext

from agents.models import Answer, Conversation, CurationItem, Feedback
from athena.admin import BoundedCountPaginator
from athena.services import ROLE_ADMIN, ROLE_COMPLIANCE, ROLE_EMPLOYEE
from audit.models import AuditEvent
from audit.selectors import audit_event_values
from audit.services import audit_record
from knowledge.models import Chunk, Document, Entity
from tests.factories import DocumentFactory, UserFactory

pytestmark = [pytest.mark.django_db, pytest.mark.integration]

# the tables that grow without bound in an organisation, and the changelist of each
LARGE_CHANGELISTS = {
    Chunk: "/admin/knowledge/chunk/",
    AuditEvent: "/admin/audit/auditevent/",
    Conversation: "/admin/agents/conversation/",
    Answer: "/admin/agents/answer/",
    Feedback: "/admin/agents/feedback/",
    CurationItem: "/admin/agents/curationitem/",
    Entity: "/admin/knowledge/entity/",
}


@pytest.fixture
def boss():  # type: ignore[no-untyped-def]
    return UserFactory(username="boss", groups=(ROLE_EMPLOYEE, ROLE_ADMIN, ROLE_COMPLIANCE), superuser=True)


def _rows(count: int, user, document: Document) -> None:  # type: ignore[no-untyped-def]
    """`count` more rows in every large table (a chunk, an event, a conversation with an answer, its vote
    and curation item, an entity mentioned by the chunk)."""
    start = Chunk.objects.filter(document=document).count()
    chunks = Chunk.objects.bulk_create(
        Chunk(
            document=document,
            ordinal=start + n,
            text=f"passage {start + n} about the keepalive timer",
            content_hash=f"{start + n}",
            active=True,
            acl_open=True,
        )
        for n in range(count)
    )
    Chunk.objects.filter(pk__in=[c.pk for c in chunks]).update(tsv=SearchVector("text", config="english"))
    for n in range(count):
        audit_record(kind="question", actor=user, verdict="answered", payload={"n": n})
        conversation = Conversation.objects.create(user=user, title=f"talk {start + n}")
        answer = Answer.objects.create(
            conversation=conversation, user=user, question=f"Why {n}?", response={}
        )
        Feedback.objects.create(answer=answer, user=user, vote=-1)
        CurationItem.objects.create(answer=answer, reason="downvoted")
        entity = Entity.objects.create(kind="protocol", name=f"proto{start + n}")
        entity.mentions.create(chunk=chunks[n], count=1)


def _changelist(client: Client, url: str) -> tuple[int, list[str], str]:
    with CaptureQueriesContext(connection) as captured:
        response = client.get(url)
    assert response.status_code == 200, url
    sql = [q["sql"] for q in captured.captured_queries]
    return len(sql), sql, response.content.decode()


def test_large_changelists_cost_the_same_queries_at_any_table_size(boss, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """Each large table's changelist counts at most count_limit + 1 rows (a LIMITed count), counts the whole
    table no second time, lists its filters without a SELECT DISTINCT over the table, and runs as many
    queries with 30 rows as with 3 (no query per row). Past the limit the page says "more than"."""
    monkeypatch.setattr(BoundedCountPaginator, "count_limit", 10)
    document = DocumentFactory(source="timers.md", access_tier="internal")
    client = Client()
    client.force_login(boss)
    _rows(3, boss, document)
    few = {url: _changelist(client, url)[0] for url in LARGE_CHANGELISTS.values()}
    _rows(27, boss, document)
    for model, url in LARGE_CHANGELISTS.items():
        assert model.objects.count() > 10, model
        queries, sql, page = _changelist(client, url)
        assert queries == few[url], (url, sql)
        counts = [q for q in sql if "COUNT(" in q.upper()]
        assert counts and all("LIMIT 11" in q for q in counts), (url, counts)
        assert not [q for q in sql if "SELECT DISTINCT" in q.upper()], url
        assert f"more than 10 {model._meta.verbose_name_plural}" in page, url


def test_audit_filters_list_the_values_present(boss) -> None:  # type: ignore[no-untyped-def]
    for kind, verdict in (("question", "answered"), ("login_failed", ""), ("question", "blocked")):
        audit_record(kind=kind, actor=boss, verdict=verdict)
    assert audit_event_values("kind") == sorted(set(AuditEvent.objects.values_list("kind", flat=True)))
    assert audit_event_values("verdict") == ["answered", "blocked"]
    with pytest.raises(ValueError):
        audit_event_values("payload")
    client = Client()
    client.force_login(boss)
    page = client.get("/admin/audit/auditevent/?verdict=blocked").content.decode()
    assert "?verdict=answered" in page and "login_failed" in page
    assert client.get("/admin/audit/auditevent/?q=boss").context["cl"].result_count == 3
    assert client.get("/admin/audit/auditevent/?q=bos").context["cl"].result_count == 0  # exact values


def test_chunk_search_finds_words_and_a_document_through_indexes(boss) -> None:  # type: ignore[no-untyped-def]
    document = DocumentFactory(source="ops/timers.md", body="The routers renegotiate keepalives hourly.")
    DocumentFactory(source="ops/other.md", body="Nothing about that here.")
    client = Client()
    client.force_login(boss)

    def found(term: str) -> set[int]:
        with CaptureQueriesContext(connection) as captured:
            response = client.get("/admin/knowledge/chunk/", {"q": term})
        assert not [q["sql"] for q in captured.captured_queries if "LIKE" in q["sql"].upper()]
        return {chunk.document_id for chunk in response.context["cl"].result_list}

    assert found("keepalive") == {document.pk}  # stemmed words of the text
    assert found("ops/timers.md") == {document.pk}  # a document's source id
    assert found("absent-word") == set()


def test_change_forms_offer_no_select_of_a_whole_table(boss) -> None:  # type: ignore[no-untyped-def]
    """A foreign key to documents, users or answers is an id box with a lookup: a select box listed every row
    (10k documents, 50k answers: change forms of MiBs that took seconds)."""
    request = RequestFactory().get("/admin/")
    request.user = boss
    for model, fields in (
        (Document, ("superseded_by", "owner")),
        (CurationItem, ("resolved_document",)),
        (Feedback, ("answer", "user")),
    ):
        form = admin.site._registry[model].get_form(request, None)
        for name in fields:
            assert isinstance(form.base_fields[name].widget, ForeignKeyRawIdWidget), (model, name)


def test_a_document_id_box_names_only_a_document_its_admin_may_read(boss) -> None:  # type: ignore[no-untyped-def]
    """An admin who types the id of a document outside their groups into a document's "superseded by" box gets
    the form's error, and the page does not name that document beside the box (Django's raw-id widget names
    any row the id is)."""
    import json

    canary = "CANARY-7be1 escrow keys"
    secret = DocumentFactory(
        source="restricted/escrow.md", title=canary, access_tier="restricted", groups=("x",)
    )
    readable = DocumentFactory(source="public/guide.md", title="Guide")
    client = Client()
    client.force_login(boss)
    form = {
        "source": readable.source,
        "title": "Guide, edited",
        "access_tier": readable.access_tier,
        "doc_type": readable.doc_type,
        "analyzer_version": readable.analyzer_version,
        "metadata": json.dumps(readable.metadata),
        "superseded_by": str(secret.pk),
    }
    refused = client.post(f"/admin/knowledge/document/{readable.pk}/change/", form)
    assert refused.status_code == 200 and "Select a valid choice" in refused.content.decode()
    assert canary not in refused.content.decode()
    form["superseded_by"] = str(DocumentFactory(source="public/new-guide.md", title="New guide").pk)
    form["access_tier"] = "no-such-tier"
    named = client.post(f"/admin/knowledge/document/{readable.pk}/change/", form)
    assert named.status_code == 200 and "New guide" in named.content.decode()  # the form error is the tier's


def test_a_bounded_count_is_not_offered_as_the_number_an_action_would_select(boss, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """Past the bounded count, the action bar's "select all" does not name the count's limit + 1 as the number
    of rows: the action would run on every row the list holds ("Select all 11 feedbacks" over millions)."""
    monkeypatch.setattr(BoundedCountPaginator, "count_limit", 10)
    monkeypatch.setattr(admin.site._registry[Feedback], "list_per_page", 5)
    _rows(12, boss, DocumentFactory(source="timers.md", access_tier="internal"))
    client = Client()
    client.force_login(boss)
    page = _changelist(client, "/admin/agents/feedback/")[2]
    assert "Select all 11" not in page and "All 11 selected" not in page, page
    assert "Select all (more than 10) feedbacks" in page and "All (more than 10) selected" in page
    monkeypatch.setattr(BoundedCountPaginator, "count_limit", 100)  # within the limit: the exact count
    page = _changelist(client, "/admin/agents/feedback/")[2]
    assert "Select all 12 feedbacks" in page and "All 12 selected" in page


def test_an_ingest_run_names_no_failed_document_only_how_many(boss) -> None:  # type: ignore[no-untyped-def]
    """A run's counts name each failed file by its source, with its error: a restricted folder's failures were
    listed to every kb-admin, whatever the documents' groups. The run now shows how many failed; each error is on
    its document's page, which lists only documents the admin may read."""
    from knowledge.models import IngestRun

    canary = "restricted/CANARY-4d2e-merger-plan.pdf"
    run = IngestRun.objects.create(
        root="/srv/kb/restricted",
        status="finished",
        total=2,
        counts={"new": 1, "failed": 1, "errors": {canary: f"corrupt: {canary}: damaged PDF"}},
        options={"acl_groups": ["x"], "access_tier": "restricted"},
    )
    client = Client()
    client.force_login(boss)
    for url in ("/admin/knowledge/ingestrun/", f"/admin/knowledge/ingestrun/{run.pk}/change/"):
        response = client.get(url)
        assert response.status_code == 200, url
        page = response.content.decode()
        assert "CANARY-4d2e" not in page, url
        assert "1 failed" in page and "1 error(s)" in page, url  # how many, in words (knowledge.admin)
