"""Compose the verified draft: the answer shaped for its template (agents/shaping.py), its citations (title,
section, page, last update, tier, the supporting span) and notes (outdated or superseded sources, sources that
disagree, flagged passages)."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from agents.evidence import SentenceCheck
from agents.shaping import shape
from agents.steps.state import AnswerState

FLAGGED_NOTE = "A cited passage contains text flagged as instructions to an AI; it was treated as data."


@dataclass(frozen=True)
class Compose:
    name: str = "compose"

    def run(self, state: AnswerState) -> AnswerState:
        from agents.pipeline import _stale_notes

        assert state.draft is not None and state.attribution is not None
        shaped = shape(state.draft, state.evidence)
        checks_by_index: dict[int, SentenceCheck] = {}
        for check in state.attribution.checks:
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
        notes = _stale_notes(list(state.hits), {str(c["document"]) for c in citations}, state.principal)
        if state.disagreement:
            notes.insert(0, state.disagreement)
        cited_chunks = {c["chunk_id"] for c in citations}
        if any(h.injection_flag for h in state.hits if h.chunk_id in cited_chunks):
            notes.append(FLAGGED_NOTE)
        return replace(state, answer=shaped.text, citations=tuple(citations), notes=tuple(notes))

    def describe(self, state: AnswerState) -> str:
        return f"{len(state.citations)} citation(s), {len(state.notes)} note(s)"
