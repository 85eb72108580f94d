"""Compose the verified draft: the answer shaped for its template (agents/shaping.py), its citations (title,
section, page, last update, tier, the supporting span) and notes (outdated or superseded sources, sources that
disagree, flagged passages)."""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta
from typing import Any

from agents.evidence import SentenceCheck
from agents.shaping import shape
from agents.steps.state import AnswerState
from athena.principals import Principal
from knowledge.text import is_caps_heading
from retrieval.types import Hit

FLAGGED_NOTE = "A cited passage contains text flagged as instructions to an AI; it was treated as data."


@dataclass(frozen=True)
class Compose:
    name: str = "compose"

    def run(self, state: AnswerState) -> AnswerState:
        assert state.draft is not None and state.attribution is not None
        shaped = shape(state.draft, state.evidence)
        checks_by_index: dict[int, SentenceCheck] = {}
        # a citation quotes the first sentence it backs; a heading in capitals ("SYNOPSIS") is no quote when
        # a sentence follows
        for check in sorted(state.attribution.checks, key=lambda check: is_caps_heading(check.sentence)):
            checks_by_index.setdefault(check.evidence_index, check)
        hit_by_chunk = {h.chunk_id: h for h in state.hits}
        citations: list[dict[str, Any]] = []
        for index, ref in shaped.refs.items():
            item = state.evidence[index]
            hit = hit_by_chunk.get(item.chunk_id)
            cited = checks_by_index.get(index)
            citations.append(
                {
                    "ref": ref,
                    "document": item.source,
                    "title": item.title,
                    "section": item.section,
                    "page": hit.page if hit else None,
                    "chunk_id": item.chunk_id,
                    "updated_at": hit.updated_at.isoformat() if hit and hit.updated_at else None,
                    "access_tier": hit.access_tier if hit else "",
                    "quote": cited.span if cited else "",
                }
            )
        notes, superseding = stale_notes(
            list(state.hits), {str(c["document"]) for c in citations}, state.principal
        )
        for citation in citations:
            # the newer document a note names: a past answer is withheld once its reader may no longer read it
            # (agents.selectors.responses_visible)
            if citation["document"] in superseding:
                citation["superseded_by"] = superseding[citation["document"]]
        if state.disagreement:
            notes.insert(0, state.disagreement)
        cited_chunks = {c["chunk_id"] for c in citations}
        if any(h.injection_flag for h in state.hits if h.chunk_id in cited_chunks):
            notes.append(FLAGGED_NOTE)
        return replace(state, answer=shaped.text, citations=tuple(citations), notes=tuple(notes))

    def describe(self, state: AnswerState) -> str:
        return f"{len(state.citations)} citation(s), {len(state.notes)} note(s)"


def stale_notes(
    hits: list[Hit], cited: set[str], principal: Principal | None = None
) -> tuple[list[str], dict[str, str]]:
    """'May be outdated' notes for the cited documents, and the source of each superseding document a note
    names, by the cited document's source. A superseding document is named only when `principal` may read it
    (knowledge.selectors.document_freshness); without a principal it is never named."""
    from django.conf import settings

    from knowledge.selectors import document_freshness

    notes = []
    superseding: dict[str, str] = {}
    now = datetime.now(UTC)
    cited_ids = {hit.document_id for hit in hits if hit.source in cited}
    for row in document_freshness(principal=principal, document_ids=cited_ids):
        if row.superseded_by_source is not None:
            notes.append(f"'{row.label}' is superseded by '{row.superseded_by_title}'; it may be outdated.")
            superseding[row.source] = row.superseded_by_source
        elif row.says_superseded_by:
            notes.append(
                f"'{row.label}' says it is superseded by {row.says_superseded_by}; it may be outdated."
            )
        if row.review_by and row.review_by < now.date():
            notes.append(
                f"'{row.label}' was due for review on {row.review_by.isoformat()}; it may be outdated."
            )
        updated = row.updated_at
        if updated and updated < now - timedelta(days=settings.ATHENA_STALE_AFTER_DAYS):
            notes.append(f"'{row.label}' was last updated {updated.date().isoformat()}; it may be outdated.")
    return notes, superseding
