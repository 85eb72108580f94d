"""The offline reranker: lexical evidence, plus the stored embeddings when the caller passes them."""

from __future__ import annotations

import numpy as np
import pytest

from retrieval.rerank import OfflineReranker

pytestmark = [pytest.mark.unit]

QUERY = "bgp hold timer on the core routers"


def test_lexical_scores_prefer_the_passage_that_contains_the_question() -> None:
    near, far = OfflineReranker().score(
        QUERY,
        ["Core routers\nThe BGP hold timer on the core routers is 90 seconds.", "Optics\nClean the optics."],
    )
    assert near > far


def test_stored_vectors_break_a_lexical_tie_and_are_optional() -> None:
    passages = ["Timers\nSee the hold timer table.", "Timers\nSee the hold timer table."]
    query_vector = np.array([1.0, 0.0], dtype=np.float32)
    vectors = [np.array([0.0, 1.0], dtype=np.float32), np.array([0.8, 0.6], dtype=np.float32)]
    reranker = OfflineReranker()
    plain = reranker.score(QUERY, passages)
    assert plain[0] == plain[1]
    far, near = reranker.score(QUERY, passages, vectors=vectors, query_vector=query_vector)
    assert near - far == pytest.approx(0.5 * 0.8)  # half of each score is the cosine
    # a candidate without a stored vector gets no semantic credit; semantic=False ignores the vectors
    missing, _ = reranker.score(QUERY, passages, vectors=[None, vectors[1]], query_vector=query_vector)
    assert missing == pytest.approx(0.5 * plain[0])
    assert (
        OfflineReranker(semantic=False).score(QUERY, passages, vectors=vectors, query_vector=query_vector)
        == plain
    )
