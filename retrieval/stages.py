"""The three retrieval sources, each one SQL statement with the ACL and metadata filters INSIDE it, before
the top-k cut. They take a cursor-producing connection so they can run concurrently in threads."""

from __future__ import annotations

from collections.abc import Collection, Sequence
from datetime import datetime, time
from typing import Any

import numpy as np
import psycopg
from django.db import connection
from pgvector import Vector

from athena.principals import Principal
from knowledge.postings import unpack_postings
from knowledge.text import edit_distance
from retrieval.bm25 import Bm25Params, idf, tf_component
from retrieval.fusion import Scored
from retrieval.types import Filters


def visibility_sql(principal: Principal, filters: Filters, alias: str = "c") -> tuple[str, list[Any]]:
    """WHERE fragment: active chunk, readable by the principal, matching the metadata filters."""
    clauses = [f"{alias}.active"]
    params: list[Any] = []
    acl = f"({alias}.acl_open OR {alias}.acl_groups && %s::bigint[]"
    params.append(list(principal.group_ids))
    if principal.user_id is not None:
        # a private upload is readable by its owner until it expires (the hourly expiry task then removes it)
        acl += (
            f" OR ({alias}.owner_id_acl = %s AND NOT EXISTS (SELECT 1 FROM knowledge_document expiring"
            f" WHERE expiring.id = {alias}.document_id AND expiring.expires_at <= now()))"
        )
        params.append(principal.user_id)
    clauses.append(acl + ")")
    for column, values in (
        ("doc_type", filters.doc_types),
        ("department", filters.departments),
        ("vendor", filters.vendors),
        ("access_tier", filters.tiers),
    ):
        if values:
            clauses.append(f"{alias}.{column} = ANY(%s)")
            params.append(list(values))
    if filters.updated_after:
        clauses.append(f"{alias}.updated_at >= %s")
        params.append(datetime.combine(filters.updated_after, time.min))
    if filters.updated_before:
        clauses.append(f"{alias}.updated_at <= %s")
        params.append(datetime.combine(filters.updated_before, time.max))
    return " AND ".join(clauses), params


def readable_terms(terms: Collection[str], principal: Principal) -> set[str]:
    """The index terms that occur in at least one chunk `principal` may read. A term found only in documents
    someone cannot see must look to them exactly like a term found nowhere: otherwise a spelling suggestion or
    the adequacy step (shown in the answer's trace) would reveal that such documents exist."""
    if not terms:
        return set()
    where, params = visibility_sql(principal, Filters())
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT x.term FROM unnest(%s::varchar[]) AS x(term) WHERE EXISTS (SELECT 1 FROM knowledge_posting p "
            f"JOIN knowledge_chunk c ON c.id = p.chunk_id WHERE p.term = x.term AND {where})",
            [list(terms), *params],
        )
        return {row[0] for row in cursor.fetchall()}


def indexed_terms(terms: Collection[str]) -> set[str]:
    """The terms that occur in at least one chunk, whoever may read it. Never for what a user is shown: the
    enumeration detector uses it to tell a probe for restricted topics in the audit log."""
    if not terms:
        return set()
    with connection.cursor() as cursor:
        cursor.execute("SELECT term FROM knowledge_termstat WHERE term = ANY(%s) AND df > 0", [list(terms)])
        return {row[0] for row in cursor.fetchall()}


def near_readable_terms(term: str, principal: Principal, *, limit: int, min_df: int = 1) -> list[str]:
    """Index terms within `limit` edits of `term` (pg_trgm candidates in at least `min_df` chunks) that the
    principal can read, closest first."""
    with connection.cursor() as cursor:
        # pg_trgm's default threshold (.3) misses a swap of two letters in a short word ("reciev"/"receiv" share
        # 3 of 11 trigrams); the edit distance below decides, the threshold only bounds the candidates
        cursor.execute("SET pg_trgm.similarity_threshold = 0.2")
        cursor.execute(
            "SELECT term FROM knowledge_termstat WHERE term %% %s AND df >= %s "
            "ORDER BY similarity(term, %s) DESC, term LIMIT 8",
            [term, min_df, term],
        )
        candidates = [row[0] for row in cursor.fetchall() if edit_distance(term, row[0], limit) <= limit]
    readable = readable_terms(candidates, principal)
    return [c for c in candidates if c in readable]


