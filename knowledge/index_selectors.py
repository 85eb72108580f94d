"""Reads of the search index: chunks, postings, term and corpus statistics, the entity graph.

Retrieval's stages call these instead of writing SQL on knowledge's tables (the SQL on a table lives in the app
that owns it). Each function runs the statement(s) the stage ran before, unchanged and in the same order, on
Django's connection of the calling thread (retrieval runs its stages in pool threads). Every read that serves
a user takes the principal and puts the ACL inside its WHERE clause, before any top-k cut.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from datetime import date, datetime, time
from typing import Any, Protocol

import numpy as np
import psycopg
from django.db import connection
from pgvector import Vector

from athena.principals import Principal


class ChunkFilters(Protocol):
    """The metadata filters a search applies to chunks (retrieval.types.Filters has this shape)."""

    @property
    def doc_types(self) -> Collection[str]: ...
    @property
    def departments(self) -> Collection[str]: ...
    @property
    def vendors(self) -> Collection[str]: ...
    @property
    def tiers(self) -> Collection[str]: ...
    @property
    def updated_after(self) -> date | None: ...
    @property
    def updated_before(self) -> date | None: ...


# PostgreSQL's array overlap (`&&`) compares every element of one array with every element of the other, a
# nested loop: a chunk shared with 500 groups costs 150,000 comparisons for a principal in 300 groups who is in
# none of them (0.6 ms a chunk; a graph search that checks a few thousand mentions took 1-2 s). A principal in
# more groups than this is checked with a hashed lookup instead (visibility_sql); up to it, `&&` (at most this
# many comparisons per group of the chunk) as it always was.
ACL_OVERLAP_MAX_GROUPS = 16


def visibility_sql(
    principal: Principal, filters: ChunkFilters | None = None, alias: str = "c"
) -> tuple[str, list[Any]]:
    """WHERE fragment: active chunk of an unexpired document, readable by the principal, matching the metadata
    filters (none when `filters` is None)."""
    # an expired document is readable by nobody, owner or group, from the moment it expires (the hourly expiry
    # task then removes it); the chunk carries the document's expiry, so this is a column test in the scan
    clauses = [f"{alias}.active", f"({alias}.expires_at IS NULL OR {alias}.expires_at > now())"]
    params: list[Any] = []
    if len(principal.group_ids) <= ACL_OVERLAP_MAX_GROUPS:
        acl = f"({alias}.acl_open OR {alias}.acl_groups && %s::bigint[]"
    else:
        # the same rule, probed the other way round: each of the chunk's groups looked up in the principal's
        # array, which PostgreSQL hashes once per statement (a constant array of 9 or more)
        acl = (
            f"({alias}.acl_open"
            f" OR EXISTS (SELECT FROM unnest({alias}.acl_groups) g WHERE g = ANY(%s::bigint[]))"
        )
    params.append(list(principal.group_ids))
    if principal.user_id is not None:
        acl += f" OR {alias}.owner_id_acl = %s"  # a private upload is readable by its owner
        params.append(principal.user_id)
    clauses.append(acl + ")")
    if filters is None:
        return " AND ".join(clauses), params
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


def terms_readable(terms: Collection[str], principal: Principal) -> set[str]:
    """The index terms that occur in at least one chunk `principal` may read. A term found only in documents
    someone cannot see must look to them exactly like a term found nowhere: otherwise a spelling suggestion or
    the adequacy step (shown in the answer's trace) would reveal that such documents exist."""
    if not terms:
        return set()
    where, params = visibility_sql(principal)
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT x.term FROM unnest(%s::varchar[]) AS x(term) WHERE EXISTS (SELECT 1 FROM knowledge_posting p "
            f"JOIN knowledge_chunk c ON c.id = p.chunk_id WHERE p.term = x.term AND {where})",
            [list(terms), *params],
        )
        return {row[0] for row in cursor.fetchall()}


def terms_indexed(terms: Collection[str]) -> set[str]:
    """The terms that occur in at least one chunk, whoever may read it. Never for what a user is shown: the
    enumeration detector uses it to tell a probe for restricted topics in the audit log."""
    if not terms:
        return set()
    with connection.cursor() as cursor:
        cursor.execute("SELECT term FROM knowledge_termstat WHERE term = ANY(%s) AND df > 0", [list(terms)])
        return {row[0] for row in cursor.fetchall()}


def terms_similar_readable(term: str, principal: Principal, *, min_df: int) -> list[str]:
    """Up to 8 index terms that share trigrams with `term` and occur in at least `min_df` chunks `principal` may
    read, most similar first (candidates for a spelling correction). Counted and cut among the chunks the
    principal may read: a count of every chunk let a term appear suggested because a document they cannot read
    also holds it, and a cut at 8 before the access check let terms only such documents hold push a readable
    one out. Either told them something of those documents."""
    where, params = visibility_sql(principal)
    with connection.cursor() as cursor:
        # pg_trgm's default threshold (.3) misses a swap of two letters in a short word ("reciev"/"receiv" share
        # 3 of 11 trigrams); the caller's edit distance decides, the threshold only bounds the candidates
        cursor.execute("SET pg_trgm.similarity_threshold = 0.2")
        # the candidates in similarity order first (OFFSET 0 keeps that subquery whole), then read down it
        # until 8 pass the access count: a short typo matches thousands of terms, and counting each one's
        # readable chunks before the sort cost a posting scan per term
        cursor.execute(
            "SELECT t.term FROM (SELECT term, similarity(term, %s) AS near FROM knowledge_termstat "
            "WHERE term %% %s AND df >= %s ORDER BY near DESC, term OFFSET 0) AS t WHERE ("
            "SELECT count(*) FROM (SELECT 1 FROM knowledge_posting p JOIN knowledge_chunk c ON c.id = p.chunk_id "
            f"WHERE p.term = t.term AND {where} LIMIT %s) AS seen) >= %s "
            "ORDER BY t.near DESC, t.term LIMIT 8",
            [term, term, min_df, *params, min_df, min_df],
        )
        return [row[0] for row in cursor.fetchall()]


def terms_readable_df(terms: Collection[str], principal: Principal, *, cap: int) -> dict[str, int]:
    """How many chunks `principal` may read hold each of `terms`, counted up to `cap` (a term in more chunks
    reads as `cap`); terms no such chunk holds are left out. For ranking a question's words by how distinctive
    they are where the ranking is shown to the asker: the index's own document frequencies count documents they
    cannot read. Each count stops at `cap` readable postings, so a common word costs at most `cap` lookups."""
    if not terms:
        return {}
    where, params = visibility_sql(principal)
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT x.term, (SELECT count(*) FROM (SELECT 1 FROM knowledge_posting p JOIN knowledge_chunk c "
            f"ON c.id = p.chunk_id WHERE p.term = x.term AND {where} LIMIT %s) AS seen) AS n "
            "FROM unnest(%s::varchar[]) AS x(term)",
            [*params, cap, list(dict.fromkeys(terms))],
        )
        return {term: int(n) for term, n in cursor.fetchall() if n}


def term_df(terms: list[str]) -> dict[str, int]:
    """Document frequency (chunks) of each of `terms` that the index holds, whoever may read the chunks."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT term, df FROM knowledge_termstat WHERE term = ANY(%s)", [terms])
        return dict(cursor.fetchall())


def corpus_chunk_count() -> int:
    """The number of indexed chunks (BM25's N; 0 before the first ingestion)."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT n_chunks FROM knowledge_corpusstat WHERE id = 1")
        row = cursor.fetchone()
    return int(row[0]) if row else 0


def chunks_nearest(
    query_vec: np.ndarray,
    principal: Principal,
    filters: ChunkFilters,
    *,
    k: int,
    ef_search: int,
    model: str | None = None,
) -> list[tuple[int, float]]:
    """(chunk id, cosine similarity) of the HNSW top-k the principal may read, as the index returns them
    (relaxed order: the caller sorts). Iterative index scans keep going past filtered-out rows, so a selective
    filter (one department, one vendor, one group's documents) still returns a full top-k. `model`: only the
    chunks whose vectors that model made (Chunk.embedding_model); None: every chunk."""
    where, params = visibility_sql(principal, filters)
    if model is not None:
        # another model's vectors are not comparable with the query's (after an embedder change, until reembed
        # reaches them): ranked by them, a chunk's place would be noise
        where, params = f"{where} AND c.embedding_model = %s", [*params, model]
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
        return cursor.fetchall()


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


def chunks_bm25_summed(
    weights: Mapping[str, float],
    principal: Principal,
    filters: ChunkFilters,
    *,
    k: int,
    k1: float,
    b: float,
    max_df_ratio: float,
) -> list[tuple[int, float]]:
    """(chunk id, Okapi BM25 score) of the top-k readable chunks, every posting of the weighted query terms
    summed in one SQL statement (:data:`BM25_SQL`); terms in more than `max_df_ratio` of the chunks are left
    out. The reference that retrieval's posting-block scoring is held to."""
    where, params = visibility_sql(principal, filters)
    with connection.cursor() as cursor:
        cursor.execute(
            BM25_SQL.format(where=where),
            [k1, b, list(weights), list(weights.values()), max_df_ratio, *params, k],
        )
        return cursor.fetchall()


def posting_blocks(terms: list[str], *, max_df_ratio: float) -> list[tuple[str, int, bytes, int, int]]:
    """(term, df, packed postings, n_chunks, total_len) for every posting block of the `terms` found in at most
    `max_df_ratio` of the chunks (:data:`BLOCKS_SQL`); unpack with knowledge.postings.unpack_postings. The
    blocks are not ACL-checked: the caller checks its candidates with :func:`chunks_readable_among`."""
    with binary_cursor() as binary:  # the blocks arrive as raw bytes, a third of the time of their hex text
        binary.execute(BLOCKS_SQL, [terms, max_df_ratio], binary=True)
        return binary.fetchall()


def chunks_readable_among(chunk_ids: list[int], principal: Principal, filters: ChunkFilters) -> set[int]:
    """Those of `chunk_ids` that the principal may read and that match the filters (chunks deleted since are
    left out like unreadable ones)."""
    where, params = visibility_sql(principal, filters)
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT c.id FROM knowledge_chunk c WHERE c.id = ANY(%s) AND {where}",
            [chunk_ids, *params],
        )
        return {row[0] for row in cursor.fetchall()}


# A question entity's neighbours for a principal who cannot read every chunk mentioning it are recounted
# over at most its GRAPH_RECOUNT_MENTIONS strongest readable mentions (bounded cost; exact below that). Only
# its 5 strongest neighbours are kept, which its strongest mentions already show: at 300k chunks 2,000 made the
# graph source's p95 138 ms against 81 ms with 200.
GRAPH_RECOUNT_MENTIONS = 200
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


def chunks_mentioning(
    entity_keys: Sequence[tuple[str, str]],
    principal: Principal,
    filters: ChunkFilters,
    *,
    k: int,
    neighbours: int,
    mentions_per_entity: int,
    too_common: int,
) -> list[tuple[int, float, int]]:
    """(chunk id, score, document id) of the k best readable chunks reached from the (kind, name) entities
    and their `neighbours` strongest co-occurring entities (:data:`GRAPH_SQL`): each entity's
    `mentions_per_entity` strongest readable mentions, weighted by its rarity among the chunks the principal
    may read; entities in more than `too_common` readable chunks are skipped."""
    from knowledge.indexing import MAX_EDGE_ENTITIES  # indexing imports the models: not at module load

    where, params = visibility_sql(principal, filters)
    # edges and rarity are scoped by the ACL alone: metadata filters hide nothing, and answers under a filter
    # keep following the stored edges
    acl, acl_params = visibility_sql(principal)
    kinds = [kind for kind, _ in entity_keys]
    names = [name for _, name in entity_keys]
    with connection.cursor() as cursor:
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
        return cursor.fetchall()


def chunks_of_linked_documents(
    document_ids: list[int], principal: Principal, filters: ChunkFilters
) -> list[int]:
    """The first readable chunk of each document linked to or from `document_ids`, five at most."""
    where, params = visibility_sql(principal, filters)
    with connection.cursor() as cursor:
        cursor.execute(
            f"""
            SELECT DISTINCT ON (c.document_id) c.id FROM knowledge_documentlink l
            JOIN knowledge_chunk c ON c.document_id = CASE WHEN l.source_id = ANY(%s) THEN l.target_id
                                                           ELSE l.source_id END
            WHERE (l.source_id = ANY(%s) OR l.target_id = ANY(%s)) AND l.target_id IS NOT NULL AND {where}
            ORDER BY c.document_id, c.ordinal LIMIT 5
            """,
            [document_ids, document_ids, document_ids, *params],
        )
        return [row[0] for row in cursor.fetchall()]


CHUNK_ROW_COLUMNS = (
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
    "code_lines",
)


def chunk_rows(chunk_ids: Sequence[int], visible_to: Principal | None = None) -> dict[int, dict[str, Any]]:
    """Chunk rows (with document fields, keys :data:`CHUNK_ROW_COLUMNS`, the embedding as a NumPy array) by
    id. Without `visible_to` only for ids an ACL-filtered read returned; with it, ids the principal may not
    read are left out."""
    if not chunk_ids:
        return {}
    where, params = visibility_sql(visible_to) if visible_to is not None else ("true", [])
    # binary results: a vector arrives in pgvector's send format, decoded without parsing 384 numbers of text
    with binary_cursor() as cursor:
        cursor.execute(
            f"""
            SELECT c.id, c.document_id, d.source, d.title, c.section_path, c.page, c.ordinal, c.text,
                   coalesce(c.updated_at, d.source_updated_at), d.access_tier, c.prev_id, c.content_hash,
                   c.injection_flag, c.embedding, c.vendor, c.code_lines
            FROM knowledge_chunk c JOIN knowledge_document d ON d.id = c.document_id
            WHERE c.id = ANY(%s) AND {where}
            """,
            [list(chunk_ids), *params],
            binary=True,
        )
        rows = {}
        for row in cursor.fetchall():
            hit = dict(zip(CHUNK_ROW_COLUMNS, row, strict=True))
            if hit["embedding"] is not None:
                hit["embedding"] = Vector.from_binary(hit["embedding"]).to_numpy()
            rows[row[0]] = hit
        return rows


def chunk_neighbours(chunk_ids: Sequence[int]) -> dict[int, tuple[int | None, int | None]]:
    """(previous, next) chunk id of each chunk, for the answering pipeline's neighbour expansion. Ids only:
    read the chunks themselves with :func:`chunk_rows` and the reader as `visible_to`."""
    if not chunk_ids:
        return {}
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT c.id, c.prev_id, n.id FROM knowledge_chunk c LEFT JOIN knowledge_chunk n ON n.prev_id = c.id "
            "WHERE c.id = ANY(%s)",
            [list(chunk_ids)],
        )
        return {row[0]: (row[1], row[2]) for row in cursor.fetchall()}


def chunk_embedding_models() -> list[str]:
    """Up to three names of the models that made the active chunks' vectors (more than one: mixed)."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT DISTINCT embedding_model FROM knowledge_chunk WHERE active AND embedding_model <> ''"
            " LIMIT 3"
        )
        return [row[0] for row in cursor.fetchall()]


def binary_cursor() -> psycopg.Cursor[Any]:
    """A cursor on Django's connection (same transaction) whose results come in binary form. Django's own
    cursors bind parameters client-side, and psycopg returns binary results only with server-side binding."""
    connection.ensure_connection()
    return psycopg.Cursor(connection.connection)
