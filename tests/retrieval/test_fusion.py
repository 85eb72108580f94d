"""Unit tests for retrieval.fusion: min-max, weighted CombSUM, RRF and mode parsing."""

from __future__ import annotations

import pytest

from retrieval.fusion import FusionMode, Scored, combsum, fuse, minmax, rrf

pytestmark = pytest.mark.unit


def ids(run: list[Scored]) -> list[int]:
    return [s.id for s in run]


def as_dict(run: list[Scored]) -> dict[int, float]:
    return {s.id: s.score for s in run}


def test_scored_is_frozen() -> None:
    item = Scored(1, 0.5)
    with pytest.raises(AttributeError):
        item.score = 1.0  # type: ignore[misc]


def test_minmax_basic_keeps_order() -> None:
    run = [Scored(3, 10.0), Scored(1, 5.0), Scored(2, 0.0)]
    assert minmax(run) == [Scored(3, 1.0), Scored(1, 0.5), Scored(2, 0.0)]
    assert run[0].score == 10.0  # input untouched


def test_minmax_negative_scores() -> None:
    assert as_dict(minmax([Scored(1, -2.0), Scored(2, -4.0), Scored(3, -3.0)])) == {1: 1.0, 2: 0.0, 3: 0.5}


def test_minmax_all_equal_and_empty() -> None:
    assert minmax([Scored(1, 0.3), Scored(2, 0.3)]) == [Scored(1, 1.0), Scored(2, 1.0)]
    assert minmax([Scored(4, -1.0)]) == [Scored(4, 1.0)]
    assert minmax([]) == []


def test_combsum_hand_computed() -> None:
    runs = {
        "dense": [Scored(1, 0.9), Scored(2, 0.7), Scored(3, 0.5)],  # -> 1.0, 0.5, 0.0
        "bm25": [Scored(3, 12.0), Scored(4, 4.0)],  # -> 1.0, 0.0
        "graph": [Scored(2, 1.0)],  # single -> 1.0
    }
    fused = combsum(runs, {"dense": 0.5, "bm25": 0.35, "graph": 0.15})
    assert as_dict(fused) == pytest.approx({1: 0.5, 2: 0.25 + 0.15, 3: 0.35, 4: 0.0})
    assert ids(fused) == [1, 2, 3, 4]


def test_combsum_ties_broken_by_id() -> None:
    runs = {"a": [Scored(9, 1.0), Scored(5, 0.0)], "b": [Scored(5, 1.0), Scored(9, 0.0)]}
    fused = combsum(runs, {"a": 1.0, "b": 1.0})
    assert fused == [Scored(5, 1.0), Scored(9, 1.0)]


def test_combsum_missing_source_scores_zero_and_empty_runs() -> None:
    fused = combsum({"dense": [Scored(1, 2.0), Scored(2, 1.0)], "bm25": []}, {"dense": 0.5, "bm25": 0.5})
    assert as_dict(fused) == {1: 0.5, 2: 0.0}
    assert combsum({}, {"dense": 1.0}) == []


def test_combsum_duplicate_id_in_run_keeps_best() -> None:
    fused = combsum({"a": [Scored(1, 1.0), Scored(1, 5.0), Scored(2, 3.0)]}, {"a": 1.0})
    assert as_dict(fused) == {1: 1.0, 2: 0.0}


def test_combsum_validates_weights_and_scores() -> None:
    with pytest.raises(ValueError, match="bm25"):
        combsum({"dense": [Scored(1, 1.0)], "bm25": [Scored(1, 1.0)]}, {"dense": 1.0})
    with pytest.raises(ValueError):
        combsum({"dense": [Scored(1, 1.0)]}, {"dense": -1.0})
    with pytest.raises(ValueError):
        combsum({"dense": [Scored(1, float("nan"))]}, {"dense": 1.0})


def test_combsum_does_not_mutate_inputs() -> None:
    run = [Scored(1, 3.0), Scored(2, 1.0)]
    runs = {"a": run}
    combsum(runs, {"a": 1.0})
    assert run == [Scored(1, 3.0), Scored(2, 1.0)]


def test_rrf_hand_computed() -> None:
    runs = {"dense": [Scored(1, 0.9), Scored(2, 0.8)], "bm25": [Scored(2, 7.0), Scored(3, 6.0)]}
    fused = rrf(runs, k=60)
    assert as_dict(fused) == pytest.approx({1: 1 / 61, 2: 1 / 62 + 1 / 61, 3: 1 / 62})
    assert ids(fused) == [2, 1, 3]


def test_rrf_weights_and_k() -> None:
    runs = {"dense": [Scored(1, 0.9)], "bm25": [Scored(2, 7.0)]}
    fused = rrf(runs, k=1, weights={"dense": 0.5, "bm25": 2.0})
    assert fused == [Scored(2, 1.0), Scored(1, 0.25)]


def test_rrf_ranks_by_score_stably() -> None:
    # unsorted input is ranked by score; equal scores keep run order
    run = [Scored(5, 0.1), Scored(7, 0.9), Scored(3, 0.5), Scored(4, 0.5)]
    fused = rrf({"a": run}, k=10)
    assert ids(fused) == [7, 3, 4, 5]
    assert as_dict(fused)[4] == pytest.approx(1 / 13)


def test_rrf_duplicate_keeps_best_rank() -> None:
    fused = rrf({"a": [Scored(1, 3.0), Scored(2, 2.0), Scored(1, 1.0)]}, k=60)
    assert as_dict(fused) == pytest.approx({1: 1 / 61, 2: 1 / 62})


def test_rrf_validation() -> None:
    with pytest.raises(ValueError):
        rrf({"a": [Scored(1, 1.0)]}, k=0)
    with pytest.raises(ValueError):
        rrf({"a": [Scored(1, 1.0)]}, weights={"b": 1.0})
    assert rrf({}) == []


def test_fusion_mode_from_str() -> None:
    assert FusionMode.from_str("combsum") is FusionMode.COMBSUM
    assert FusionMode.from_str(" RRF ") is FusionMode.RRF
    with pytest.raises(ValueError, match="combsum, rrf"):
        FusionMode.from_str("borda")


def test_fuse_dispatches() -> None:
    runs = {"dense": [Scored(1, 0.9), Scored(2, 0.1)], "bm25": [Scored(2, 3.0)]}
    weights = {"dense": 0.6, "bm25": 0.4}
    assert fuse(FusionMode.COMBSUM, runs, weights) == combsum(runs, weights)
    assert fuse("combsum", runs, weights) == combsum(runs, weights)
    assert fuse("rrf", runs, weights) == rrf(runs, weights=weights)
    assert fuse(FusionMode.RRF, runs, None) == rrf(runs)
    with pytest.raises(ValueError):
        fuse("combsum", runs, None)
    with pytest.raises(ValueError):
        fuse("nope", runs, weights)
