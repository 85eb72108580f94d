"""Compliance pages: search the audit log, read one event with its exact evidence, export, chain status."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import asdict, dataclass, fields
from functools import wraps
from typing import Any
from urllib.parse import urlencode

from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import render
from rest_framework.exceptions import ValidationError
from rest_framework.settings import api_settings

from athena.errors import NotFound, flatten_detail
from athena.http import repeated_params
from athena.pagination import MAX_OFFSET
from athena.permissions import is_compliance
from audit.apis import SINCE_AFTER_UNTIL, audit_query_from
from audit.models import AuditEvent
from audit.selectors import AuditQuery, audit_event_get, audit_event_search_page, audit_event_values
from audit.services import audit_verify_incremental

PAGE_SIZE = 50
# knowledge's AccessTier values that only named groups may read (audit sits below knowledge: named, not imported)
CLOSED_TIERS = frozenset({"restricted", "confidential"})
QUERY_PARAMS = frozenset(field.name for field in fields(AuditQuery))
# a results row names at most this many of an event's documents (every cited one, however many), the rest in a
# list that opens under "and N more": a question's event names one per retrieved passage (ten by default)
DOCUMENTS_SHOWN = 3
# names behind a row's "and N more" at most: a documents_removed event of a folder can name thousands, which the
# event's own page lists
DOCUMENTS_MORE = 50


def compliance_required(view: Callable[..., HttpResponse]) -> Callable[..., HttpResponse]:
    @login_required
    @wraps(view)
    def wrapped(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        if not is_compliance(request.user):
            raise PermissionDenied("compliance staff only")
        return view(request, *args, **kwargs)

    return wrapped


@compliance_required
def audit_search_page(request: HttpRequest) -> HttpResponse:
    errors: list[str] = []
    params = {k: v for k, v in request.GET.items() if k in QUERY_PARAMS and v}
    try:
        query = audit_query_from(params)
    except ValidationError as exc:
        errors = _messages(exc)
        query = None
    unknown = sorted(set(request.GET) - set(QUERY_PARAMS) - {"offset"})
    if unknown:
        # a misnamed filter (`actor=` for `user=`) would show, and export, the whole log as its result
        errors.append(f"unknown filter(s): {', '.join(unknown)}")
        query = None
    repeated = repeated_params(request.GET)
    if repeated:
        # the last value alone would be searched (and exported) as if it were all that was asked for
        errors.append(f"filter(s) given more than once: {', '.join(repeated)}")
        query = None
    offset = _offset(request.GET.get("offset", "0"))
    if offset is None:
        # a page that does not exist is said so, not replaced by the first page
        errors.append(f"offset must be a whole number from 0 to {MAX_OFFSET}")
        query, offset = None, 0
    # what the kind and verdict fields may hold, read from their indexes (a skip scan per column, not the log)
    recorded = {field: audit_event_values(field) for field in ("kind", "verdict")}
    notes: list[str] = []
    if query is None:
        # a filter that does not parse shows no events: the log unfiltered, under a form that still shows the
        # other filters, would read as their result
        events: list[AuditEvent] = []
        total = 0
    else:
        total, events = audit_event_search_page(query=query, offset=offset, limit=PAGE_SIZE)
        for event in events:
            event.documents_listed = event_documents_listed(event)  # type: ignore[attr-defined]
        if not total:
            notes = _never_recorded(params, recorded)
    return render(
        request,
        "audit/search.html",
        {
            "events": events,
            "total": total,
            "params": params,
            "errors": errors,
            "notes": notes,
            "recorded": recorded,
            "offset": offset,
            "next_offset": offset + PAGE_SIZE if offset + PAGE_SIZE < total else None,
            "prev_offset": max(offset - PAGE_SIZE, 0) if offset else None,
            "querystring": urlencode(params),
            "chain": asdict(audit_verify_incremental()),
        },
    )


@dataclass(frozen=True, slots=True)
class ListedDocument:
    source: str
    cited: bool = False
    access_tier: str = ""  # as the citation recorded it; retrieved documents' tiers are not in the event


@dataclass(frozen=True, slots=True)
class EventDocuments:
    """An event's documents as its results row names them: `shown` in the row, `more` behind "and N more"."""

    shown: tuple[ListedDocument, ...]
    more: tuple[ListedDocument, ...]
    unlisted: int = 0  # beyond DOCUMENTS_MORE: named on the event's page only

    @property
    def total(self) -> int:
        return len(self.shown) + len(self.more) + self.unlisted


