"""The learned answer selector and the calibrated abstention decision.

Two small logistic models, fitted by `manage.py train_answerer` on the dev set's train split and shipped as a
versioned JSON artefact (agents/data/answerer.json: feature names, standardisation, weights, threshold):

- the *sentence* model scores each candidate evidence sentence: P(this sentence states the answer), from what
  `agents.evidence.score_sentences` measured (coverage, similarity, identifiers, answer-type fit ...) plus the
  passage's retrieval rank and fused score and the sentence's standing among the other candidates;
- the *answerable* model turns the candidates of one question into P(the readable documents answer it), from
  the best sentence probabilities, terms the readable corpus lacks, and how much of the question the evidence
  pool covers at all. The pipeline answers only when it clears the threshold chosen by cross-validation on
  the train split with folds by package (`fit_answerer`).

Pure functions over plain values: nothing here touches the ORM or a model.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np

from agents.evidence import HAS_NUMBER, SIGNALS, Evidence, ScoredSentence, passage_sentences

ARTEFACT = Path(__file__).resolve().parent / "data" / "answerer.json"
ARTEFACT_VERSION = 1
# candidates the sentence model reads: the best by the hand-made score (the rest never won an answer)
MAX_CANDIDATES = 40

SENTENCE_FEATURES = (
    "support",
    "score",
    "coverage",
    "dense",
    *SIGNALS,
    "log_passage_rank",
    "neighbour",
    "fused_share",
    "log_position",
    "support_gap",
    "dense_gap",
    "log_support_rank",
    "log_score_rank",
    "log_dense_rank",
    "next_has_number",
    "chunk_dense",
    "chunk_bm25_share",
)
QUESTION_FEATURES = (
    "p_best",
    "p_second",
    "p_sum_top3",
    "unknown_terms",
    "support_best",
    "coverage_best",
    "dense_best",
    "pool_coverage",
    "top_fused",
    "top_dense",
    "wants_number_unmet",
    "question_words",
    "multi_hop",
    "unmatched_quoted",
)


@dataclass(frozen=True, slots=True)
class LinearModel:
    """Standardised logistic regression: P(y=1 | x) = sigmoid(((x - mean) / scale) . coef + intercept)."""

    names: tuple[str, ...]
    mean: tuple[float, ...]
    scale: tuple[float, ...]
    coef: tuple[float, ...]
    intercept: float

    def probabilities(self, rows: np.ndarray) -> np.ndarray:
        if rows.size == 0:
            return np.zeros(0)
        z = ((rows - np.asarray(self.mean)) / np.asarray(self.scale)) @ np.asarray(self.coef) + self.intercept
        return 1.0 / (1.0 + np.exp(-np.clip(z, -30, 30)))

    def to_json(self) -> dict[str, Any]:
        return {
            "names": list(self.names),
            "mean": [round(v, 8) for v in self.mean],
            "scale": [round(v, 8) for v in self.scale],
            "coef": [round(v, 8) for v in self.coef],
            "intercept": round(self.intercept, 8),
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any], expected: Sequence[str]) -> LinearModel:
        names = tuple(data["names"])
        if names != tuple(expected):
            raise ValueError(f"answerer artefact features {names} differ from the code's {tuple(expected)}")
        return cls(
            names,
            tuple(data["mean"]),
            tuple(data["scale"]),
            tuple(data["coef"]),
            float(data["intercept"]),
        )


@dataclass(frozen=True, slots=True)
class Answerer:
    sentence: LinearModel
    answerable: LinearModel
    threshold: float  # answer when P(answerable) >= threshold
    version: str

    def to_json(self) -> dict[str, Any]:
        return {
            "artefact_version": ARTEFACT_VERSION,
            "version": self.version,
            "threshold": round(self.threshold, 6),
            "sentence": self.sentence.to_json(),
            "answerable": self.answerable.to_json(),
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Answerer:
        if data.get("artefact_version") != ARTEFACT_VERSION:
            raise ValueError(
                f"answerer artefact version {data.get('artefact_version')} != {ARTEFACT_VERSION}"
            )
        return cls(
            LinearModel.from_json(data["sentence"], SENTENCE_FEATURES),
            LinearModel.from_json(data["answerable"], QUESTION_FEATURES),
            float(data["threshold"]),
            str(data["version"]),
        )


@lru_cache(maxsize=1)
def get_answerer() -> Answerer | None:
    """The shipped selector, or None when no artefact is installed (the pipeline then keeps its hand-set
    adequacy rules)."""
    if not ARTEFACT.exists():
        return None
    return Answerer.from_json(json.loads(ARTEFACT.read_text()))


@dataclass(frozen=True, slots=True)
class QuestionFacts:
    """What the pipeline knows about a question besides its candidate sentences."""

    unknown_terms: int  # distinctive terms no readable chunk holds
    pool_coverage: float  # idf-weighted share of the question's terms found anywhere in the evidence pool
    top_fused: float  # fused retrieval score of the best hit
    top_dense: (
        float  # the best hit's dense similarity to the question (absolute, not normalised per question)
    )
    # the best BM25 score among the hits (log1p): recorded, not a feature; raw BM25 grows with the corpus's
    # size and vocabulary, so a model fitted on one corpus would misjudge a smaller or larger one
    top_bm25: float
    wants_number: bool
    question_words: int  # the question's length as agents.steps.decide.question_length counts it
    multi_hop: bool
    # identifiers and numbers the question quotes ("--max-port", "2.90") that no evidence passage contains:
    # the evidence may be about the topic and still not address the very thing asked
    unmatched_quoted: int = 0


def _has_number(text: str) -> bool:
    return HAS_NUMBER.search(text) is not None


def sentence_features(
    ranked: Sequence[ScoredSentence],
    evidence: Sequence[Evidence],
    next_sentence: Mapping[str, str],
    chunk_scores: Mapping[int, Mapping[str, float]],
) -> np.ndarray:
    """One row of SENTENCE_FEATURES per candidate (in the order given).

    Args:
        ranked: candidates as `score_sentences` returns them (best hand-made score first).
        evidence: the evidence passages the candidates index.
        next_sentence: candidate text -> the sentence that follows it in its passage ("" at the end).
        chunk_scores: chunk id -> its per-source retrieval scores (`Hit.scores`; absent for a neighbour).
    """
    if not ranked:
        return np.zeros((0, len(SENTENCE_FEATURES)))
    top_score = max(item.score for item in evidence) or 1.0
    best_support = max(s.support for s in ranked)
    best_dense = max(s.dense for s in ranked)
    best_bm25 = max((scores.get("bm25", 0.0) for scores in chunk_scores.values()), default=0.0) or 1.0
    support_rank = {id(s): r for r, s in enumerate(sorted(ranked, key=lambda s: -s.support))}
    dense_rank = {id(s): r for r, s in enumerate(sorted(ranked, key=lambda s: -s.dense))}
    rows = []
    for score_rank, s in enumerate(ranked):
        item = evidence[s.evidence_index]
        signals = s.signals or (0.0,) * len(SIGNALS)
        rows.append(
            [
                s.support,
                s.score,
                s.coverage,
                s.dense,
                *signals[:-3],
                math.log1p(signals[-3]),  # words
                *signals[-2:],
                math.log1p(s.evidence_index),
                float(item.score == 0.0),  # a neighbour fetched for context, not a hit
                max(0.0, item.score) / top_score,
                math.log1p(s.position),
                best_support - s.support,
                best_dense - s.dense,
                math.log1p(support_rank[id(s)]),
                math.log1p(score_rank),
                math.log1p(dense_rank[id(s)]),
                float(_has_number(next_sentence.get(s.text, ""))),
                chunk_scores.get(item.chunk_id, {}).get("dense", 0.0),
                chunk_scores.get(item.chunk_id, {}).get("bm25", 0.0) / best_bm25,
            ]
        )
    return np.asarray(rows, dtype=float)


def question_features(probabilities: np.ndarray, rows: np.ndarray, facts: QuestionFacts) -> np.ndarray:
    """The row of QUESTION_FEATURES for one question, given its candidates' sentence probabilities and their
    SENTENCE_FEATURES rows."""
    if not probabilities.size:
        probabilities, rows = np.zeros(1), np.zeros((1, len(SENTENCE_FEATURES)))
    ordered = np.sort(probabilities)[::-1]
    top = np.argsort(-probabilities, kind="stable")[:3]
    column = {name: rows[:, i] for i, name in enumerate(SENTENCE_FEATURES)}
    return np.asarray(
        [
            float(ordered[0]),
            float(ordered[1]) if ordered.size > 1 else 0.0,
            float(ordered[:3].sum()),
            float(min(facts.unknown_terms, 3)),
            float(column["support"].max()),
            float(column["coverage"].max()),
            float(column["dense"].max()),
            facts.pool_coverage,
            facts.top_fused,
            facts.top_dense,
            float(facts.wants_number and not column["number_fit"][top].any()),
            math.log1p(facts.question_words),
            float(facts.multi_hop),
            float(min(facts.unmatched_quoted, 2)),
        ],
        dtype=float,
    )


@dataclass(frozen=True, slots=True)
class Selection:
    ranked: list[ScoredSentence]  # candidates, most probable answer first (score = its probability)
    probability: float  # P(the readable documents answer the question)
    answer: bool

    def describe(self) -> str:
        best = self.ranked[0].score if self.ranked else 0.0
        verdict = "answer" if self.answer else "abstain"
        return f"{verdict} (P(answerable) {self.probability:.2f}, best sentence {best:.2f})"


def rank(
    answerer: Answerer,
    ranked: Sequence[ScoredSentence],
    evidence: Sequence[Evidence],
    chunk_scores: Mapping[int, Mapping[str, float]],
) -> tuple[list[ScoredSentence], np.ndarray, np.ndarray]:
    """The sentence model's order of the first MAX_CANDIDATES candidates (by `score_sentences`' order).

    Returns:
        the candidates most probable first, each with its probability as `score`; and, in the order given,
        their SENTENCE_FEATURES rows and probabilities.
    """
    pool = list(ranked[:MAX_CANDIDATES])
    rows = sentence_features(pool, evidence, next_sentences(pool, evidence), chunk_scores)
    probabilities = answerer.sentence.probabilities(rows)
    rescored = [replace(s, score=float(p)) for s, p in zip(pool, probabilities, strict=True)]
    rescored.sort(key=lambda s: (-s.score, s.evidence_index, s.position))
    return rescored, rows, probabilities


def select(
    answerer: Answerer,
    ranked: Sequence[ScoredSentence],
    evidence: Sequence[Evidence],
    facts: QuestionFacts,
    chunk_scores: Mapping[int, Mapping[str, float]],
    *,
    unknown_terms_abstain: bool = True,
) -> Selection:
    """Rank the candidates by the sentence model and decide whether to answer (`unknown_terms_abstain`: a
    distinctive term no readable chunk holds forces an abstention; off only in a benchmark's ablation).

    Returns a Selection whose `ranked` keeps the candidates the model read, each with its probability as
    `score` (so later steps that compare scores compare probabilities), most probable first."""
    rescored, rows, probabilities = rank(answerer, ranked, evidence, chunk_scores)
    question_row = question_features(probabilities, rows, facts)
    p_answerable = float(answerer.answerable.probabilities(question_row[None, :])[0])
    # a distinctive term that no chunk the principal may read holds means the readable documents lack the
    # topic: abstain whatever the probability (cross-validated on the train split: it catches about a quarter
    # of the unanswerable questions and turns away under 2% of answerable ones)
    answer = p_answerable >= answerer.threshold and (facts.unknown_terms == 0 or not unknown_terms_abstain)
    return Selection(rescored, p_answerable, answer)


def next_sentences(ranked: Sequence[ScoredSentence], evidence: Sequence[Evidence]) -> dict[str, str]:
    """Candidate text -> the sentence after it in its passage (at its recorded position only: the features
    the shipped model was fitted on read it so)."""
    following: dict[str, str] = {}
    for s in ranked:
        parts = passage_sentences(evidence[s.evidence_index])
        at = s.position if s.position < len(parts) and parts[s.position] == s.text else None
        following[s.text] = parts[at + 1] if at is not None and at + 1 < len(parts) else ""
    return following
