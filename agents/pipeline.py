"""The answering pipeline: `run_pipeline` runs the typed steps of `agents.steps.ANSWERING` over a frozen state
and turns the final state into the result the ask service stores, audits and returns.

guard input -> memory -> follow-up rewrite -> classify -> clarify | decompose -> retrieve (sub-questions
concurrently) -> per-chunk evaluation (neighbour expansion) -> decide (learned selector, calibrated abstention,
one reformulation) -> generate -> verify attribution -> compose -> guard output.
Memory writes and the audit event are done by the caller (agents.services) after this returns.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

from agents.memory import Turn
from agents.steps import ANSWERING, AnswerState, run_steps
from agents.steps.state import ABSTAIN_MESSAGE
from athena.principals import Principal
from retrieval.types import Filters, SearchConfig

__all__ = ["ABSTAIN_MESSAGE", "PipelineResult", "run_pipeline"]


@dataclass
class PipelineResult:
    answer: str
    abstained: bool
    template: str
    hop: str
    verdict: str  # answered | abstained | clarify | blocked
    citations: list[dict[str, Any]]
    retrieved: list[str]
    retrieved_chunks: list[dict[str, Any]]
    attribution_score: float
    notes: list[str]
    trace: list[dict[str, Any]]
    timings_ms: dict[str, float]
    evidence: list[dict[str, Any]]
    passages: list[str]
    rewritten: str
    guard: dict[str, Any]
    chunk_ids: list[int]
    # retrieval's own stages (query embedding, each source, fusion, rerank, MMR), summed over its searches
    search_timings_ms: dict[str, float] = field(default_factory=dict)
    # abstained: how many of the question's distinctive terms only documents the asker cannot read hold;
    # for the enumeration detector (athena.throttling), never part of the response
    unreadable_terms: int = 0
    # what was sent to a generative model (backend, model, question, chunk ids, SHA-256), for the audit log only
    prompt: dict[str, Any] | None = None


def run_pipeline(
    *,
    question: str,
    principal: Principal,
    history: list[Turn],
    filters: Filters | None = None,
    config: SearchConfig | None = None,
    observe: dict[str, Any] | None = None,
) -> PipelineResult:
    """Answer one question for one principal. Raises nothing for bad questions: a guard refusal is a
    verdict ("blocked"), so that it is audited like any answer.

    `observe`: when given, the answer selector's inputs for the first evidence pool are stored in it (the
    candidates, their feature rows and the question's facts): `manage.py train_answerer --collect` learns
    from them."""
    started = time.perf_counter()
    state = AnswerState(
        question=question,
        principal=principal,
        history=tuple(history),
        filters=filters,
        config=config or SearchConfig(),
        observe=observe,
    )
    state = run_steps(ANSWERING, state)
    return _result(state, started)


def _result(state: AnswerState, started: float) -> PipelineResult:
    answered = state.verdict == "answered"
    # a blocked question never reached retrieval; a clarifying question shows nothing it retrieved
    hits = list(state.hits) if state.verdict in ("answered", "abstained") else []
    best_bm25 = max((h.scores.get("bm25", 0.0) for h in hits), default=0.0)
    timings = {step["step"]: step["ms"] for step in state.trace}
    timings["total"] = round((time.perf_counter() - started) * 1000, 1)
    return PipelineResult(
        answer=state.answer,
        abstained=not answered,
        template=state.template,
        hop=state.hop,
        verdict=state.verdict or "abstained",
        citations=list(state.citations) if answered else [],
        retrieved=list(dict.fromkeys(h.source for h in hits)),
        retrieved_chunks=[
            {"chunk_id": h.chunk_id, "document": h.source, "content_hash": h.content_hash} for h in hits
        ],
        attribution_score=state.attribution.score if answered and state.attribution else 0.0,
        notes=list(state.notes) if answered else [],
        trace=list(state.trace),
        timings_ms=timings,
        evidence=[
            {
                "chunk_id": h.chunk_id,
                "document": h.source,
                "title": h.title,
                "section": h.section,
                "content_hash": h.content_hash,
                "score": round(h.score, 4),
                "scores": _shown_scores(h.scores, best_bm25),
            }
            for h in hits
        ],
        passages=[h.text for h in hits[:10]],
        rewritten=state.rewritten,
        guard=state.guard,
        chunk_ids=[h.chunk_id for h in hits],
        search_timings_ms=_search_timings(state),
        unreadable_terms=_unreadable_terms(state),
        prompt=state.prompt,
    )


def _search_timings(state: AnswerState) -> dict[str, float]:
    summed: dict[str, float] = {}
    for result in state.results:
        for stage, ms in result.timings_ms.items():
            summed[stage] = round(summed.get(stage, 0.0) + ms, 2)
    return summed


def _unreadable_terms(state: AnswerState) -> int:
    """For an abstained question: its distinctive terms that no chunk the asker may read holds (the adequacy
    step's `unknown`) but the index does, i.e. only documents they cannot read."""
    if state.verdict != "abstained" or state.terms is None or not state.terms.unknown:
        return 0
    from knowledge.index_selectors import terms_indexed

    return len(terms_indexed(state.terms.unknown))


def _shown_scores(scores: dict[str, float], best_bm25: float) -> dict[str, float]:
    """A hit's per-source scores as the response shows them: BM25 relative to the best BM25 score shown (1.0).
    The raw score is idf x tf-part, and its idf comes from the corpus-wide document frequencies, which count
    documents the asker may not read: with a readable chunk's text in hand, a raw score gives away how many
    chunks hold a term. The ratio of two chunks' scores for the same terms does not (retrieval and the answer
    use the raw scores; only what is shown changes)."""
    if "bm25" not in scores or best_bm25 <= 0:
        return scores
    return {**scores, "bm25": round(scores["bm25"] / best_bm25, 4)}
