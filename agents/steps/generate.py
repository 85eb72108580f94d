"""Generate the answer and verify its attribution: the LLM when one is configured (its sentences must each be
supported by the passage they cite), else - or when its draft fails verification - extractively from verbatim
evidence sentences: the merged context first, then the best passage alone."""

from __future__ import annotations

import re
import time
from collections.abc import Sequence
from dataclasses import dataclass, replace

from agents.answerer import get_answerer, rank
from agents.evidence import (
    CLOSE_TO_BEST,
    NUMBER,
    Attribution,
    Draft,
    Evidence,
    ScoredSentence,
    compose_extractive,
    compose_ranked,
    verify,
)
from agents.steps.decide import MIN_SENTENCE_SCORE, chunk_scores
from agents.steps.evaluate import pool_sentences
from agents.steps.state import ABSTAIN_MESSAGE, AnswerState, ablated
from knowledge.text import sentences
from retrieval.types import Hit

DISAGREEMENT_CLOSENESS = 0.85  # the runner-up's score relative to the best for two sources to "disagree"
# with the trained selector, prose answers are made of its most probable sentences (each with what it needs
# around it); a procedure's steps and a comparison's one-per-document bullets keep their own composers
UNIT_SHAPED_BY_RULES = frozenset({"procedure_sop", "comparison_decision"})
# how many of the most probable sentences make units; the shaper spends its word budget on them before the
# sentences that follow them (train EM: 4 units, budget in reading order .617; by priority .633; 5 units .648)
UNITS = 5
# evidence passages a generative model is given, best first
LLM_PASSAGES = 8


@dataclass(frozen=True)
class Generate:
    name: str = "generate"

    def run(self, state: AnswerState) -> AnswerState:
        from agents.llm import LLMError, get_llm, prompt_record

        ranked, disagreement = disagreement_note(
            list(state.candidates), list(state.evidence), list(state.hits)
        )
        state = replace(state, candidates=tuple(ranked), disagreement=disagreement)
        llm = get_llm()
        draft: Draft | None = None
        attribution: Attribution | None = None
        if llm.enabled:
            started = time.perf_counter()
            sent = state.evidence[:LLM_PASSAGES]
            passages = [e.text for e in sent]
            try:
                # recorded before the call, so the audit also holds a prompt whose call failed
                prompt = prompt_record(
                    llm, question=state.rewritten, template=state.template, passages=passages
                )
                state = replace(state, prompt={**prompt, "chunk_ids": [e.chunk_id for e in sent]})
                text = llm.generate(question=state.rewritten, template=state.template, passages=passages)
                draft = parse_llm_answer(text, state.template)
                state = state.noted("generate_llm", "done", (time.perf_counter() - started) * 1000)
                started = time.perf_counter()
                attribution = verify(draft, state.evidence)
                state = state.noted(
                    "verify_attribution",
                    f"score {attribution.score:.2f} ({'pass' if attribution.passed else 'reject'})",
                    (time.perf_counter() - started) * 1000,
                )
            except LLMError as exc:
                state = state.noted("generate_llm", f"failed: {exc}", (time.perf_counter() - started) * 1000)
                draft = None
        if draft is None or attribution is None or not attribution.passed:
            draft, attribution, state = _extractive(state)
        if draft is None or attribution is None:
            return state.abstained(f"{ABSTAIN_MESSAGE} No answer could be verified against the documents.")
        return replace(state, draft=draft, attribution=attribution)

    def describe(self, state: AnswerState) -> str:
        if state.draft is None or state.attribution is None:
            return "no verified answer"
        return f"{len(state.draft.sentences)} sentence(s), attribution {state.attribution.score:.2f}"


def _extractive(state: AnswerState) -> tuple[Draft | None, Attribution | None, AnswerState]:
    """The merged context first (with each sub-question's best sentence pinned), then the best passage alone;
    the first draft that passes verification."""
    ranked, evidence = list(state.candidates), list(state.evidence)
    if not ranked:
        return None, None, state
    pinned = sub_question_picks(state, evidence)
    state = state.noted("sub_question_evidence", f"{len(pinned)} pinned")
    continued_in = continuations(evidence)
    by_probability = state.selection is not None and state.template not in UNIT_SHAPED_BY_RULES
    for label, subset, pins in (
        ("merged_context", ranked, pinned),
        ("best_chunk", [s for s in ranked if s.evidence_index == ranked[0].evidence_index], []),
    ):
        if by_probability:
            # the selector's most probable sentences, each sub-question's best right after the lead
            order = list({id(s): s for s in [*subset[:1], *pins, *subset[1:]]}.values())
            candidate = compose_ranked(
                state.template,
                state.rewritten,
                order,
                evidence,
                units=UNITS + len(pins),
                protect=1 + len(pins),  # a chained question's answer needs every part's best sentence
                continued_in=continued_in,
            )
        else:
            candidate = compose_extractive(
                state.template,
                state.rewritten,
                subset,
                evidence,
                hop=state.hop,
                pinned=pins,
                continued_in=continued_in,
                close_to_best=0.0 if state.selection is not None else CLOSE_TO_BEST,
            )
        check = verify(candidate, evidence)
        state = state.noted(
            f"generate_extractive:{label}",
            f"{len(candidate.sentences)} sentence(s), attribution {check.score:.2f}",
        )
        if check.passed:
            return candidate, check, state
    return None, None, state


