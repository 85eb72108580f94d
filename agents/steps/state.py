"""The answering pipeline's frozen state, the Step protocol and the runner that writes the trace.

A step reads the state and returns a new one (`dataclasses.replace`); the runner times it and appends one
trace entry (step, decision, ms) with the step's own `describe`. A step may add finer entries of its own
first (`AnswerState.noted`), e.g. the decision step's reformulation. A step that ends the run sets `verdict`
(blocked, clarify, abstained); the runner then stops.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np

if TYPE_CHECKING:
    from agents.answerer import Selection
    from agents.classify import Classification
    from agents.evidence import Attribution, Draft, Evidence, ScoredSentence
    from agents.memory import Turn
    from athena.principals import Principal
    from knowledge.embedders import SpanVectors
    from retrieval.types import Filters, Hit, SearchConfig, SearchResult

ABSTAIN_MESSAGE = "I don't have enough information in the knowledge base to answer this confidently."


@dataclass
class RunCache:
    """Per-run memo shared by the steps (not part of the answer): sentence-window vectors are embedded once
    per answer, however many (sub-)questions score them."""

    window_vectors: dict[str, np.ndarray] = field(default_factory=dict)
    query_vectors: dict[str, np.ndarray] = field(default_factory=dict)
    sentence_vectors: dict[int, SpanVectors | None] = field(default_factory=dict)  # by chunk id

    def embed_windows(self, texts: list[str]) -> np.ndarray:
        from knowledge.embedders import get_embedder

        todo = [t for t in dict.fromkeys(texts) if t not in self.window_vectors]
        if todo:
            self.window_vectors.update(zip(todo, get_embedder().embed_passages(todo), strict=True))
        return np.array([self.window_vectors[t] for t in texts])

    def pooled(self, evidence: Sequence[Evidence]) -> list[SpanVectors | None]:
        """Each passage's sentence vectors stored at ingestion (aligned with `passage_sentences`), or None for a
        passage without them or whose stored vectors no longer match its sentences (a splitter change not yet
        re-embedded): its windows are then embedded while answering."""
        from knowledge.embedders import span_vectors_unpack
        from knowledge.models import EMBEDDING_DIM
        from knowledge.selectors import chunk_sentence_vectors
        from knowledge.text import passage_sentences

        if ablated("stored_sentence_vectors"):
            return [None] * len(evidence)
        todo = [item.chunk_id for item in evidence if item.chunk_id not in self.sentence_vectors]
        if todo:
            stored = chunk_sentence_vectors(todo)
            dimension = EMBEDDING_DIM
            for chunk_id in todo:
                data = stored.get(chunk_id)
                self.sentence_vectors[chunk_id] = span_vectors_unpack(data, dimension) if data else None
        result: list[SpanVectors | None] = []
        for item in evidence:
            pooled = self.sentence_vectors[item.chunk_id]
            fits = pooled is not None and len(pooled.tokens) == len(passage_sentences(item.text, item.title))
            result.append(pooled if fits else None)
        return result

    def query_vector(self, text: str) -> np.ndarray:
        from retrieval.search import embed_query

        if text not in self.query_vectors:
            self.query_vectors[text] = embed_query(text)
        return self.query_vectors[text]


@dataclass(frozen=True, slots=True)
class QuestionTerms:
    """The question's search terms as retrieval analysed them, with what adequacy needs to know of them."""

    search: tuple[str, ...]
    unknown: tuple[str, ...]  # distinctive terms no chunk the principal may read holds
    idf: dict[str, float]
    corrections: dict[str, str]  # misspelt term -> the readable term retrieval searched instead

    def meant(self, text: str) -> str:
        """`text` (the question, or a part of it) as the asker meant it: the words retrieval corrected spelt as
        they were read (retrieval.search.question_as_meant), for embedding it; `text` itself when none was."""
        from retrieval.search import question_as_meant

        return question_as_meant(text, self.corrections)


