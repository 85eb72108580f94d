"""Compliance API and pages: search, event detail, CSV/JSONL export, chain status; compliance role only."""

from __future__ import annotations

import csv
import io
import json
import re
from urllib.parse import quote

import pytest
from rest_framework.test import APIClient

from audit.models import AuditEvent
from audit.services import audit_record
from tests.api import make_user

pytestmark = [pytest.mark.django_db, pytest.mark.integration]


@pytest.fixture()
def events(db):  # type: ignore[no-untyped-def]
    alice = make_user("alice", "employees")
    audit_record(
        kind="question",
        actor=alice,
        verdict="answered",
        documents=["public/ntp.md"],
        payload={"question": "How do I fix NTP drift?", "retrieved_chunks": [{"chunk_id": 7}]},
    )
    audit_record(
        kind="question",
        actor=alice,
        verdict="abstained",
        documents=[],
        payload={"question": "Who won the match?", "answer": 'Set DocumentRoot "/www/example" (naïve café).'},
    )
    audit_record(
        kind="upload",
        actor="bob",
        verdict="indexed",
        documents=["uploads/2/notes.md"],
        payload={"document": "uploads/2/notes.md"},
    )
    return AuditEvent.objects.order_by("id")


@pytest.fixture()
def auditor() -> APIClient:
    client = APIClient()
    client.force_authenticate(make_user("auditor", "compliance"))
    return client


def test_search_filters(events, auditor) -> None:  # type: ignore[no-untyped-def]
    def count(query: str) -> int:
        response = auditor.get(f"/api/v1/audit/events?{query}")
        assert response.status_code == 200, response.content
        return response.json()["count"]

    assert count("") == 3
    assert count("user=alice") == 2
    assert count("verdict=abstained") == 1
    assert count("document=public/ntp.md") == 1
    assert count("document=ntp") == 1
    assert count("kind=upload") == 1
    assert count("text=match") == 1
    # words as a person reads them: a quoted phrase inside a value, not the JSON around the values
    assert count("text=" + quote('"/www/example"')) == 1
    assert count("text=" + quote('question":')) == 0
    assert count("text=" + quote('"')) == 1
    assert count("text=" + quote("naïve café")) == 1
    assert count("since=2000-01-01&until=2999-12-31") == 3
    assert count("until=2000-01-01") == 0
    assert count("until=9999-12-31") == 3  # the last day a date can hold: no end (it overflowed into a 500)
    assert count("since=9999-12-31") == 0
    first = auditor.get("/api/v1/audit/events?limit=1").json()["results"][0]
    assert first["id"] == events.last().pk  # newest first
    audit_record(kind="question", actor="carol", verdict="answered", documents=["old/public/ntp.md"])
    # a document matches every id that holds it, whatever else is asked (a narrower query never finds more)
    assert count("document=public/ntp.md") == 2
    assert count("document=public/ntp.md&user=carol") == 1
    assert count("document=old/public/ntp.md") == 1


@pytest.mark.parametrize(
    "query",
    ["since=yesterday", "since=2025-02-01&until=2025-01-01", "limit=0", "limit=abc", "user=" + "x" * 200],
)
def test_search_rejects_bad_parameters(events, auditor, query) -> None:  # type: ignore[no-untyped-def]
    response = auditor.get(f"/api/v1/audit/events?{query}")
    assert response.status_code == 400
    assert response.json()["error"]["code"] == "invalid"


def test_a_rule_across_filters_reads_without_the_field_key(events, auditor) -> None:  # type: ignore[no-untyped-def]
    response = auditor.get("/api/v1/audit/events?since=2025-02-01&until=2025-01-01")
    assert response.json()["error"]["message"] == "'since' is after 'until'"


def test_event_detail_and_chain_status(events, auditor) -> None:  # type: ignore[no-untyped-def]
    first = events.first()
    detail = auditor.get(f"/api/v1/audit/events/{first.pk}").json()
    assert detail["payload"]["retrieved_chunks"] == [{"chunk_id": 7}] and detail["hash"] == first.hash
    assert auditor.get("/api/v1/audit/events/99999999").status_code == 404
    chain = auditor.get("/api/v1/audit/chain").json()
    assert chain["ok"] is True and chain["checked"] == 3 and chain["first_broken_id"] is None


def test_exports(events, auditor) -> None:  # type: ignore[no-untyped-def]
    response = auditor.get("/api/v1/audit/export.csv?user=alice")
    assert response.status_code == 200 and response["Content-Type"].startswith("text/csv")
    rows = list(csv.DictReader(io.StringIO(b"".join(response.streaming_content).decode())))
    assert [r["verdict"] for r in rows] == ["answered", "abstained"]
    assert json.loads(rows[0]["payload"])["question"] == "How do I fix NTP drift?"
    response = auditor.get("/api/v1/audit/export.jsonl")
    lines = [json.loads(line) for line in b"".join(response.streaming_content).decode().splitlines()]
    assert [line["kind"] for line in lines][:3] == ["question", "question", "upload"]
    assert lines[0]["hash"] == events.first().hash
    assert auditor.get("/api/v1/audit/export.xml").status_code == 404
    # the export itself is on the record
    assert AuditEvent.objects.filter(kind="audit_export", actor="auditor").count() == 2


