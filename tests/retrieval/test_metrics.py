"""Unit tests for retrieval.metrics against hand-computed values."""

from __future__ import annotations

import math

import pytest

from retrieval.metrics import (
    dedupe_keep_best,
    hit_rate,
    mrr_at_k,
    ndcg_at_k,
    precision_at_k,
    recall_at_k,
    summarise,
)

pytestmark = pytest.mark.unit

RETRIEVED = ["a", "x", "b", "y", "z"]
GOLD = {"a", "b"}


def test_recall() -> None:
    assert recall_at_k(RETRIEVED, GOLD, 1) == 0.5
    assert recall_at_k(RETRIEVED, GOLD, 3) == 1.0
    assert recall_at_k(RETRIEVED, {"a", "b", "c", "d"}, 5) == 0.5
    assert recall_at_k([], GOLD, 5) == 0.0
    assert recall_at_k(RETRIEVED, set(), 5) == 0.0


def test_precision() -> None:
    assert precision_at_k(RETRIEVED, GOLD, 1) == 1.0
    assert precision_at_k(RETRIEVED, GOLD, 2) == 0.5
    assert precision_at_k(RETRIEVED, GOLD, 5) == pytest.approx(0.4)
    assert precision_at_k(["a"], GOLD, 10) == pytest.approx(0.1)  # short list not rewarded


def test_mrr() -> None:
    assert mrr_at_k(RETRIEVED, GOLD) == 1.0
    assert mrr_at_k(["x", "y", "b"], GOLD) == pytest.approx(1 / 3)
    assert mrr_at_k(["x", "y", "b"], GOLD, k=2) == 0.0
    assert mrr_at_k([], GOLD) == 0.0


def test_ndcg_relevant_at_ranks_1_and_3_of_2_gold() -> None:
    expected = (1 + 1 / math.log2(4)) / (1 + 1 / math.log2(3))
    assert ndcg_at_k(RETRIEVED, GOLD, k=10) == pytest.approx(expected)


def test_ndcg_more_cases() -> None:
    assert ndcg_at_k(["a", "b"], GOLD) == pytest.approx(1.0)
    # single relevant at rank 2 of one gold: (1/log2 3) / 1
    assert ndcg_at_k(["x", "a"], {"a"}) == pytest.approx(1 / math.log2(3))
    # ideal limited by k: 3 gold, k = 2, relevant at 1 and 2 -> 1.0
    assert ndcg_at_k(["a", "b", "c"], {"a", "b", "c"}, k=2) == pytest.approx(1.0)
    assert ndcg_at_k(["x"], GOLD) == 0.0
    assert ndcg_at_k(["a"], set()) == 0.0


def test_duplicates_count_once() -> None:
    retrieved = ["a", "a", "a", "b"]
    assert precision_at_k(retrieved, GOLD, 3) == pytest.approx(1 / 3)
    assert recall_at_k(retrieved, GOLD, 3) == 0.5
    expected = (1 + 1 / math.log2(5)) / (1 + 1 / math.log2(3))
    assert ndcg_at_k(retrieved, GOLD, 4) == pytest.approx(expected)
    assert ndcg_at_k(["a", "a"], {"a"}) == pytest.approx(1.0)


def test_hit_rate() -> None:
    assert hit_rate(RETRIEVED, GOLD, 1) == 1.0
    assert hit_rate(["x", "y", "b"], GOLD, 2) == 0.0
    assert hit_rate(["x", "y", "b"], GOLD, 3) == 1.0


def test_dedupe_keep_best() -> None:
    assert dedupe_keep_best(["d1", "d2", "d1", "d3", "d2"]) == ["d1", "d2", "d3"]
    assert dedupe_keep_best([]) == []
    assert dedupe_keep_best(iter([3, 1, 3])) == [3, 1]


def test_bad_k() -> None:
    for fn in (recall_at_k, precision_at_k, mrr_at_k, ndcg_at_k, hit_rate):
        with pytest.raises(ValueError):
            fn(RETRIEVED, GOLD, 0)


def test_summarise_averages_over_rows_with_gold() -> None:
    rows = [
        (["a", "x", "b"], ["a", "b"]),  # recall 1, p@2 0.5, mrr 1, hit 1
        (["x", "c"], ["c"]),  # recall 1, p@2 0.5, mrr 0.5, hit 1
        (["x", "y"], ["q"]),  # all 0
        (["a"], []),  # skipped
    ]
    result = summarise(rows, k=2)
    assert result["queries"] == 3.0
    assert result["skipped"] == 1.0
    assert result["recall@2"] == pytest.approx((0.5 + 1 + 0) / 3)
    assert result["precision@2"] == pytest.approx((0.5 + 0.5 + 0) / 3)
    assert result["mrr@2"] == pytest.approx((1 + 0.5 + 0) / 3)
    assert result["hit_rate@2"] == pytest.approx(2 / 3)
    ndcg_1 = 1.0 / (1 + 1 / math.log2(3))
    ndcg_2 = (1 / math.log2(3)) / 1.0
    assert result["ndcg@2"] == pytest.approx((ndcg_1 + ndcg_2) / 3)


def test_summarise_empty() -> None:
    result = summarise([], k=10)
    assert result["queries"] == 0.0
    assert result["recall@10"] == 0.0
    assert set(result) == {
        "recall@10",
        "precision@10",
        "mrr@10",
        "ndcg@10",
        "hit_rate@10",
        "queries",
        "skipped",
    }
