"""The three retrieval sources, each one SQL statement with the ACL and metadata filters INSIDE it, before
the top-k cut. The statements are knowledge's (knowledge.index_selectors, the app that owns the tables); they
run on the calling thread's connection, so the stages can run concurrently in threads."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from athena.principals import Principal
from knowledge.index_selectors import (
    chunks_bm25_summed,
    chunks_mentioning,
    chunks_nearest,
    chunks_of_linked_documents,
    chunks_readable_among,
    posting_blocks,
    terms_similar_readable,
)
from knowledge.postings import unpack_postings
from knowledge.text import edit_distance
from retrieval.bm25 import Bm25Params, idf, tf_component
from retrieval.fusion import Scored
from retrieval.types import Filters, SearchConfig


def near_readable_terms(term: str, principal: Principal, *, limit: int, min_df: int = 1) -> list[str]:
    """Index terms within `limit` edits of `term` (pg_trgm candidates in at least `min_df` chunks the principal
    can read), closest first."""
    candidates = terms_similar_readable(term, principal, min_df=min_df)
    return [c for c in candidates if edit_distance(term, c, limit) <= limit]


def dense_search(
    query_vec: np.ndarray,
    principal: Principal,
    filters: Filters,
    *,
    k: int = 40,
    ef_search: int = SearchConfig.ef_search,
    model: str | None = None,
) -> list[Scored]:
    """HNSW cosine top-k. Iterative index scans keep going past filtered-out rows, so a selective filter
    (one department, one vendor, one group's documents) still returns a full top-k.

    `model`: the name of the model that made `query_vec` (Embedder.name); only chunks whose stored vectors it
    made are compared (after an embedder change the others wait for `manage.py reembed`, found meanwhile by
    the other sources). None compares every chunk."""
    rows = chunks_nearest(query_vec, principal, filters, k=k, ef_search=ef_search, model=model)
    # relaxed_order may return slightly out of order: sort exactly
    return sorted((Scored(int(i), float(s)) for i, s in rows), key=lambda x: (-x.score, x.id))


def bm25_search(
    terms: Sequence[tuple[str, float]],
    principal: Principal,
    filters: Filters,
    *,
    k: int = 40,
    k1: float = 1.2,
    b: float = 0.75,
    max_df_ratio: float = 0.25,
    method: str = "blocks",
) -> list[Scored]:
    """Exact Okapi BM25 top-k. `terms` carry a query weight (1 for the question's own terms, less for synonym
    expansions). Terms in more than `max_df_ratio` of chunks are dropped: their idf is near zero, yet their
    postings dominate the cost.

    `method` "blocks" (the default, :func:`_bm25_blocks`) reads the terms' posting blocks and sums them in
    NumPy; "sql" sums every posting in one SQL statement (knowledge.index_selectors.chunks_bm25_summed, the
    reference the tests hold the blocks to). Both return the same chunks, scores and order, ACL and filters
    applied before the top-k cut."""
    if not terms:
        return []
    if method not in ("blocks", "sql"):
        raise ValueError(f"unknown BM25 method {method!r}; use 'blocks' or 'sql'")
    weights: dict[str, float] = {}
    for term, weight in terms:
        weights[term] = max(weight, weights.get(term, 0.0))
    if method == "blocks":
        return _bm25_blocks(weights, Bm25Params(k1, b), max_df_ratio, principal, filters, k=k)
    rows = chunks_bm25_summed(weights, principal, filters, k=k, k1=k1, b=b, max_df_ratio=max_df_ratio)
    return [Scored(int(i), float(s)) for i, s in rows]


# an entity mentioned in more readable chunks than this is too common to point anywhere (smtp, http, tcp in
# a mail and web manual set) and is skipped. The bound is also the graph stage's cost: each question entity and
# co-occurring neighbour has its readable mentions counted up to GRAPH_MAX_DF + 1, one ACL-checked index lookup
# each. At 300k chunks 2,000 made the stage 31-41 ms on two cores and 500 makes it 16-19 ms; on the dev corpus
# (17,399 chunks, seven entities above 500 mentions) retrieval MRR@10 and Recall@10 are unchanged on both splits
# and two of 334 answers differ (tests/benchmarks/README.md, thirteenth session)
GRAPH_MAX_DF = 500
FIRST_CHECK = 5  # the visibility check starts with the best FIRST_CHECK x k candidates, 10x more per round
DENSE_SPAN = 4  # sum into an array indexed by chunk id when ids span at most this many times the postings


def _bm25_blocks(
    weights: dict[str, float],
    bm25: Bm25Params,
    max_df_ratio: float,
    principal: Principal,
    filters: Filters,
    *,
    k: int,
) -> list[Scored]:
    """Exact BM25 from posting blocks: one statement reads every block of the kept query terms with the corpus
    statistics, NumPy computes each posting's contribution (bm25.idf x bm25.tf_component, what BM25_SQL
    computes) and sums them per chunk; the candidates are then checked against the ACL and filters in SQL in
    score order, the best 5 x k first, ten times more per round, until k are readable or none are left. Chunks deleted since their block was written
    fail that check like unreadable ones, so stale postings never surface."""
    blocks = posting_blocks(list(weights), max_df_ratio=max_df_ratio)
    if not blocks:
        return []
    n_chunks, total_len = int(blocks[0][3]), int(blocks[0][4])
    n = max(n_chunks, 1)
    avgdl = max(total_len / n, 1.0)
    ids_parts: list[np.ndarray] = []
    score_parts: list[np.ndarray] = []
    for term, df, data, _, _ in blocks:
        postings = unpack_postings(data)
        component = tf_component(
            postings["tf"].astype(np.float64), postings["doc_len"].astype(np.float64), avgdl, bm25
        )
        ids_parts.append(postings["chunk"].astype(np.int64))
        score_parts.append(weights[term] * idf(df, n) * component)
    ids = np.concatenate(ids_parts)
    contributions = np.concatenate(score_parts)
    low = int(ids.min())
    span = int(ids.max()) - low + 1
    if span <= DENSE_SPAN * len(ids) + 1_000_000:
        sums = np.bincount(ids - low, weights=contributions, minlength=span)
        candidates = np.flatnonzero(sums)
        scores = sums[candidates]
        candidates += low
    else:
        candidates, inverse = np.unique(ids, return_inverse=True)
        scores = np.bincount(inverse, weights=contributions)
    return _visible_top(candidates, scores, principal, filters, k=k)


def _visible_top(
    ids: np.ndarray, scores: np.ndarray, principal: Principal, filters: Filters, *, k: int
) -> list[Scored]:
    """The k best (score descending, id ascending) of the candidates that pass the visibility check."""
    found: list[Scored] = []
    checked = 0
    want = FIRST_CHECK * k
    while checked < len(ids) and len(found) < k:
        if want < len(ids):
            # every candidate scoring at least the want-th best: a tie at the cut is taken whole, so each
            # round's order extends the previous one's
            cut = np.partition(scores, len(scores) - want)[len(scores) - want]
            pool = np.flatnonzero(scores >= cut)
        else:
            pool = np.arange(len(ids))
        ranked = pool[np.lexsort((ids[pool], -scores[pool]))][checked:]
        readable = chunks_readable_among(ids[ranked].tolist(), principal, filters)
        for i in ranked:
            if int(ids[i]) in readable:
                found.append(Scored(int(ids[i]), float(scores[i])))
                if len(found) == k:
                    break
        checked += len(ranked)
        want *= 10
    return found


def graph_search(
    entity_keys: Sequence[tuple[str, str]],
    principal: Principal,
    filters: Filters,
    *,
    k: int = 15,
    neighbours: int = 5,
    mentions_per_entity: int = 400,
) -> list[Scored]:
    """Chunks reached from the question's entities: direct mentions (weighted by entity rarity), mentions
    of strongly co-occurring entities, and chunks of documents linked to/from the best documents.

    Each entity contributes its `mentions_per_entity` strongest mentions among the chunks the principal may
    read (index knowledge_mention_strength, ACL checked while walking it, so a narrow principal or filter
    still gets a full list); entities mentioned in more than GRAPH_MAX_DF readable chunks carry no signal
    and are skipped. The cost is bounded whatever the corpus size: each entity's rarity is counted up to
    GRAPH_MAX_DF + 1 mentions (a bound that grew with the corpus, N/50, made it 6,001 index lookups per
    entity at 300k chunks, most of the graph stage's time; see GRAPH_MAX_DF for the bound's size).

    Nothing the principal cannot read shapes the result (see knowledge.index_selectors.GRAPH_SQL): an entity's
    rarity counts only the chunks they may read, and a question entity mentioned in any chunk they may not
    read gets its co-occurring entities recounted over the chunks they may read (the stored edge weights
    count every chunk), so an edge that only a hidden document created is never followed. When the principal
    reads every chunk mentioning the entity the stored edges are exact for them and are used as before."""
    if not entity_keys:
        return []
    too_common = GRAPH_MAX_DF
    rows = chunks_mentioning(
        entity_keys,
        principal,
        filters,
        k=k,
        neighbours=neighbours,
        mentions_per_entity=mentions_per_entity,
        too_common=too_common,
    )
    run = [Scored(int(i), float(s)) for i, s, _ in rows]
    if not rows:
        return run
    # follow document links one step from the three best documents
    top_docs = list(dict.fromkeys(d for _, _, d in rows))[:3]
    floor = min(s for _, s, _ in rows) * 0.5
    seen = {s.id for s in run}
    run += [
        Scored(int(i), floor)
        for i in chunks_of_linked_documents(top_docs, principal, filters)
        if i not in seen
    ]
    return run[: k + 5]