@pytest.mark.parametrize("groups", [("employees",), ("employees", "kb-admins"), ()])
def test_non_compliance_users_cannot_read_the_audit_log(events, groups) -> None:  # type: ignore[no-untyped-def]
    user = make_user("someone", *groups)
    user.is_superuser = "kb-admins" in groups
    user.save()
    client = APIClient()
    client.force_authenticate(user)
    for url in (
        "/api/v1/audit/events",
        f"/api/v1/audit/events/{events.first().pk}",
        "/api/v1/audit/chain",
        "/api/v1/audit/export.csv",
        "/api/v1/audit/export.jsonl",
    ):
        response = client.get(url)
        assert response.status_code == 403, url
        assert response.json()["error"]["code"] == "permission_denied"
    assert not AuditEvent.objects.filter(kind="audit_export").exists()


# --- pages -----------------------------------------------------------------------------------------------------


def test_compliance_pages(events, client) -> None:  # type: ignore[no-untyped-def]
    make_user("auditor", "compliance")
    client.login(username="auditor", password="pw")
    page = client.get("/compliance/?user=alice&verdict=answered")
    assert page.status_code == 200
    html = page.content.decode()
    assert "How do I fix NTP drift?" in html and "Who won the match?" not in html
    assert "Hash chain intact" in html
    assert "/api/v1/audit/export.csv?user=alice&amp;verdict=answered" in html
    first = events.first()
    detail = client.get(f"/compliance/events/{first.pk}").content.decode()
    assert first.hash in detail and "retrieved_chunks" in detail
    assert client.get("/compliance/events/99999999").status_code == 404
    bad = client.get("/compliance/?since=not-a-date")
    assert bad.status_code == 200 and "since" in bad.content.decode()
    # one filter that does not parse shows no events, not the whole log under the other filters' names
    bad = client.get("/compliance/?user=alice&since=not-a-date")
    assert bad.status_code == 200 and bad.context["total"] == 0 and not bad.context["events"]
    assert "Who won the match?" not in bad.content.decode()
    crossed = client.get("/compliance/?since=2025-02-01&until=2025-01-01")
    # named by the form's labels, not the query's parameter names, which the page shows nowhere
    assert crossed.context["errors"] == [
        "The From day is after the To day: no event can match. Swap them or clear one."
    ]
    assert client.get("/compliance/?until=9999-12-31").context["total"] == 3
    assert client.get("/compliance/?offset=99999999999999999999").status_code == 200  # bigint overflow before
    # a misnamed filter shows no events and names itself, and its export links are not the whole log's
    misnamed = client.get("/compliance/?actor=bob")
    assert misnamed.context["errors"] == ["unknown filter(s): actor"] and misnamed.context["total"] == 0
    assert "export.csv" not in misnamed.content.decode()  # no link that would export the whole log


def test_compliance_pages_refuse_others(events, client) -> None:  # type: ignore[no-untyped-def]
    assert client.get("/compliance/").status_code == 302  # to the login page
    make_user("alice2", "employees", "kb-admins")
    client.login(username="alice2", password="pw")
    assert client.get("/compliance/").status_code == 403
    assert client.get(f"/compliance/events/{events.first().pk}").status_code == 403


def test_chain_break_is_shown_on_the_page(events, client, tamper) -> None:  # type: ignore[no-untyped-def]
    victim = events.first()
    tamper("audit_no_update", "UPDATE audit_auditevent SET verdict = 'x' WHERE id = %s", [victim.pk])
    make_user("auditor", "compliance")
    client.login(username="auditor", password="pw")
    assert "BROKEN at event" in client.get("/compliance/").content.decode()


def test_the_compliance_page_names_a_kind_or_verdict_no_event_ever_had(events, client) -> None:  # type: ignore[no-untyped-def]
    """A search for a kind or verdict that no event has ever had (a typo) says so and lists the recorded ones,
    where it used to read as "nothing happened"; a valid search with no result (a recorded kind, another day)
    says nothing of the kind. The fields offer the recorded values."""
    make_user("auditor", "compliance")
    client.login(username="auditor", password="pw")

    typo = client.get("/compliance/?kind=quesiton&verdict=answred")
    assert typo.status_code == 200 and typo.context["total"] == 0
    kinds, verdicts = typo.context["notes"]
    assert kinds.startswith("No event has ever had the kind 'quesiton'. Recorded kinds: ")
    assert {"question", "upload"} <= set(kinds.split(": ")[1].rstrip(".").split(", "))
    assert verdicts.startswith("No event has ever had the verdict 'answred'. Recorded verdicts: ")
    assert {"answered", "abstained", "indexed"} <= set(verdicts.split(": ")[1].rstrip(".").split(", "))
    assert "No event has ever had the kind" in typo.content.decode()
    quiet_day = client.get("/compliance/?kind=QUESTION&since=2099-01-01")
    assert quiet_day.context["total"] == 0 and quiet_day.context["notes"] == []
    found = client.get("/compliance/?kind=question")
    assert found.context["total"] == 2 and found.context["notes"] == []
    html = found.content.decode()
    assert 'list="recorded-kinds"' in html and '<option value="upload">' in html
    assert 'list="recorded-verdicts"' in html and '<option value="abstained">' in html