@dataclass(frozen=True, slots=True)
class AnswerState:
    question: str
    principal: Principal
    history: tuple[Turn, ...] = ()
    filters: Filters | None = None
    config: SearchConfig | None = None
    observe: dict[str, Any] | None = field(default=None, compare=False)
    cache: RunCache = field(default_factory=RunCache, compare=False)
    trace: tuple[dict[str, Any], ...] = ()
    # set by RewriteFollowUp: the question as read (without a greeting or thanks around it, nor the asker's own
    # context: agents/steps/context.py), whether it was joined to the previous turn as a follow-up, and what
    # is searched (the joined question, or `asked`)
    asked: str = ""
    follow_up: bool = False
    rewritten: str = ""
    clipped: tuple[tuple[str, str], ...] = ()  # a word written out for shorthand -> the clipping as typed
    classification: Classification | None = None
    sub_questions: tuple[str, ...] = ()
    results: tuple[SearchResult, ...] = ()
    hits: tuple[Hit, ...] = ()
    terms: QuestionTerms | None = None
    evidence: tuple[Evidence, ...] = ()
    candidates: tuple[ScoredSentence, ...] = ()  # best first (by the selector's probability when it ran)
    selection: Selection | None = None
    disagreement: str | None = None
    draft: Draft | None = None
    attribution: Attribution | None = None
    answer: str = ""
    citations: tuple[dict[str, Any], ...] = ()
    notes: tuple[str, ...] = ()
    guard: dict[str, Any] = field(default_factory=dict)
    prompt: dict[str, Any] | None = None  # what was sent to a generative model (`agents.llm.prompt_record`)
    verdict: str = ""  # set when the run ends: blocked | clarify | abstained | answered

    @property
    def template(self) -> str:
        return self.classification.template if self.classification else ""

    @property
    def hop(self) -> str:
        return self.classification.hop if self.classification else ""

    @property
    def pool_size(self) -> int:
        """Passages evaluated: more when sub-questions bring their own."""
        return 12 if len(self.sub_questions) <= 1 else 16

    def noted(self, step: str, decision: str, ms: float = 0.0) -> AnswerState:
        return replace(self, trace=(*self.trace, {"step": step, "decision": decision, "ms": round(ms, 1)}))

    def abstained(self, message: str) -> AnswerState:
        return replace(self, answer=message, verdict="abstained")


class Step(Protocol):
    """One stage of answering: `name` in the trace, `run` makes the next state, `describe` says what it did."""

    @property
    def name(self) -> str: ...

    def run(self, state: AnswerState) -> AnswerState: ...

    def describe(self, state: AnswerState) -> str: ...


# Parts of answering a benchmark may turn off (settings.ATHENA_ABLATE) to measure what each adds: whole steps
# by name, and parts inside a step. The guards, retrieval and the composition of a cited answer are not among
# them: without those there is no answer to measure, or an unsafe one.
ABLATABLE = frozenset(
    {
        "follow_up_rewrite",  # step: follow-ups are asked as they are
        "clarify",  # step: never ask back
        "decompose",  # step: a chained or comparison question is retrieved as one
        "neighbours",  # evaluate: the best hits' neighbouring chunks do not join the evidence
        "selector",  # decide: the hand-set adequacy rules and order instead of the trained selector
        "unknown_terms",  # decide: a term no readable chunk holds does not force an abstention
        "reformulate",  # decide: no second search with the distinctive terms
        "sub_question_pins",  # generate: each sub-question's best sentence is not pinned into the answer
        "stored_sentence_vectors",  # evaluate/generate: sentence windows are embedded while answering
    }
)


def ablated(part: str) -> bool:
    """Whether a benchmark turned `part` (one of ABLATABLE) off."""
    from django.conf import settings

    switched_off = getattr(settings, "ATHENA_ABLATE", ())
    if not switched_off:
        return False
    unknown = set(switched_off) - ABLATABLE
    if unknown:
        raise ValueError(f"ATHENA_ABLATE names unknown part(s) {sorted(unknown)}; valid: {sorted(ABLATABLE)}")
    return part in switched_off


def run_steps(steps: Sequence[Step], state: AnswerState) -> AnswerState:
    """Run `steps` in order until one ends the run; one trace entry per step that ran."""
    for step in steps:
        if step.name in ABLATABLE and ablated(step.name):
            continue
        started = time.perf_counter()
        state = step.run(state)
        state = state.noted(step.name, step.describe(state), (time.perf_counter() - started) * 1000)
        if state.verdict:
            break
    return state