def dense_search(
    query_vec: np.ndarray, principal: Principal, filters: Filters, *, k: int = 40, ef_search: int = 100
) -> list[Scored]:
    """HNSW cosine top-k. Iterative index scans keep going past filtered-out rows, so a selective filter
    (one department, one vendor, one group's documents) still returns a full top-k."""
    where, params = visibility_sql(principal, filters)
    vector = "[" + ",".join(f"{x:.6f}" for x in query_vec.tolist()) + "]"
    with connection.cursor() as cursor:
        cursor.execute("SET hnsw.iterative_scan = relaxed_order")
        cursor.execute(f"SET hnsw.ef_search = {int(ef_search)}")
        cursor.execute(f"SET hnsw.max_scan_tuples = {max(20000, k * 500)}")
        cursor.execute(
            f"SELECT c.id, 1 - (c.embedding <=> %s::vector) AS score FROM knowledge_chunk c "
            f"WHERE {where} AND c.embedding IS NOT NULL ORDER BY c.embedding <=> %s::vector LIMIT %s",
            [vector, *params, vector, k],
        )
        rows = cursor.fetchall()
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
    NumPy; "sql" sums every posting in one SQL statement (the reference the tests hold the blocks to). Both
    return the same chunks, scores and order, ACL and filters applied before the top-k cut."""
    if not terms:
        return []
    if method not in ("blocks", "sql"):
        raise ValueError(f"unknown BM25 method {method!r}; use 'blocks' or 'sql'")
    where, params = visibility_sql(principal, filters)
    weights: dict[str, float] = {}
    for term, weight in terms:
        weights[term] = max(weight, weights.get(term, 0.0))
    with connection.cursor() as cursor:
        if method == "blocks":
            return _bm25_blocks(cursor, weights, Bm25Params(k1, b), max_df_ratio, where, params, k=k)
        cursor.execute(
            BM25_SQL.format(where=where),
            [k1, b, list(weights), list(weights.values()), max_df_ratio, *params, k],
        )
        return [Scored(int(i), float(s)) for i, s in cursor.fetchall()]


BM25_SQL = """
    WITH s AS (SELECT greatest(n_chunks, 1)::float8 AS n,
                      greatest(total_len::float8 / greatest(n_chunks, 1), 1) AS avgdl,
                      %s::float8 AS k1, %s::float8 AS b
               FROM knowledge_corpusstat WHERE id = 1),
    q AS (SELECT t.term, max(x.w) * ln(1 + (s.n - t.df + 0.5) / (t.df + 0.5)) AS idf
          FROM unnest(%s::varchar[], %s::float8[]) AS x(term, w)
          JOIN knowledge_termstat t ON t.term = x.term, s
          WHERE t.df <= greatest(%s * s.n, 50)
          GROUP BY t.term, t.df, s.n),
    scored AS (
          SELECT p.chunk_id, sum(q.idf * p.tf * (s.k1 + 1)
                                 / (p.tf + s.k1 * (1 - s.b + s.b * p.doc_len / s.avgdl))) AS score
          FROM knowledge_posting p JOIN q ON p.term = q.term, s
          GROUP BY p.chunk_id)
    SELECT c.id, scored.score FROM scored JOIN knowledge_chunk c ON c.id = scored.chunk_id
    WHERE {where}
    ORDER BY scored.score DESC, c.id LIMIT %s
"""
# the query terms kept (df within the cap) with their df and posting blocks, and the corpus statistics
BLOCKS_SQL = """
    SELECT t.term, t.df, b.postings, s.n_chunks, s.total_len
    FROM knowledge_corpusstat s, knowledge_termstat t JOIN knowledge_postingblock b ON b.term = t.term
    WHERE s.id = 1 AND t.term = ANY(%s::varchar[]) AND t.df <= greatest(%s * greatest(s.n_chunks, 1), 50)
