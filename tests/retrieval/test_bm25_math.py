"""Unit tests for the pure BM25 formula and the in-memory reference scorer."""

from __future__ import annotations

import math
import random

import pytest

from retrieval.bm25 import Bm25Params, ReferenceBm25, idf, term_score

pytestmark = pytest.mark.unit

# Corpus used throughout: N = 3, lengths 3, 2, 1 -> avg_len = 2.
DOCS = {1: ["a", "b", "a"], 2: ["b", "c"], 3: ["c"]}


def test_params_defaults_and_validation() -> None:
    assert Bm25Params() == Bm25Params(k1=1.2, b=0.75)
    with pytest.raises(ValueError):
        Bm25Params(k1=-0.1)
    with pytest.raises(ValueError):
        Bm25Params(b=1.5)
    with pytest.raises(AttributeError):
        Bm25Params().k1 = 2.0  # type: ignore[misc]


def test_idf_hand_computed() -> None:
    assert idf(0, 10) == pytest.approx(math.log(22.0))  # 1 + 10.5 / 0.5
    assert idf(5, 10) == pytest.approx(math.log(2.0))  # 1 + 5.5 / 5.5
    assert idf(1, 3) == pytest.approx(math.log(8 / 3))  # 1 + 2.5 / 1.5
    assert idf(2, 3) == pytest.approx(math.log(1.6))  # 1 + 1.5 / 2.5


def test_idf_never_negative_and_decreasing() -> None:
    values = [idf(df, 100) for df in range(101)]
    assert all(v > 0 for v in values)
    assert values == sorted(values, reverse=True)
    assert idf(10, 10) == pytest.approx(math.log(1 + 0.5 / 10.5))


def test_idf_rejects_impossible_counts() -> None:
    for df, n in [(-1, 3), (4, 3), (0, -1)]:
        with pytest.raises(ValueError):
            idf(df, n)


def test_term_score_hand_computed() -> None:
    # tf=2, |d|=3, avg=2: K = 1.2 * (0.25 + 0.75 * 1.5) = 1.65; 2 * 2.2 / (2 + 1.65) = 4.4 / 3.65
    assert term_score(2, 3, 2.0, 1, 3) == pytest.approx(math.log(8 / 3) * 4.4 / 3.65)
    # tf=1, |d|=2 = avg: K = 1.2; 2.2 / 2.2 = 1 -> score is the idf
    assert term_score(1, 2, 2.0, 2, 3) == pytest.approx(math.log(1.6))
    # tf=1, |d|=1: K = 1.2 * (0.25 + 0.375) = 0.75; 2.2 / 1.75
    assert term_score(1, 1, 2.0, 2, 3) == pytest.approx(math.log(1.6) * 2.2 / 1.75)


def test_term_score_parameters() -> None:
    base = idf(3, 10)
    # b = 0: no length normalisation
    assert term_score(3, 100, 10.0, 3, 10, Bm25Params(k1=1.2, b=0.0)) == pytest.approx(base * 3 * 2.2 / 4.2)
    # k1 = 0: binary term weight
    assert term_score(7, 100, 10.0, 3, 10, Bm25Params(k1=0.0, b=0.75)) == pytest.approx(base)
    # b = 1: full normalisation, |d| = 2 * avg -> K = 2 * k1
    assert term_score(1, 20, 10.0, 3, 10, Bm25Params(k1=1.0, b=1.0)) == pytest.approx(base * 2 / 3)


def test_term_score_edge_cases() -> None:
    assert term_score(0, 5, 2.0, 1, 3) == 0.0
    # every document empty: avg 0, length normalisation skipped instead of dividing by zero
    assert term_score(1, 0, 0.0, 1, 3) == pytest.approx(idf(1, 3))
    with pytest.raises(ValueError):
        term_score(-1, 5, 2.0, 1, 3)


def test_term_score_saturates_and_prefers_short_documents() -> None:
    scores = [term_score(tf, 10, 10.0, 5, 100) for tf in range(1, 50)]
    assert scores == sorted(scores)
    assert scores[-1] < idf(5, 100) * 2.2
    assert term_score(2, 5, 10.0, 5, 100) > term_score(2, 20, 10.0, 5, 100)


def test_reference_statistics() -> None:
    ref = ReferenceBm25(DOCS)
    assert ref.n_docs == 3
    assert ref.avg_len == pytest.approx(2.0)
    assert ref.df("a") == 1
    assert ref.df("b") == 2
    assert ref.df("zzz") == 0
    assert ref.postings["a"] == {1: 2}


def test_reference_scores_hand_computed() -> None:
    ref = ReferenceBm25(DOCS)
    idf_a, idf_b, idf_c = math.log(8 / 3), math.log(1.6), math.log(1.6)
    scores = ref.score(["a", "b"])
    assert set(scores) == {1, 2}  # doc 3 matches nothing
    # doc 1: a (tf 2, |d| 3) + b (tf 1, |d| 3: K = 1.65 -> 2.2 / 2.65)
    assert scores[1] == pytest.approx(idf_a * 4.4 / 3.65 + idf_b * 2.2 / 2.65)
    # doc 2: b (tf 1, |d| 2 = avg) -> idf
    assert scores[2] == pytest.approx(idf_b)
    assert ref.score(["c"]) == pytest.approx({2: idf_c, 3: idf_c * 2.2 / 1.75})


def test_reference_counts_duplicate_query_terms_once() -> None:
    ref = ReferenceBm25(DOCS)
    assert ref.score(["a", "a", "b"]) == ref.score(["a", "b"])
    assert ref.score([]) == {}
    assert ref.score(["missing"]) == {}


def test_reference_top_orders_by_score_then_id() -> None:
    ref = ReferenceBm25({5: ["x"], 2: ["x"], 9: ["x", "y"], 7: ["z"]})
    top = ref.top(["x"], k=10)
    assert [doc for doc, _ in top] == [2, 5, 9]
    assert top[0][1] == top[1][1]
    assert ref.top(["x"], k=1) == top[:1]
    assert ref.top(["x"], k=0) == []


def test_reference_includes_empty_documents_in_statistics() -> None:
    ref = ReferenceBm25({1: ["a", "a"], 2: []})
    assert ref.n_docs == 2
    assert ref.avg_len == pytest.approx(1.0)
    assert ref.score(["a"])[1] == pytest.approx(term_score(2, 2, 1.0, 1, 2))


def test_reference_matches_brute_force_on_random_corpus() -> None:
    rng = random.Random(7)
    vocab = [f"t{i}" for i in range(30)]
    docs = {i: [rng.choice(vocab) for _ in range(rng.randint(0, 40))] for i in range(200)}
    params = Bm25Params(k1=0.9, b=0.4)
    ref = ReferenceBm25(docs, params)
    avg = sum(len(d) for d in docs.values()) / len(docs)
    query = ["t1", "t3", "t29", "nope"]
    expected: dict[int, float] = {}
    for doc_id, terms in docs.items():
        total, hit = 0.0, False
        for term in query:
            tf = terms.count(term)
            if tf:
                hit = True
                df = sum(term in d for d in docs.values())
                total += term_score(tf, len(terms), avg, df, len(docs), params)
        if hit:
            expected[doc_id] = total
    assert ref.score(query) == pytest.approx(expected)
