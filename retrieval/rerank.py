"""The Reranker protocol and its backends.

- OfflineReranker (default): needs no weights. Scores each candidate by how completely and how closely it
  contains the question's terms: idf-weighted term coverage (idf computed inside the candidate set), query
  bigrams kept in order, the tightest window holding the matched terms, verbatim identifiers and heading
  match; blended with the cosine of the candidate's stored embedding to the question.
- CrossEncoderReranker: a sentence-transformers CrossEncoder, used when a model path/name is configured and
  present locally.
"""

from __future__ import annotations

import math
import threading
from collections.abc import Sequence
from typing import Any, Protocol

import numpy as np

from knowledge.text import analyze, identifiers, match_form, query_terms


class Reranker(Protocol):
    blend: float  # share of the fused score kept in the final order (0 = reranker alone)

    def score(
        self,
        query: str,
        passages: Sequence[str],
        *,
        vectors: Sequence[np.ndarray | None] | None = None,
        query_vector: np.ndarray | None = None,
    ) -> list[float]:
        """One score per passage, higher is better. `vectors` are the passages' stored embeddings and
        `query_vector` the question's, for backends that use them."""

    def warm_up(self) -> None: ...


def _min_window(positions: dict[str, list[int]]) -> int:
    """Length of the smallest token window containing at least one position of every term given."""
    events = sorted((pos, term) for term, plist in positions.items() for pos in plist)
    need = len(positions)
    counts: dict[str, int] = {}
    have = 0
    best = math.inf
    left = 0
    for pos, term in events:
        counts[term] = counts.get(term, 0) + 1
        if counts[term] == 1:
            have += 1
        while have == need:
            best = min(best, pos - events[left][0] + 1)
            lterm = events[left][1]
            counts[lterm] -= 1
            if counts[lterm] == 0:
                have -= 1
            left += 1
    return int(best) if best != math.inf else 10**6


class OfflineReranker:
    blend = 0.8  # the fused order stays the main signal; the reranker corrects it (dev set: .8 > .65 > .5)

    def __init__(self, *, semantic: bool = True, **_: Any) -> None:
        self.semantic = semantic

    def warm_up(self) -> None:
        """Nothing to load: the semantic signal uses vectors computed at ingestion."""

    def score(
        self,
        query: str,
        passages: Sequence[str],
        *,
        vectors: Sequence[np.ndarray | None] | None = None,
        query_vector: np.ndarray | None = None,
    ) -> list[float]:
        """Scores in [0, 1] for each passage (higher is better).

        Args:
            query: the question.
            passages: candidate texts (with their section trail if available).
            vectors/query_vector: the passages' stored embeddings and the question's. When given (and
                `semantic`), their cosine is half of each score: it is the only semantic signal for the
                candidates that dense retrieval did not return itself (their fused dense score is 0).
        Returns:
            one score per passage, same order.
        """
        q_terms = query_terms(query)
        if not q_terms or not passages:
            return [0.0 for _ in passages]
        q_ids = {i.lower() for i in identifiers(query)}
        analysed = [analyze(p) for p in passages]
        n = len(passages)
        df = {t: sum(1 for terms in analysed if t in set(terms)) for t in q_terms}
        idf = {t: math.log((n + 1) / (df[t] + 0.5)) + 0.1 for t in q_terms}
        total_idf = sum(idf.values())
        q_bigrams = list(zip(q_terms, q_terms[1:], strict=False))
        scores = []
        for passage, terms in zip(passages, analysed, strict=True):
            present = set(terms)
            matched = [t for t in q_terms if t in present]
            coverage = sum(idf[t] for t in matched) / total_idf
            if q_bigrams:
                bigrams = set(zip(terms, terms[1:], strict=False))
                bigram = sum(1 for bg in q_bigrams if bg in bigrams) / len(q_bigrams)
            else:
                bigram = 0.0
            if len(matched) >= 2:
                positions: dict[str, list[int]] = {}
                for i, t in enumerate(terms):
                    if t in present and t in idf:
                        positions.setdefault(t, []).append(i)
                window = _min_window(positions)
                proximity = len(matched) / window
            else:
                proximity = 0.0
            if q_ids:
                lowered = match_form(passage)  # folded as the identifiers are (lower case for ASCII)
                ident = sum(1 for i in q_ids if i in lowered) / len(q_ids)
            else:
                ident = 0.0
            # the heading line (title and section trail) names what the passage is about: a question naming
            # a command, option or module is best served by the passage headed by it
            heading_terms = set(analyze(passage.split("\n", 1)[0]))
            heading = sum(idf[t] for t in q_terms if t in heading_terms) / total_idf
            scores.append(
                0.4 * coverage + 0.15 * bigram + 0.15 * min(1.0, proximity) + 0.1 * ident + 0.2 * heading
            )
        if self.semantic and query_vector is not None and vectors is not None:
            cosines = [
                float(np.asarray(v, dtype=np.float32) @ query_vector) if v is not None else 0.0
                for v in vectors
            ]
            scores = [0.5 * lexical + 0.5 * sim for lexical, sim in zip(scores, cosines, strict=True)]
        return scores


class CrossEncoderReranker:
    blend = 0.2

    def __init__(self, *, model: str, max_length: int = 512, device: str | None = None, **_: Any) -> None:
        self.model_ref = model
        self.max_length = max_length
        self.requested_device = device  # None: settings.ATHENA_DEVICE (auto|cpu|cuda)
        self.device = "cpu"  # resolved when the model loads
        self._model: Any = None
        self._lock = threading.Lock()

    def warm_up(self) -> None:
        with self._lock:
            if self._model is None:
                from sentence_transformers import CrossEncoder

                from athena.devices import torch_device

                self.device = torch_device(self.requested_device)
                model = CrossEncoder(
                    self.model_ref, device=self.device, max_length=self.max_length, local_files_only=True
                )
                if self.device == "cuda":
                    model.model.half()  # fp16 on the GPU; scores only rank, ~1e-3 changes do not matter
                self._model = model

    def score(self, query: str, passages: Sequence[str], **_: Any) -> list[float]:
        if not passages:
            return []
        self.warm_up()
        raw = self._model.predict([(query, p) for p in passages], show_progress_bar=False)
        return [float(x) for x in raw]


def get_reranker() -> Reranker:
    from athena.backends import load_backend

    return load_backend("ATHENA_RERANKER")
