"""The Reranker protocol and its backends.

- OfflineReranker (default): needs no weights. Scores each candidate by how completely and how closely it
  contains the question's terms: idf-weighted term coverage (idf computed inside the candidate set), query
  bigrams kept in order, the tightest window holding the matched terms, and verbatim identifiers.
- CrossEncoderReranker: a sentence-transformers CrossEncoder, used when a model path/name is configured and
  present locally.
"""

from __future__ import annotations

import math
import threading
from collections.abc import Sequence
from typing import Any, Protocol

from retrieval.analysis import analyze, identifiers, query_terms


class Reranker(Protocol):
    blend: float  # share of the fused score kept in the final order (0 = reranker alone)

    def score(self, query: str, passages: Sequence[str]) -> list[float]: ...

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
    blend = 0.65  # the fused order stays the main signal; the reranker corrects it (dev set: .65 > .5 > .8)

    def __init__(self, *, semantic: bool = True, **_: Any) -> None:
        self.semantic = semantic
        self._model: Any = None

    def warm_up(self) -> None:
        if self.semantic:
            self._sentence_model().warm_up()

    def score(self, query: str, passages: Sequence[str]) -> list[float]:
        """Scores in [0, 1] for each passage (higher is better).

        Args:
            query: the question.
            passages: candidate texts (with their section trail if available).
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
                lowered = passage.lower()
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
        if self.semantic:
            semantic = self._sentence_similarity(query, passages, q_terms)
            scores = [0.5 * lexical + 0.5 * sim for lexical, sim in zip(scores, semantic, strict=True)]
        return scores

    def _sentence_similarity(self, query: str, passages: Sequence[str], q_terms: list[str]) -> list[float]:
        """Cosine between the question and the passage's most question-like sentence (the one sharing most
        terms with it), with the passage's own embedding model: a local, passage-internal semantic signal."""
        from retrieval.analysis import sentences

        wanted = set(q_terms)
        picked = []
        for passage in passages:
            parts = sentences(passage) or [passage]
            best = max(parts, key=lambda p: len(wanted & set(analyze(p))))
            picked.append(" ".join(best.split()[:48]))
        model = self._sentence_model()
        vectors = model.embed_passages(picked, batch_size=32)
        if model is self._main_embedder():
            from retrieval.search import embed_query

            query_vec = embed_query(query)  # already computed (and memoised) by the dense stage
        else:
            query_vec = model.embed_query(query)
        return [float(x) for x in vectors @ query_vec]

    @staticmethod
    def _main_embedder() -> Any:
        from retrieval.embedders import get_embedder

        return get_embedder()

    def _sentence_model(self) -> Any:
        """An int8-quantised MiniLM (~2.5x faster; only relative similarities matter here): the configured
        embedder when it already is one, otherwise a private instance."""
        if self._model is None:
            from retrieval.embedders import MiniLMEmbedder

            main = self._main_embedder()
            is_int8_minilm = isinstance(main, MiniLMEmbedder) and main.quantize
            self._model = main if is_int8_minilm else MiniLMEmbedder(quantize=True)
        return self._model


class CrossEncoderReranker:
    blend = 0.2

    def __init__(self, *, model: str, max_length: int = 512, **_: Any) -> None:
        self.model_ref = model
        self.max_length = max_length
        self._model: Any = None
        self._lock = threading.Lock()

    def warm_up(self) -> None:
        with self._lock:
            if self._model is None:
                from sentence_transformers import CrossEncoder

                self._model = CrossEncoder(
                    self.model_ref, device="cpu", max_length=self.max_length, local_files_only=True
                )

    def score(self, query: str, passages: Sequence[str]) -> list[float]:
        if not passages:
            return []
        self.warm_up()
        raw = self._model.predict([(query, p) for p in passages], show_progress_bar=False)
        return [float(x) for x in raw]


def get_reranker() -> Reranker:
    from retrieval.backends import load_backend

    return load_backend("ATHENA_RERANKER")
