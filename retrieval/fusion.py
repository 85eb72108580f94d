"""Fusion of ranked runs from several retrievers (dense, BM25, graph) into one ranking.

Pure functions over :class:`Scored` values: inputs are never mutated, outputs are new lists, and every
ordering is deterministic (ties broken by ascending id).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from athena.choices import Choice

__all__ = ["FusionMode", "Scored", "combsum", "fuse", "minmax", "rrf"]


@dataclass(frozen=True, slots=True)
class Scored:
    """One retrieved item (a chunk id) with a source-specific score; higher is better."""

    id: int
    score: float


def _ranked(items: Mapping[int, float]) -> list[Scored]:
    return [Scored(i, s) for i, s in sorted(items.items(), key=lambda kv: (-kv[1], kv[0]))]


def _best_per_id(run: Sequence[Scored]) -> dict[int, float]:
    # A retriever should not return an id twice; if it does, its best score stands.
    best: dict[int, float] = {}
    for item in run:
        if not math.isfinite(item.score):
            raise ValueError(f"score of id {item.id} is not finite: {item.score!r}")
        previous = best.get(item.id)
        if previous is None or item.score > previous:
            best[item.id] = item.score
    return best


def _check_weights(sources: Sequence[str], weights: Mapping[str, float]) -> None:
    missing = [s for s in sources if s not in weights]
    if missing:
        raise ValueError(f"no weight for source(s) {', '.join(sorted(missing))}")
    for source, weight in weights.items():
        if not (math.isfinite(weight) and weight >= 0):
            raise ValueError(f"weight of {source!r} must be a finite number >= 0, got {weight!r}")


def minmax(run: Sequence[Scored]) -> list[Scored]:
    """Min-max normalise scores to [0, 1], keeping the input order.

    Args:
        run: scored items of one source.

    Returns:
        New items with ``(score - min) / (max - min)``; when every score is equal (including a single
        item) each becomes 1.0, since each was as good as the best. Empty in, empty out.
    """
    if not run:
        return []
    scores = [item.score for item in run]
    low, high = min(scores), max(scores)
    if not high > low:
        return [Scored(item.id, 1.0) for item in run]
    span = high - low
    return [Scored(item.id, (item.score - low) / span) for item in run]


def combsum(runs: Mapping[str, Sequence[Scored]], weights: Mapping[str, float]) -> list[Scored]:
    """Weighted CombSUM over per-source min-max normalised scores.

    Args:
        runs: ``{source: scored items}``, e.g. ``{"dense": [...], "bm25": [...], "graph": [...]}``.
        weights: ``{source: weight >= 0}``; every source in ``runs`` needs one (extra weights are ignored).

    Returns:
        Every id that appears in any run, with ``sum(weight[s] * minmax(run[s])[id])``; an id missing from
        a source contributes 0 there. Sorted by score descending, ties by ascending id.
    """
    _check_weights(list(runs), weights)
    totals: dict[int, float] = {}
    for source, run in runs.items():
        weight = weights[source]
        best = _best_per_id(run)
        for item in minmax([Scored(i, s) for i, s in best.items()]):
            totals[item.id] = totals.get(item.id, 0.0) + weight * item.score
    return _ranked(totals)


def rrf(
    runs: Mapping[str, Sequence[Scored]],
    *,
    k: int = 60,
    weights: Mapping[str, float] | None = None,
) -> list[Scored]:
    """Weighted reciprocal rank fusion (Cormack et al. 2009).

    Args:
        runs: ``{source: scored items}``. Each run is ranked by its scores, descending; equal scores keep
            their order in the run (a stable sort), so a run already in rank order is used as given.
            A repeated id keeps its best rank.
        k: rank offset (> 0); 60 as in the paper.
        weights: optional ``{source: weight >= 0}``; ``None`` weights every source 1.0.

    Returns:
        Every id in any run with ``sum(weight[s] / (k + rank_s(id)))`` (rank starts at 1), sorted by
        score descending, ties by ascending id.
    """
    if k <= 0:
        raise ValueError(f"k must be > 0, got {k}")
    if weights is not None:
        _check_weights(list(runs), weights)
    totals: dict[int, float] = {}
    for source, run in runs.items():
        weight = 1.0 if weights is None else weights[source]
        _best_per_id(run)  # validates scores
        seen: set[int] = set()
        rank = 0
        for item in sorted(run, key=lambda it: -it.score):
            if item.id in seen:
                continue
            seen.add(item.id)
            rank += 1
            totals[item.id] = totals.get(item.id, 0.0) + weight / (k + rank)
    return _ranked(totals)


class FusionMode(Choice):
    """How retriever runs are fused."""

    COMBSUM = "combsum"
    RRF = "rrf"


def fuse(
    mode: FusionMode | str,
    runs: Mapping[str, Sequence[Scored]],
    weights: Mapping[str, float] | None = None,
) -> list[Scored]:
    """Fuse runs with the given mode.

    Args:
        mode: a :class:`FusionMode` or its name (``"combsum"``, ``"rrf"``).
        runs: ``{source: scored items}``.
        weights: ``{source: weight}``; required for CombSUM, optional for RRF (default 1.0 each).

    Returns:
        The fused ranking, score descending, ties by ascending id.
    """
    if isinstance(mode, str):
        mode = FusionMode.from_str(mode)
    if mode is FusionMode.COMBSUM:
        if weights is None:
            raise ValueError("combsum fusion needs weights")
        return combsum(runs, weights)
    return rrf(runs, weights=weights)
