"""The compliance search's text (`text=`): found through the payload's trigram index with the results a read of
every payload gives, and a page with its total read in one statement."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import pytest
from django.db import connection, transaction
from django.db.backends.utils import CursorWrapper
from django.test.utils import CaptureQueriesContext

from audit.models import AuditEvent
from audit.selectors import AuditQuery, audit_event_search
from audit.services import audit_record
from tests.api import client_for, make_user

pytestmark = [pytest.mark.django_db, pytest.mark.integration]

# what the icontains lookup on the payload compares, as Django writes it
PAYLOAD_TEXT = 'UPPER("audit_auditevent"."payload"::text)'


@pytest.fixture()
def events(db):  # type: ignore[no-untyped-def]
    alice = make_user("alice", "employees")
    audit_record(
        kind="question",
        actor=alice,
        verdict="answered",
        documents=["public/ntp.md"],
        payload={
            "question": "How do I fix NTP drift?",
            "answer": "Restart chronyd [1].",
            "retrieved_chunks": [],
        },
    )
    audit_record(
        kind="question",
        actor=alice,
        verdict="abstained",
        payload={"question": "Who won the match?", "answer": 'Set DocumentRoot "/www/example" (naïve café).'},
    )
    audit_record(
        kind="question",
        actor="bob",
        verdict="answered",
        payload={"question": "Why is 50% of disk_a used?", "answer": r"Clean C:\temp on the STRASSE host."},
    )
    audit_record(
        kind="upload", actor="bob", documents=["uploads/2/notes.md"], payload={"document": "notes.md"}
    )
    return AuditEvent.objects.order_by("id")


@contextmanager
def _planned_under(settings: tuple[str, ...]) -> Iterator[CursorWrapper]:
    """A cursor whose statements are planned under `settings`: SET LOCAL in a savepoint that is rolled back after
    (released, it would leave them set for the rest of the test's transaction)."""
    with transaction.atomic(), connection.cursor() as cursor:
        for setting in settings:
            cursor.execute(f"SET LOCAL {setting}")
        yield cursor
        transaction.set_rollback(True)


def _found(text: str, *, settings: tuple[str, ...]) -> tuple[list[int], str]:
    """The ids a search for `text` finds, planned under `settings`, and its plan."""
    with _planned_under(settings) as cursor:
        qs = audit_event_search(query=AuditQuery(text=text)).values_list("id", flat=True)
        sql, params = qs.query.sql_with_params()
        cursor.execute(f"EXPLAIN {sql}", params)
        return list(qs), "\n".join(row[0] for row in cursor.fetchall())


# GIN serves only bitmap scans: with these off the planner has the trigram index or nothing but the disabled scans
INDEX_ONLY = ("enable_seqscan = off", "enable_indexscan = off")
NO_INDEX = ("enable_bitmapscan = off",)


def _search_statements(sent: CaptureQueriesContext) -> list[str]:
    return [query["sql"] for query in sent.captured_queries if PAYLOAD_TEXT in query["sql"]]


def test_a_text_search_can_use_the_payload_trigram_index(events) -> None:  # type: ignore[no-untyped-def]
    # whether the planner picks it for four rows is its affair: this checks that the index serves the statements
    # the API sends (the expression Django writes for the lookup), which an index on another expression would not
    with CaptureQueriesContext(connection) as sent:
        client_for(make_user("auditor", "compliance")).get("/api/v1/audit/events?text=ntp+drift")
    statements = _search_statements(sent)
    assert statements
    for statement in statements:
        with _planned_under(INDEX_ONLY) as cursor:
            cursor.execute(f"EXPLAIN {statement}")
            plan = "\n".join(row[0] for row in cursor.fetchall())
        assert "Bitmap Index Scan on audit_payload_trgm" in plan, plan


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("ntp drift", [0]),
        ("NTP DRIFT", [0]),
        ("match", [1]),
        ('"/www/example"', [1]),  # the quotes inside an answer
        ('question":', []),  # not the JSON around the values
        ('"', [1]),
        ("naïve café", [1]),
        ("NAÏVE", [1]),
        ("50%", [2]),  # a LIKE wildcard is a character like any other
        ("50_", []),
        ("disk_a", [2]),
        ("c:\\temp", [2]),
        ("strasse", [2]),
        ("x", [0, 1]),  # shorter than a trigram: every payload is read
        ("notes.md", [3]),
        ("wolframite", []),
    ],
)
def test_the_index_finds_what_reading_every_payload_finds(events, text, expected) -> None:  # type: ignore[no-untyped-def]
    ids = [event.pk for event in events]
    wanted = sorted((ids[n] for n in expected), reverse=True)
    read_all, plan = _found(text, settings=NO_INDEX)
    assert read_all == wanted and "audit_payload_trgm" not in plan, plan
    through_index, plan = _found(text, settings=INDEX_ONLY)
    assert through_index == wanted and "Bitmap Index Scan on audit_payload_trgm" in plan, plan


def test_a_page_and_its_total_read_the_payloads_once(events, client) -> None:  # type: ignore[no-untyped-def]
    # counted and then paged, every payload that may hold the text was read twice (seconds each, for a word that
    # many events hold)
    auditor = make_user("auditor", "compliance")
    with CaptureQueriesContext(connection) as sent:
        body = client_for(auditor).get("/api/v1/audit/events?text=ntp+drift").json()
    assert body["count"] == 1 and body["results"][0]["id"] == events.first().pk
    assert len(_search_statements(sent)) == 1
    client.force_login(auditor)
    with CaptureQueriesContext(connection) as sent:
        page = client.get("/compliance/?text=question")
    assert (
        page.context["total"] == 3 and [e.pk for e in page.context["events"]] == [e.pk for e in events][2::-1]
    )
    assert len(_search_statements(sent)) == 1


@pytest.mark.parametrize(
    "query", [AuditQuery(), AuditQuery(text="question"), AuditQuery(user="bob", text="a")]
)
@pytest.mark.parametrize(("offset", "limit"), [(0, 50), (0, 1), (1, 1), (2, 5), (3, 5), (40, 5)])
def test_a_page_and_its_total_are_the_count_and_the_slice(events, query, offset, limit) -> None:  # type: ignore[no-untyped-def]
    # imported here: the other tests also run on the code before it
    from audit.selectors import audit_event_search_page

    qs = audit_event_search(query=query)
    total, page = audit_event_search_page(query=query, offset=offset, limit=limit)
    assert total == qs.count()
    assert [event.pk for event in page] == [event.pk for event in qs[offset : offset + limit]]
    assert [event.payload for event in page] == [event.payload for event in qs[offset : offset + limit]]
