"""Unit tests for retrieval.mmr."""

from __future__ import annotations

import numpy as np
import pytest

from retrieval.mmr import mmr

pytestmark = pytest.mark.unit

QUERY = np.array([1.0, 0.0, 0.0])
# 0 and 1 are near-duplicates; 2 points elsewhere.
VECS = np.array([[1.0, 0.0, 0.0], [0.99, 0.01, 0.0], [0.0, 1.0, 0.0]])


def test_lambda_one_is_relevance_order() -> None:
    assert mmr(QUERY, VECS, [0.9, 0.8, 0.1], lam=1.0, k=3) == [0, 1, 2]


def test_diversity_skips_near_duplicate() -> None:
    # normalised relevance [1, 0.5, 0]: 1 -> 0.65*0.5 - 0.35*~1 < 0 = gain of 2
    assert mmr(QUERY, VECS, [0.9, 0.8, 0.7], lam=0.65, k=2) == [0, 2]


def test_hand_computed_second_pick() -> None:
    # normalised relevance: [1.0, 0.75, 0.0]; after picking 0, sims to 0: [1, ~1, 0]
    # gains: 1 -> 0.5*0.75 - 0.5*~1 = ~-0.125 ; 2 -> 0.5*0 - 0.5*0 = 0 -> pick 2
    vecs = np.array([[1.0, 0.0], [1.0, 0.0001], [0.0, 1.0]])
    assert mmr(np.array([1.0, 0.0]), vecs, [4.0, 3.0, 0.0], lam=0.5, k=3) == [0, 2, 1]
    # with lam = 0.9: 1 -> 0.9*0.75 - 0.1*1 = 0.575 > 2 -> 0.0 -> pick 1
    assert mmr(np.array([1.0, 0.0]), vecs, [4.0, 3.0, 0.0], lam=0.9, k=3) == [0, 1, 2]


def test_relevance_is_min_max_normalised() -> None:
    shifted = [100.0 + 10 * s for s in [0.9, 0.8, 0.5]]
    assert mmr(QUERY, VECS, shifted, k=3) == mmr(QUERY, VECS, [0.9, 0.8, 0.5], k=3)


def test_k_larger_than_n_and_zero() -> None:
    assert sorted(mmr(QUERY, VECS, [0.1, 0.2, 0.3], k=10)) == [0, 1, 2]
    assert mmr(QUERY, VECS, [0.1, 0.2, 0.3], k=0) == []
    assert mmr(QUERY, np.zeros((0, 3)), [], k=5) == []


def test_deterministic_ties_go_to_lower_index() -> None:
    vecs = np.eye(4)
    assert mmr(np.ones(4), vecs, [1.0, 1.0, 1.0, 1.0], k=4) == [0, 1, 2, 3]
    assert mmr(np.ones(4), vecs, [0.5, 1.0, 1.0, 0.5], k=4) == [1, 2, 0, 3]


def test_none_relevance_uses_query_cosine() -> None:
    vecs = np.array([[0.0, 1.0], [1.0, 0.1], [1.0, 1.0]])
    assert mmr(np.array([1.0, 0.0]), vecs, None, lam=1.0, k=3) == [1, 2, 0]


def test_zero_vectors_and_unnormalised_inputs() -> None:
    vecs = np.array([[0.0, 0.0], [10.0, 0.0], [0.0, 3.0]])
    assert mmr(np.array([1.0, 0.0]), vecs, [0.2, 0.9, 0.5], k=3) == [1, 2, 0]


def test_inputs_not_mutated_and_float32_ok() -> None:
    vecs = np.random.default_rng(0).normal(size=(20, 8)).astype(np.float32)
    before = vecs.copy()
    rel = list(np.linspace(1, 0, 20))
    picked = mmr(np.ones(8, dtype=np.float32), vecs, rel, k=10)
    assert len(picked) == 10 == len(set(picked))
    assert picked[0] == 0
    assert np.array_equal(vecs, before)
    assert mmr(np.ones(8), vecs, rel, k=10) == picked


def test_validation() -> None:
    with pytest.raises(ValueError):
        mmr(QUERY, VECS, [0.1, 0.2], k=2)
    with pytest.raises(ValueError):
        mmr(QUERY, VECS, [0.1, 0.2, 0.3], lam=1.5)
    with pytest.raises(ValueError):
        mmr(QUERY, np.ones(3), [0.1], k=1)
    with pytest.raises(ValueError):
        mmr(QUERY, VECS, [0.1, float("nan"), 0.3])
    with pytest.raises(ValueError):
        mmr(np.ones(2), VECS, None)
