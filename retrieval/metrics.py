"""Retrieval evaluation metrics with binary relevance.

``retrieved`` is a ranked list of ids (best first), ``gold`` the set of relevant ids. An id repeated in
``retrieved`` counts once, at its first (best) position, so no metric can exceed 1.0 when several chunks
of one gold document are retrieved. Queries with empty gold are skipped by :func:`summarise`; the single
query functions return 0.0 for them.
"""

from __future__ import annotations

import math
import re
import unicodedata
from collections.abc import Collection, Hashable, Iterable, Sequence
from typing import TypeVar

__all__ = [
    "dedupe_keep_best",
    "hit_rate",
    "mrr_at_k",
    "ndcg_at_k",
    "precision_at_k",
    "recall_at_k",
    "summarise",
]

T = TypeVar("T", bound=Hashable)


def _check_k(k: int) -> None:
    if k <= 0:
        raise ValueError(f"k must be > 0, got {k}")


def dedupe_keep_best(seq: Iterable[T]) -> list[T]:
    """Drop repeated items, keeping each at its first (best-ranked) position.

    Use it to turn a chunk ranking mapped to document ids into a document ranking.
    """
    return list(dict.fromkeys(seq))


def _relevant_positions(retrieved: Sequence[T], gold: Collection[T], k: int) -> list[int]:
    """0-based positions, within the top k, of the first occurrence of each relevant item."""
    seen: set[T] = set()
    positions: list[int] = []
    for position, item in enumerate(retrieved[:k]):
        if item in gold and item not in seen:
            seen.add(item)
            positions.append(position)
    return positions


def recall_at_k(retrieved: Sequence[T], gold: Collection[T], k: int) -> float:
    """Share of gold items found in the top ``k``: ``|top_k ∩ gold| / |gold|`` (0.0 for empty gold)."""
    _check_k(k)
    gold = set(gold)
    if not gold:
        return 0.0
    return len(_relevant_positions(retrieved, gold, k)) / len(gold)


def precision_at_k(retrieved: Sequence[T], gold: Collection[T], k: int) -> float:
    """Distinct relevant items in the top ``k`` divided by ``k`` (a short list is not rewarded)."""
    _check_k(k)
    return len(_relevant_positions(retrieved, set(gold), k)) / k


def mrr_at_k(retrieved: Sequence[T], gold: Collection[T], k: int = 10) -> float:
    """Reciprocal rank of the first relevant item within the top ``k`` (1-based), else 0.0."""
    _check_k(k)
    positions = _relevant_positions(retrieved, set(gold), k)
    return 1.0 / (positions[0] + 1) if positions else 0.0


def ndcg_at_k(retrieved: Sequence[T], gold: Collection[T], k: int = 10) -> float:
    """Normalised discounted cumulative gain with binary relevance.

    ``DCG = sum(1 / log2(rank + 1))`` over relevant items at 1-based ``rank <= k``; the ideal DCG puts
    ``min(|gold|, k)`` relevant items at ranks 1, 2, ... Returns 0.0 for empty gold.
    """
    _check_k(k)
    gold = set(gold)
    if not gold:
        return 0.0
    dcg = sum(1.0 / math.log2(position + 2) for position in _relevant_positions(retrieved, gold, k))
    ideal = sum(1.0 / math.log2(position + 2) for position in range(min(len(gold), k)))
    return dcg / ideal


def hit_rate(retrieved: Sequence[T], gold: Collection[T], k: int) -> float:
    """1.0 if any gold item is in the top ``k``, else 0.0."""
    _check_k(k)
    return 1.0 if _relevant_positions(retrieved, set(gold), k) else 0.0


def summarise(rows: Iterable[tuple[Sequence[T], Collection[T]]], k: int = 10) -> dict[str, float]:
    """Average every metric over queries that have at least one gold item.

    Args:
        rows: ``(retrieved, gold)`` per query.
        k: cut-off.

    Returns:
        ``{"recall@k", "precision@k", "mrr@k", "ndcg@k", "hit_rate@k"}`` (with the number in place of k)
        averaged over the counted queries, plus ``"queries"`` (how many were counted) and ``"skipped"``
        (how many had empty gold). All averages are 0.0 when no query counts.
    """
    _check_k(k)
    metrics = {
        f"recall@{k}": recall_at_k,
        f"precision@{k}": precision_at_k,
        f"mrr@{k}": mrr_at_k,
        f"ndcg@{k}": ndcg_at_k,
        f"hit_rate@{k}": hit_rate,
    }
    totals = dict.fromkeys(metrics, 0.0)
    counted = skipped = 0
    for retrieved, gold in rows:
        gold_set = set(gold)
        if not gold_set:
            skipped += 1
            continue
        counted += 1
        for name, metric in metrics.items():
            totals[name] += metric(retrieved, gold_set, k)
    summary = {name: (total / counted if counted else 0.0) for name, total in totals.items()}
    summary["queries"] = float(counted)
    summary["skipped"] = float(skipped)
    return summary


# Answer containment, as the dev set's scorer matches: NFKC, typographic quotes and dashes folded to ASCII,
# lower case, whitespace collapsed, and the gold string on token edges ("10" is not in "100").
_FOLD: dict[int, str] = {
    ord(k): v
    for k, v in {
        "\u2018": "'",
        "\u2019": "'",
        "\u201c": '"',
        "\u201d": '"',
        "\u2013": "-",
        "\u2014": "-",
        "\u00a0": " ",
    }.items()
}


def normalise(text: str) -> str:
    text = unicodedata.normalize("NFKC", text or "")
    text = text.translate(_FOLD)
    return re.sub(r"\s+", " ", text.lower()).strip()


def contains(answer: str, gold: str) -> bool:
    """Whether `answer` contains `gold` after normalisation, on token edges."""
    pattern = r"(?<!\w)" + re.escape(normalise(gold)) + r"(?!\w)"
    return re.search(pattern, normalise(answer)) is not None