def event_documents_listed(event: AuditEvent) -> EventDocuments:
    """The documents a compliance officer looks for first come first: the ones an answer cited (from the
    event's citations, with the access tier each was cited under; restricted and confidential ones before the
    others), then the retrieved ones in the order retrieval ranked them, then any other the event names. The
    column read the event's documents alphabetically, cut at 120 characters with "…", so a cited restricted
    document could be the one hidden behind the ellipsis; now every one is named, none cut mid-name."""
    payload = event.payload if isinstance(event.payload, dict) else {}
    citations = [c for c in payload.get("citations") or [] if isinstance(c, dict) and c.get("document")]
    tiers: dict[str, str] = {}
    for citation in citations:
        tiers.setdefault(str(citation["document"]), str(citation.get("access_tier") or ""))
    cited = sorted(tiers, key=lambda source: tiers[source] not in CLOSED_TIERS)  # stable: citation order kept
    ranked = [
        str(chunk["document"])
        for chunk in payload.get("retrieved_chunks") or []
        if isinstance(chunk, dict) and chunk.get("document")
    ]
    order = list(dict.fromkeys([*cited, *ranked, *(str(source) for source in event.documents or [])]))
    listed = [ListedDocument(source, source in tiers, tiers.get(source, "")) for source in order]
    head = max(DOCUMENTS_SHOWN, len(cited))
    if len(listed) == head + 1:  # "and 1 more" takes the room of the name it hides
        head += 1
    more = listed[head : head + DOCUMENTS_MORE]
    return EventDocuments(tuple(listed[:head]), tuple(more), max(0, len(listed) - head - len(more)))


def _never_recorded(params: dict[str, Any], recorded: dict[str, list[str]]) -> list[str]:
    """For a search that found nothing: name a kind or verdict that no event has ever had (a typo such as
    `quesiton` reads as "nothing happened", which is not what the log says), with the values it does hold. Not
    an error: a kind that simply has not happened yet is a valid search with no result."""
    notes = []
    for field in ("kind", "verdict"):
        value = params.get(field, "")
        known = recorded[field]
        if value and value.lower() not in {item.lower() for item in known}:
            notes.append(
                f"No event has ever had the {field} '{value}'. "
                f"Recorded {field}s: {', '.join(known) or 'none yet'}."
            )
    return notes


def _offset(raw: str) -> int | None:
    """The page's offset, or None when it is not a whole number from 0 to MAX_OFFSET."""
    try:
        value = int(raw)
    except ValueError:
        return None
    return value if 0 <= value <= MAX_OFFSET else None


def _messages(exc: ValidationError) -> list[str]:
    """One line per invalid filter, named as the form names it (a rule across filters has no name). The rule
    that the first day is not after the last names the fields by the labels the page shows them with: "'since'
    is after 'until'" named the query's parameters, which the page shows nowhere."""
    detail = exc.detail if isinstance(exc.detail, dict) else {api_settings.NON_FIELD_ERRORS_KEY: exc.detail}
    codes = exc.get_codes()
    crossed = isinstance(codes, dict) and SINCE_AFTER_UNTIL in (
        codes.get(api_settings.NON_FIELD_ERRORS_KEY) or ()
    )
    lines = [
        flatten_detail({key: value})
        for key, value in detail.items()
        if not (crossed and key == api_settings.NON_FIELD_ERRORS_KEY)
    ]
    if crossed:
        lines.append("The From day is after the To day: no event can match. Swap them or clear one.")
    return lines


@compliance_required
def audit_event_page(request: HttpRequest, event_id: int) -> HttpResponse:
    try:
        event = audit_event_get(event_id=event_id)
    except NotFound as exc:
        raise Http404("no such audit event") from exc
    payload = event.payload if isinstance(event.payload, dict) else {"value": event.payload}
    sections = [
        (
            key,
            json.dumps(value, indent=2, ensure_ascii=False, sort_keys=True)
            if not isinstance(value, str)
            else value,
        )
        for key, value in sorted(payload.items())
    ]
    return render(
        request,
        "audit/event.html",
        {
            "event": event,
            "sections": sections,
            "raw": json.dumps(payload, indent=2, ensure_ascii=False, sort_keys=True),
        },
    )
