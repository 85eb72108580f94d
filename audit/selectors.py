"""Reads of the audit log for compliance staff (callers check the compliance role)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import date, datetime, time, timedelta
from typing import Any

from django.db import connection
from django.db.models import Count, Q, QuerySet, Window
from django.utils import timezone

from athena.errors import NotFound
from audit.models import AuditEvent

# Every stored column, in table order: the export's columns and the API's fields.
EXPORT_COLUMNS = [
    "id",
    "created_at",
    "kind",
    "actor",
    "actor_id",
    "verdict",
    "documents",
    "payload",
    "prev_hash",
    "hash",
]


@dataclass(frozen=True)
class AuditQuery:
    user: str = ""
    since: date | None = None
    until: date | None = None
    document: str = ""
    verdict: str = ""
    kind: str = ""
    text: str = ""


def _day_start(day: date) -> datetime:
    return timezone.make_aware(datetime.combine(day, time.min), timezone.get_current_timezone())


def audit_event_search(*, query: AuditQuery) -> QuerySet[AuditEvent]:
    """Events matching every given criterion, newest first. `document` matches every source id that holds it
    (the id itself, and the ids it is a part of: "vpn.md" also finds "old/vpn.md"), the same whatever else is
    asked, so a narrower query never finds more; `text` searches the payload (question, answer, evidence): a
    substring of its stored JSON, in any case, found through the payload's trigram index (AuditEvent.Meta), so
    that a phrase few events hold is not looked for in every payload. A page of results with its total is
    audit_event_search_page's."""
    qs = AuditEvent.objects.all()
    if query.user:
        qs = qs.filter(actor__iexact=query.user)
    if query.since:
        qs = qs.filter(created_at__gte=_day_start(query.since))
    if query.until and query.until < date.max:
        # inclusive of the whole `until` day (the last day a date can hold means no end)
        qs = qs.filter(created_at__lt=_day_start(query.until + timedelta(days=1)))
    if query.document:
        qs = qs.filter(Q(documents__contains=[query.document]) | Q(documents__icontains=query.document))
    if query.verdict:
        qs = qs.filter(verdict__iexact=query.verdict)
    if query.kind:
        qs = qs.filter(kind__iexact=query.kind)
    if query.text:
        # the payload is searched as stored JSON text: the words are escaped as JSON escapes them, so a quoted
        # phrase finds the quotes inside a question or answer, not the key names around them
        qs = qs.filter(payload__icontains=json.dumps(query.text, ensure_ascii=False)[1:-1])
    return qs.order_by("-id")


def audit_event_search_page(*, query: AuditQuery, offset: int, limit: int) -> tuple[int, list[AuditEvent]]:
    """How many events match `query`, and `limit` of them from `offset`, newest first (the API's and the
    compliance page's results).

    A text search's total and page ids come from one statement (a count over the matches beside each id), so
    each payload the trigram index offers is read once. Counted and then paged, they were read twice, and the
    page's plan was a guess: the planner cannot tell how many payloads hold a text (a payload is too wide for
    the column's statistics) and took the index for the page too, reading every match for a word that many
    events hold (a word in a fifth of 300k events: 5.9 s counted and paged, 2.9 s in one pass;
    tests/benchmarks/audit_search.py)."""
    qs = audit_event_search(query=query)
    if not query.text:
        # no payload is read: counted and then paged, as before (the count over the matches beside each id took
        # longer, 56 ms against 19 ms for the whole log of 300k events)
        return qs.count(), list(qs[offset : offset + limit])
    rows = list(qs.annotate(total=Window(Count("id"))).values_list("id", "total")[offset : offset + limit])
    if not rows:
        # nothing matches, or the page starts past the last match: then the count alone says how many do
        return (qs.count() if offset else 0), []
    events = AuditEvent.objects.filter(pk__in=[pk for pk, _ in rows]).order_by("-id")
    return rows[0][1], list(events)


# the columns audit_event_values may list: each has a b-tree index of its own (AuditEvent.Meta)
_INDEXED_VALUE_COLUMNS = frozenset({"kind", "verdict"})


def audit_event_values(field: str) -> list[str]:
    """The distinct non-empty values of an indexed column (kind, verdict), in order, by a skip scan: one index
    probe per value (a recursive CTE), where SELECT DISTINCT reads every event (the admin's filter ran it on
    every page of a log of millions)."""
    if field not in _INDEXED_VALUE_COLUMNS:
        raise ValueError(f"no index lists the values of {field!r}: one of {sorted(_INDEXED_VALUE_COLUMNS)}")
    table, column = AuditEvent._meta.db_table, field  # both columns are named as their fields
    sql = (
        f'WITH RECURSIVE v(value) AS (SELECT min("{column}") FROM "{table}" WHERE "{column}" > \'\' '
        f'UNION ALL SELECT (SELECT min("{column}") FROM "{table}" WHERE "{column}" > v.value) FROM v '
        "WHERE v.value IS NOT NULL) SELECT value FROM v WHERE value IS NOT NULL"
    )
    with connection.cursor() as cursor:
        cursor.execute(sql)
        return [row[0] for row in cursor.fetchall()]


def audit_event_get(*, event_id: int) -> AuditEvent:
    event = AuditEvent.objects.filter(pk=event_id).first()
    if event is None:
        raise NotFound("no such audit event")
    return event


def audit_event_as_dict(event: AuditEvent) -> dict[str, Any]:
    row = {column: getattr(event, column) for column in EXPORT_COLUMNS}
    row["created_at"] = event.created_at.isoformat()
    return row
