"""Maximal marginal relevance (Carbonell & Goldstein 1998) over precomputed embeddings.

MMR picks evidence that is relevant but not redundant: at each step it takes the candidate maximising
``lam * relevance - (1 - lam) * max cosine similarity to anything already picked``. It gets vectors; it
never embeds.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

__all__ = ["mmr"]


def _unit_rows(vectors: np.ndarray) -> np.ndarray:
    norms = np.linalg.norm(vectors, axis=-1, keepdims=True)
    # A zero vector has no direction: treat it as similar to nothing (cosine 0) instead of dividing by 0.
    return np.divide(vectors, norms, out=np.zeros_like(vectors), where=norms > 0)


def mmr(
    query_vec: np.ndarray,
    candidate_vecs: np.ndarray,
    relevance: Sequence[float] | None,
    *,
    lam: float = 0.65,
    k: int = 10,
) -> list[int]:
    """Select up to ``k`` diverse, relevant candidates.

    Args:
        query_vec: the query embedding, shape ``(d,)``; used for relevance only when ``relevance`` is None.
        candidate_vecs: candidate embeddings, shape ``(n, d)``.
        relevance: one score per candidate (reranker scores, any scale); min-max normalised to [0, 1]
            here (all equal -> 1.0). ``None`` uses cosine similarity to ``query_vec`` instead.
        lam: trade-off in [0, 1]; 1.0 is pure relevance order, 0.0 pure diversity. 0.65 leans towards
            relevance because reranker scores are the better signal on technical text.
        k: number of candidates to return; ``k > n`` returns all ``n``.

    Returns:
        Indices into ``candidate_vecs`` in selection order. Deterministic: ties go to the lower index.
    """
    if not 0.0 <= lam <= 1.0:
        raise ValueError(f"lam must be in [0, 1], got {lam!r}")
    vecs = np.asarray(candidate_vecs, dtype=np.float64)
    if vecs.ndim != 2:
        if vecs.size == 0:
            return []
        raise ValueError(f"candidate_vecs must be 2-D (n, d), got shape {vecs.shape}")
    n = vecs.shape[0]
    if n == 0 or k <= 0:
        return []
    unit = _unit_rows(vecs)
    if relevance is None:
        query = np.asarray(query_vec, dtype=np.float64).reshape(-1)
        if query.shape[0] != vecs.shape[1]:
            raise ValueError(f"query_vec has dimension {query.shape[0]}, candidates have {vecs.shape[1]}")
        rel = unit @ _unit_rows(query)
    else:
        rel = np.asarray(relevance, dtype=np.float64).reshape(-1)
        if rel.shape[0] != n:
            raise ValueError(f"got {rel.shape[0]} relevance scores for {n} candidates")
    if not np.all(np.isfinite(rel)):
        raise ValueError("relevance scores must be finite")
    low, high = float(rel.min()), float(rel.max())
    rel = (rel - low) / (high - low) if high > low else np.ones(n)

    similarity = unit @ unit.T
    max_sim = np.full(n, -np.inf)  # -inf until something is selected: the first pick is pure relevance
    available = np.ones(n, dtype=bool)
    selected: list[int] = []
    for _ in range(min(k, n)):
        redundancy = np.where(np.isfinite(max_sim), max_sim, 0.0)
        gain = lam * rel - (1.0 - lam) * redundancy
        gain[~available] = -np.inf
        best = int(np.argmax(gain))  # argmax returns the first maximum: ties go to the lower index
        selected.append(best)
        available[best] = False
        max_sim = np.maximum(max_sim, similarity[best])
    return selected