"""
GRAPH_MAX_DF = 2_000
FIRST_CHECK = 5  # the visibility check starts with the best FIRST_CHECK x k candidates, 10x more per round
DENSE_SPAN = 4  # sum into an array indexed by chunk id when ids span at most this many times the postings


def _bm25_blocks(
    cursor: Any,
    weights: dict[str, float],
    bm25: Bm25Params,
    max_df_ratio: float,
    where: str,
    params: list[Any],
    *,
    k: int,
) -> list[Scored]:
    """Exact BM25 from posting blocks: one statement reads every block of the kept query terms with the corpus
    statistics, NumPy computes each posting's contribution (bm25.idf x bm25.tf_component, what BM25_SQL
    computes) and sums them per chunk; the candidates are then checked against the ACL and filters in SQL in
    score order, the best 5 x k first, ten times more per round, until k are readable or none are left. Chunks deleted since their block was written
    fail that check like unreadable ones, so stale postings never surface."""
    with _binary_cursor() as binary:  # the blocks arrive as raw bytes, a third of the time of their hex text
        binary.execute(BLOCKS_SQL, [list(weights), max_df_ratio], binary=True)
        blocks = binary.fetchall()
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
    return _visible_top(cursor, candidates, scores, where, params, k=k)


def _visible_top(
    cursor: Any, ids: np.ndarray, scores: np.ndarray, where: str, params: list[Any], *, k: int
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
        cursor.execute(
            f"SELECT c.id FROM knowledge_chunk c WHERE c.id = ANY(%s) AND {where}",
            [ids[ranked].tolist(), *params],
        )
        readable = {row[0] for row in cursor.fetchall()}
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
    still gets a full list); entities mentioned in more than max(GRAPH_MAX_DF, N/50) chunks carry no
    signal and are skipped. The cost is bounded whatever the corpus size.

    Nothing the principal cannot read shapes the result (see :data:`GRAPH_SQL`): an entity's rarity counts
    only the chunks they may read, and a question entity mentioned in any chunk they may not read gets its
    co-occurring entities recounted over the chunks they may read (the stored edge weights count every
    chunk), so an edge that only a hidden document created is never followed. When the principal reads
    every chunk mentioning the entity the stored edges are exact for them and are used as before."""
    from knowledge.indexing import MAX_EDGE_ENTITIES

    if not entity_keys:
        return []
    where, params = visibility_sql(principal, filters)
    # edges and rarity are scoped by the ACL alone: metadata filters hide nothing, and answers under a filter
    # keep following the stored edges
    acl, acl_params = visibility_sql(principal, Filters())
    kinds = [kind for kind, _ in entity_keys]
    names = [name for _, name in entity_keys]
    with connection.cursor() as cursor:
        cursor.execute("SELECT n_chunks FROM knowledge_corpusstat WHERE id = 1")
        row = cursor.fetchone()
        too_common = max(GRAPH_MAX_DF, (int(row[0]) if row else 0) // 50)
        cursor.execute(
            GRAPH_SQL.format(acl=acl, where=where),
            [
                *acl_params,  # seed.hidden
                kinds,
                names,
                neighbours,
                neighbours,
                *acl_params,  # recount: the seed's readable mentions
                GRAPH_RECOUNT_MENTIONS,
                MAX_EDGE_ENTITIES,
                MAX_EDGE_ENTITIES,
                neighbours,
                neighbours,
                *acl_params,  # edf: readable mentions only
                too_common + 1,
                *params,
                mentions_per_entity,
                too_common,
                k,
            ],
        )
        rows = cursor.fetchall()
        run = [Scored(int(i), float(s)) for i, s, _ in rows]
        if not rows:
            return run
        # follow document links one step from the three best documents
        top_docs = list(dict.fromkeys(d for _, _, d in rows))[:3]
        floor = min(s for _, s, _ in rows) * 0.5
        cursor.execute(
            f"""
            SELECT DISTINCT ON (c.document_id) c.id FROM knowledge_documentlink l
            JOIN knowledge_chunk c ON c.document_id = CASE WHEN l.source_id = ANY(%s) THEN l.target_id
                                                           ELSE l.source_id END
            WHERE (l.source_id = ANY(%s) OR l.target_id = ANY(%s)) AND l.target_id IS NOT NULL AND {where}
            ORDER BY c.document_id, c.ordinal LIMIT 5
            """,
            [top_docs, top_docs, top_docs, *params],
        )
        seen = {s.id for s in run}
        run += [Scored(int(i), floor) for (i,) in cursor.fetchall() if i not in seen]
    return run[: k + 5]


# A question entity's neighbours for a principal who cannot read every chunk mentioning it are recounted
# over at most its GRAPH_RECOUNT_MENTIONS strongest readable mentions (bounded cost; exact below that).
GRAPH_RECOUNT_MENTIONS = 2_000
# `{acl}`: the principal's ACL on chunk alias c; `{where}`: ACL and metadata filters.
#  seed   - the question's entities; `hidden` when a chunk the principal may not read mentions one
#  near   - each seed and its `neighbours` strongest co-occurring entities: from the stored edges when the
#           seed is not hidden (their weights count chunks the principal may all read), else counted in the
#           chunks the principal may read, with the indexer's rule (both entities among the chunk's
#           MAX_EDGE_ENTITIES most mentioned, ties by entity id); the WHERE on s.hidden is a one-time filter,
#           so only one of the two ways runs per seed
#  edf    - each entity's document frequency among the chunks the principal may read (its rarity)
GRAPH_SQL = """
    WITH seed AS (
        SELECT e.id, EXISTS (SELECT 1 FROM knowledge_mention hm JOIN knowledge_chunk c ON c.id = hm.chunk_id
                             WHERE hm.entity_id = e.id AND ({acl}) IS NOT TRUE) AS hidden
        FROM knowledge_entity e
        JOIN unnest(%s::varchar[], %s::varchar[]) AS x(kind, name) ON e.kind = x.kind AND e.name = x.name),
    near AS (
        SELECT id, 1.0::float8 AS w FROM seed
        UNION ALL
        SELECT nb.other, 0.3 * nb.weight / nullif(max(nb.weight) OVER (PARTITION BY nb.seed_id), 0)
        FROM (SELECT s.id AS seed_id, x.other, x.weight,
                     row_number() OVER (PARTITION BY s.id ORDER BY x.weight DESC) AS r
              FROM seed s CROSS JOIN LATERAL (
                  (SELECT e.target_id AS other, e.weight FROM knowledge_edge e
                   WHERE NOT s.hidden AND e.source_id = s.id AND e.weight > 0 ORDER BY e.weight DESC LIMIT %s)
                  UNION ALL
                  (SELECT e.source_id, e.weight FROM knowledge_edge e
                   WHERE NOT s.hidden AND e.target_id = s.id AND e.weight > 0 ORDER BY e.weight DESC LIMIT %s)
                  UNION ALL
                  (SELECT o.entity_id, count(*)::float8
                   FROM (SELECT m.chunk_id, m.count FROM knowledge_mention m
                         JOIN knowledge_chunk c ON c.id = m.chunk_id
                         WHERE s.hidden AND m.entity_id = s.id AND {acl}
                         ORDER BY m.count DESC, m.chunk_id LIMIT %s) sm
                   JOIN knowledge_mention o ON o.chunk_id = sm.chunk_id AND o.entity_id <> s.id
                   WHERE (SELECT count(*) FROM knowledge_mention r WHERE r.chunk_id = sm.chunk_id
                          AND (r.count > sm.count OR (r.count = sm.count AND r.entity_id < s.id))) < %s
                     AND (SELECT count(*) FROM knowledge_mention r WHERE r.chunk_id = o.chunk_id
                          AND (r.count > o.count OR (r.count = o.count AND r.entity_id < o.entity_id))) < %s
                   GROUP BY o.entity_id ORDER BY 2 DESC, 1 LIMIT %s)) x) nb
        WHERE nb.r <= %s AND nb.other NOT IN (SELECT id FROM seed)),
    ent AS (SELECT id, max(w) AS w FROM near GROUP BY id),
    -- materialised: each df is counted once, not again for every mention row that uses it
    edf AS MATERIALIZED (SELECT ent.id, ent.w,
                   (SELECT count(*) FROM (SELECT 1 FROM knowledge_mention m
                                          JOIN knowledge_chunk c ON c.id = m.chunk_id
                                          WHERE m.entity_id = ent.id AND {acl} LIMIT %s) x) AS df
            FROM ent),
    direct AS (
        SELECT m.chunk_id, m.document_id, sum(edf.w * (1 + ln(m.count)) / ln(2 + edf.df)) AS score
        FROM edf CROSS JOIN LATERAL (
            SELECT m.chunk_id, m.count, c.document_id FROM knowledge_mention m
            JOIN knowledge_chunk c ON c.id = m.chunk_id
            WHERE m.entity_id = edf.id AND {where}
            ORDER BY m.count DESC, m.chunk_id LIMIT %s) m
        WHERE edf.df <= %s
        GROUP BY m.chunk_id, m.document_id)
    SELECT chunk_id, score, document_id FROM direct ORDER BY score DESC, chunk_id LIMIT %s
"""


def fetch_hits(chunk_ids: Sequence[int], visible_to: Principal | None = None) -> dict[int, dict[str, Any]]:
    """Chunk rows (with document fields) by id. Without `visible_to` only for ids an ACL-filtered stage
    returned; with it, ids the principal may not read are left out."""
    if not chunk_ids:
        return {}
    where, params = visibility_sql(visible_to, Filters()) if visible_to is not None else ("true", [])
    # binary results: a vector arrives in pgvector's send format, decoded without parsing 384 numbers of text
    with _binary_cursor() as cursor:
        cursor.execute(
            f"""
            SELECT c.id, c.document_id, d.source, d.title, c.section_path, c.page, c.ordinal, c.text,
                   coalesce(c.updated_at, d.source_updated_at), d.access_tier, c.prev_id, c.content_hash,
                   c.injection_flag, c.embedding, c.vendor
            FROM knowledge_chunk c JOIN knowledge_document d ON d.id = c.document_id
            WHERE c.id = ANY(%s) AND {where}
            """,
            [list(chunk_ids), *params],
            binary=True,
        )
        columns = [
            "chunk_id",
            "document_id",
            "source",
            "title",
            "section",
            "page",
            "ordinal",
            "text",
            "updated_at",
            "access_tier",
            "prev_id",
            "content_hash",
            "injection_flag",
            "embedding",
            "vendor",
        ]
        rows = {}
        for row in cursor.fetchall():
            hit = dict(zip(columns, row, strict=True))
            if hit["embedding"] is not None:
                hit["embedding"] = Vector.from_binary(hit["embedding"]).to_numpy()
            rows[row[0]] = hit
        return rows


def _binary_cursor() -> psycopg.Cursor[Any]:
    """A cursor on Django's connection (same transaction) whose results come in binary form. Django's own
    cursors bind parameters client-side, and psycopg returns binary results only with server-side binding."""
    connection.ensure_connection()
    return psycopg.Cursor(connection.connection)


class MixedEmbeddingsError(RuntimeError):
    pass


def embedding_model_check(model_name: str) -> None:
    """Refuse dense search when stored vectors come from another model (they are not comparable)."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT DISTINCT embedding_model FROM knowledge_chunk WHERE active AND embedding_model <> ''"
            " LIMIT 3"
        )
        models = [row[0] for row in cursor.fetchall()]
    foreign = [m for m in models if m != model_name]
    if foreign:
        raise MixedEmbeddingsError(
            f"stored vectors were made by {', '.join(foreign)} but the configured embedder is {model_name}; "
            "run `manage.py reembed`"
        )
