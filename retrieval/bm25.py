"""Okapi BM25: the scoring formula and an in-memory reference implementation.

The production scorer runs in PostgreSQL over a postings table; this module holds the exact formula it
must reproduce and :class:`ReferenceBm25`, a small in-memory scorer tests compare it with. No Django here.

Score of document ``d`` for query terms ``Q`` (each distinct term counted once)::

    score(d) = sum over t in Q of idf(t) * tf * (k1 + 1) / (tf + k1 * (1 - b + b * len(d) / avg_len))
    idf(t)   = ln(1 + (N - df + 0.5) / (df + 0.5))

``len(d)`` is the number of terms :func:`knowledge.text.analyze` produced for the chunk (both lanes),
``avg_len`` the mean of that over all ``N`` indexed chunks, ``df`` the number of chunks containing ``t``.
The ``(k1 + 1)`` factor of classic Okapi BM25 is kept (Lucene >= 8 drops it); it scales every score by the
same constant, so rankings are unaffected either way, but SQL and reference must agree.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Generic, TypeVar

import numpy as np

__all__ = [
    "Bm25Params",
    "ReferenceBm25",
    "idf",
    "term_score",
    "tf_component",
]

DocId = TypeVar("DocId", bound=Hashable)
Numeric = TypeVar("Numeric", float, np.ndarray)


@dataclass(frozen=True, slots=True)
class Bm25Params:
    """BM25 parameters.

    Attributes:
        k1: term-frequency saturation (>= 0); 1.2 is the usual default.
        b: document-length normalisation strength in [0, 1]; 0.75 is the usual default.
    """

    k1: float = 1.2
    b: float = 0.75

    def __post_init__(self) -> None:
        if not (self.k1 >= 0 and math.isfinite(self.k1)):
            raise ValueError(f"k1 must be a finite number >= 0, got {self.k1!r}")
        if not 0.0 <= self.b <= 1.0:
            raise ValueError(f"b must be in [0, 1], got {self.b!r}")


def idf(df: int, n_docs: int) -> float:
    """Lucene-style non-negative inverse document frequency.

    Args:
        df: number of documents containing the term (0 <= df <= n_docs).
        n_docs: number of documents in the collection.

    Returns:
        ``ln(1 + (n_docs - df + 0.5) / (df + 0.5))``, always > 0, so a very common term can never lower
        a score (the original Robertson idf goes negative for df > N/2).
    """
    if df < 0 or n_docs < 0 or df > n_docs:
        raise ValueError(f"need 0 <= df <= n_docs, got df={df}, n_docs={n_docs}")
    return math.log(1.0 + (n_docs - df + 0.5) / (df + 0.5))


def term_score(
    tf: int,
    doc_len: int,
    avg_len: float,
    df: int,
    n_docs: int,
    params: Bm25Params = Bm25Params(),  # noqa: B008 - frozen, immutable default
) -> float:
    """Okapi BM25 contribution of one query term to one document.

    Args:
        tf: occurrences of the term in the document; 0 gives 0.0.
        doc_len: number of terms in the document.
        avg_len: mean document length over the collection; when it is 0 (every document empty) length
            normalisation is skipped.
        df: number of documents containing the term.
        n_docs: number of documents in the collection.
        params: ``k1`` and ``b``.

    Returns:
        ``idf(df, n_docs) * tf * (k1 + 1) / (tf + k1 * (1 - b + b * doc_len / avg_len))``.
    """
    if tf < 0 or doc_len < 0:
        raise ValueError(f"tf and doc_len must be >= 0, got tf={tf}, doc_len={doc_len}")
    if tf == 0:
        return 0.0
    return idf(df, n_docs) * tf_component(tf, doc_len, avg_len, params)


def tf_component(
    tf: Numeric,
    doc_len: Numeric,
    avg_len: float,
    params: Bm25Params = Bm25Params(),  # noqa: B008 - frozen, immutable default
) -> Numeric:
    """The term-frequency part of :func:`term_score`: ``tf * (k1 + 1) / (tf + k1 * (1 - b + b * len / avg))``.
    An ``avg_len`` of 0 skips length normalisation. `tf` and `doc_len` may be NumPy arrays (one element per
    posting), as the posting-block scorer passes them."""
    ratio = doc_len / avg_len if avg_len > 0 else 1.0
    return tf * (params.k1 + 1.0) / (tf + params.k1 * (1.0 - params.b + params.b * ratio))


class ReferenceBm25(Generic[DocId]):
    """Exact in-memory BM25 over pre-analysed documents; the oracle for the SQL implementation.

    Args:
        docs: ``{doc_id: terms}``, terms as produced by :func:`knowledge.text.analyze`. Empty documents
            count towards ``n_docs`` and the average length, as they do in the postings tables.
        params: ``k1`` and ``b``.
    """

    def __init__(
        self,
        docs: Mapping[DocId, Sequence[str]],
        params: Bm25Params = Bm25Params(),  # noqa: B008 - frozen, immutable default
    ) -> None:
        self.params = params
        self.n_docs = len(docs)
        self.doc_len: dict[DocId, int] = {doc_id: len(terms) for doc_id, terms in docs.items()}
        total = sum(self.doc_len.values())
        self.avg_len = total / self.n_docs if self.n_docs else 0.0
        # term -> {doc_id: tf}: the same shape as the postings table.
        self.postings: dict[str, dict[DocId, int]] = {}
        for doc_id, terms in docs.items():
            for term, tf in Counter(terms).items():
                self.postings.setdefault(term, {})[doc_id] = tf

    def df(self, term: str) -> int:
        """Number of documents containing ``term``."""
        return len(self.postings.get(term, ()))

    def score(self, query_terms: Iterable[str]) -> dict[DocId, float]:
        """Score every document that contains at least one query term.

        Args:
            query_terms: analysed query terms; duplicates are counted once (as :func:`query_terms` emits).

        Returns:
            ``{doc_id: score}`` for matching documents only; documents matching no term are absent.
        """
        scores: dict[DocId, float] = {}
        for term in dict.fromkeys(query_terms):
            posting = self.postings.get(term)
            if not posting:
                continue
            df = len(posting)
            for doc_id, tf in posting.items():
                contribution = term_score(
                    tf, self.doc_len[doc_id], self.avg_len, df, self.n_docs, self.params
                )
                scores[doc_id] = scores.get(doc_id, 0.0) + contribution
        return scores

    def top(self, query_terms: Iterable[str], k: int = 40) -> list[tuple[DocId, float]]:
        """The ``k`` best ``(doc_id, score)`` pairs, score descending, ties by ascending ``doc_id``."""
        ranked = sorted(self.score(query_terms).items(), key=lambda kv: (-kv[1], kv[0]))
        return ranked[: max(k, 0)]