def sub_question_picks(state: AnswerState, evidence: Sequence[Evidence]) -> list[ScoredSentence]:
    """For a decomposed question, the best sentence for each sub-question: the answer addresses every part (the
    bridging fact and what the question finally asks), not only what matches the whole best."""
    if len(state.sub_questions) < 2 or state.terms is None or ablated("sub_question_pins"):
        return []
    # each part's sentences in the trained selector's order when the run is judged by it (the hand-made score
    # put a part's longest word-matching line first: a command synopsis, whose words then filled the answer)
    answerer = get_answerer() if state.selection is not None else None
    scores = chunk_scores(state) if answerer is not None else {}
    picks: list[ScoredSentence] = []
    for sub in state.sub_questions:
        # a later part that refers back ("... do those hosts ...") carries the earlier part's words, so its best
        # sentence may be the earlier part's: it takes its own best one instead
        taken = {p.text for p in picks}
        scored = part_candidates(state, evidence, sub)
        if answerer is not None:
            scored = rank(answerer, scored, evidence, scores)[0]
        best = next((s for s in scored if s.text not in taken), None)
        if best is not None and best.support >= MIN_SENTENCE_SCORE:
            picks.append(best)
    return picks


def part_candidates(state: AnswerState, evidence: Sequence[Evidence], sub: str) -> list[ScoredSentence]:
    """One sub-question's candidate sentences among the first `pool_size` passages, by the hand-made score.
    The earlier part's words that decomposition appended help retrieval find the right documents; the sentence
    that answers this part is judged on what the part itself asks."""
    assert state.terms is not None, "retrieve runs first"
    own = re.sub(r"\s*\([^()]*\)$", "", sub) or sub
    return pool_sentences(state, own, evidence[: state.pool_size], corrected=False)


def continuations(evidence: Sequence[Evidence]) -> dict[int, int]:
    """Evidence index -> index of the passage that continues it in its document, for the pairs of consecutive
    chunks that are both in the evidence (a hit and the neighbour fetched after it, or two adjacent hits)."""
    from retrieval.search import neighbour_ids

    position = {item.chunk_id: index for index, item in enumerate(evidence)}
    links = neighbour_ids(list(position))
    return {
        index: position[following]
        for chunk_id, index in position.items()
        if (following := links.get(chunk_id, (None, None))[1]) is not None and following in position
    }


def disagreement_note(
    ranked: list[ScoredSentence], evidence: list[Evidence], hits: list[Hit]
) -> tuple[list[ScoredSentence], str | None]:
    """When the two best sentences come from different documents and state different numbers for the same
    thing, prefer the more recently updated document and say so."""
    if len(ranked) < 2:
        return ranked, None
    first, second = ranked[0], ranked[1]
    if evidence[first.evidence_index].source == evidence[second.evidence_index].source:
        return ranked, None
    if second.score < first.score * DISAGREEMENT_CLOSENESS:
        return ranked, None
    nums_a = {m.group(0) for m in NUMBER.finditer(first.text)}
    nums_b = {m.group(0) for m in NUMBER.finditer(second.text)}
    if not nums_a or not nums_b or nums_a & nums_b:
        return ranked, None
    updated = {h.source: h.updated_at for h in hits}
    date_a = updated.get(evidence[first.evidence_index].source)
    date_b = updated.get(evidence[second.evidence_index].source)
    if not date_a or not date_b or date_a == date_b:
        return ranked, None
    newer, older = (first, second) if date_a > date_b else (second, first)
    note = (
        f"Sources disagree: '{evidence[older.evidence_index].title}' says otherwise; the more recent "
        f"'{evidence[newer.evidence_index].title}' is preferred."
    )
    reordered = [newer] + [s for s in ranked if s is not newer and s is not older]
    return reordered, note


def parse_llm_answer(text: str, template: str) -> Draft:
    """Split an LLM answer into sentences with their [n] citations (1-based in the prompt)."""
    if text.strip().upper().startswith("INSUFFICIENT"):
        return Draft(template, [])
    parts = []
    for sentence in sentences(text):
        refs = [int(n) for n in re.findall(r"\[(\d+)\]", sentence)]
        clean = re.sub(r"\s*\[\d+\]", "", sentence).strip()
        if clean:
            parts.append((clean, (refs[0] - 1) if refs else -1))
    return Draft(template, parts)