def test_the_day_filters_say_whose_days_they_are(events, client, auditor) -> None:  # type: ignore[no-untyped-def]
    # a day is a UTC day (00:00 to 24:00 UTC, `until` included): compliance staff in Berlin or Kolkata reading
    # "From 2026-03-29" as their own day missed the events of their first hours of it, and nothing said so
    make_user("auditor-page", "compliance")
    client.login(username="auditor-page", password="pw")
    html = client.get("/compliance/").content.decode()
    assert '<label for="f-since">From (UTC day)</label>' in html
    assert '<label for="f-until">To (UTC day, included)</label>' in html
    schema = auditor.get("/api/v1/schema", {"format": "json"}).json()
    parameters = {p["name"]: p for p in schema["paths"]["/api/v1/audit/events"]["get"]["parameters"]}
    assert "UTC" in parameters["since"]["description"] and "UTC" in parameters["until"]["description"]


def test_a_results_row_names_every_document_with_the_cited_ones_first(client) -> None:  # type: ignore[no-untyped-def]
    # the column listed an event's documents alphabetically and cut them at 120 characters with "…": the
    # restricted document an answer cited sorted last and was the one hidden behind the ellipsis
    retrieved = [f"shared/runbook-{i:02d}.md" for i in range(10)]
    audit_record(
        kind="question",
        actor=make_user("asker", "employees"),
        verdict="answered",
        documents=[*retrieved, "vault/zz-escrow.md"],
        payload={
            "question": "Where is the escrow kept?",
            "retrieved_chunks": [{"document": source} for source in [retrieved[7], "vault/zz-escrow.md"]],
            "citations": [
                {"document": retrieved[7], "access_tier": "internal"},
                {"document": "vault/zz-escrow.md", "access_tier": "restricted"},
            ],
        },
    )
    make_user("auditor", "compliance")
    client.login(username="auditor", password="pw")
    (cell,) = _documents_cells(client.get("/compliance/?kind=question").content.decode())
    assert "…" not in cell and "11 documents:" in cell
    head, more = cell.split("<details>")
    # the cited ones lead, the restricted one first, each with the tier it was cited under
    assert head.index("vault/zz-escrow.md") < head.index(retrieved[7])
    assert 'vault/zz-escrow.md <em class="cited">(cited, restricted)</em>' in head
    assert f'{retrieved[7]} <em class="cited">(cited, internal)</em>' in head
    # no name is hidden: the rest open under "and N more", each once
    assert "<summary>and 8 more</summary>" in more
    named = re.findall(r'<span class="document">([^<]+?)(?: <em|</span>)', cell)
    assert sorted(named) == sorted([*retrieved, "vault/zz-escrow.md"])
    # an event with one document names it without a count; one with none shows a dash
    audit_record(kind="upload", actor="bob", verdict="indexed", documents=["uploads/1/a.md"])
    audit_record(kind="login_failed", actor="bob")
    cells = _documents_cells(client.get("/compliance/").content.decode())
    assert [re.sub(r"<[^>]+>| ", "", cell) for cell in cells[:2]] == ["—", "uploads/1/a.md"]
    # a folder's removal names thousands: the row's list stops at 50 and sends the reader to the event's page
    removed = audit_record(
        kind="documents_removed",
        actor="ops",
        verdict="removed",
        documents=[f"old/{i:04d}.md" for i in range(1200)],
    )
    (cell,) = _documents_cells(client.get("/compliance/?kind=documents_removed").content.decode())
    assert "1200 documents:" in cell and "<summary>and 1197 more</summary>" in cell
    assert len(re.findall(r'<span class="document">', cell)) == 3 + 50
    assert f'and 1147 others: <a href="/compliance/events/{removed.pk}">' in cell


def _documents_cells(html: str) -> list[str]:
    """The documents column of each results row, its white space collapsed."""
    tbody = html.split('<table id="audit-results">')[1].split("</table>")[0]
    rows = re.findall(r"<tr>(.*?)</tr>", tbody.split("<tbody>")[1], re.S)
    return [re.sub(r"\s+", " ", re.findall(r"<td[^>]*>(.*?)</td>", row, re.S)[5]).strip() for row in rows]
