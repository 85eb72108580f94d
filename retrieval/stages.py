"""The three retrieval sources, each one SQL statement with the ACL and metadata filters INSIDE it, before
the top-k cut. They take a cursor-producing connection so they can run concurrently in threads."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, time
from typing import Any

import numpy as np
from django.db import connection

from retrieval.fusion import Scored
from retrieval.types import Filters, Principal


def visibility_sql(principal: Principal, filters: Filters, alias: str = "c") -> tuple[str, list[Any]]:
    """WHERE fragment: active chunk, readable by the principal, matching the metadata filters."""
    clauses = [f"{alias}.active"]
    params: list[Any] = []
    acl = f"({alias}.acl_open OR {alias}.acl_groups && %s::bigint[]"
    params.append(list(principal.group_ids))
    if principal.user_id is not None:
        acl += f" OR {alias}.owner_id_acl = %s"
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
) -> list[Scored]:
    """Exact Okapi BM25 from the postings table. `terms` carry a query weight (1 for the question's own
    terms, less for synonym expansions). Terms in more than `max_df_ratio` of chunks are dropped: their idf
    is near zero, yet their postings dominate the cost."""
    if not terms:
        return []
    where, params = visibility_sql(principal, filters)
    names = [t for t, _ in terms]
    weights = [w for _, w in terms]
    sql = f"""
        WITH s AS (SELECT greatest(n_chunks, 1)::float8 AS n,
                          greatest(total_len::float8 / greatest(n_chunks, 1), 1) AS avgdl
                   FROM knowledge_corpusstat WHERE id = 1),
        q AS (SELECT t.term, max(x.w) * ln(1 + (s.n - t.df + 0.5) / (t.df + 0.5)) AS idf
              FROM unnest(%s::varchar[], %s::float8[]) AS x(term, w)
              JOIN knowledge_termstat t ON t.term = x.term, s
              WHERE t.df <= greatest(%s * s.n, 50)
              GROUP BY t.term, t.df, s.n),
        scored AS (
              SELECT p.chunk_id, sum(q.idf * p.tf * (%s + 1)
                                     / (p.tf + %s * (1 - %s + %s * p.doc_len / s.avgdl))) AS score
              FROM knowledge_posting p JOIN q ON p.term = q.term, s
              GROUP BY p.chunk_id)
        SELECT c.id, scored.score FROM scored JOIN knowledge_chunk c ON c.id = scored.chunk_id
        WHERE {where}
        ORDER BY scored.score DESC, c.id LIMIT %s
    """
    with connection.cursor() as cursor:
        selective = _selective_terms(cursor, names)
        if selective is not None:
            # Large corpus: candidates are the chunks holding at least one selective term; each candidate is
            # then scored exactly over ALL query terms by primary-key probes. Chunks that match only common
            # terms are not candidates: they could only reach the top-k with no selective term at all.
            sql = sql.replace(
                "FROM knowledge_posting p JOIN q ON p.term = q.term, s",
                "FROM (SELECT DISTINCT chunk_id FROM knowledge_posting WHERE term = ANY(%s::varchar[])) cand "
                "JOIN knowledge_posting p ON p.chunk_id = cand.chunk_id JOIN q ON p.term = q.term, s",
            )
            cursor.execute(sql, [names, weights, max_df_ratio, k1, k1, b, b, selective, *params, k])
        else:
            cursor.execute(sql, [names, weights, max_df_ratio, k1, k1, b, b, *params, k])
        return [Scored(int(i), float(s)) for i, s in cursor.fetchall()]


LARGE_CORPUS = 50_000  # below this every posting of every query term is summed (a few ms)
SELECTIVE_MIN_DF = 2_000  # a term in at most max(this, 1% of chunks) generates candidates


def _selective_terms(cursor, names: Sequence[str]) -> list[str] | None:  # type: ignore[no-untyped-def]
    """On a large corpus, the query terms rare enough to generate candidates from (None: sum everything)."""
    cursor.execute("SELECT n_chunks FROM knowledge_corpusstat WHERE id = 1")
    row = cursor.fetchone()
    n_chunks = int(row[0]) if row else 0
    if n_chunks < LARGE_CORPUS:
        return None
    cursor.execute("SELECT term, df FROM knowledge_termstat WHERE term = ANY(%s)", [list(names)])
    df = dict(cursor.fetchall())
    cap = max(SELECTIVE_MIN_DF, n_chunks // 100)
    selective = [t for t, d in df.items() if d <= cap]
    if not selective or len(selective) == len(df):
        return None  # all common (no cheap candidates) or all selective (the plain sum is already cheap)
    return selective


def graph_search(
    entity_keys: Sequence[tuple[str, str]],
    principal: Principal,
    filters: Filters,
    *,
    k: int = 15,
    neighbours: int = 5,
) -> list[Scored]:
    """Chunks reached from the question's entities: direct mentions (weighted by entity rarity), mentions
    of strongly co-occurring entities, and chunks of documents linked to/from the best documents."""
    if not entity_keys:
        return []
    where, params = visibility_sql(principal, filters)
    kinds = [kind for kind, _ in entity_keys]
    names = [name for _, name in entity_keys]
    sql = f"""
        WITH seed AS (
            SELECT e.id FROM knowledge_entity e
            JOIN unnest(%s::varchar[], %s::varchar[]) AS x(kind, name) ON e.kind = x.kind AND e.name = x.name),
        near AS (
            SELECT id, 1.0::float8 AS w FROM seed
            UNION ALL
            SELECT nb.other, 0.3 * nb.weight / nullif(max(nb.weight) OVER (PARTITION BY nb.seed_id), 0)
            FROM (SELECT s.id AS seed_id,
                         CASE WHEN e.source_id = s.id THEN e.target_id ELSE e.source_id END AS other,
                         e.weight, row_number() OVER (PARTITION BY s.id ORDER BY e.weight DESC) AS r
                  FROM seed s JOIN knowledge_edge e ON (e.source_id = s.id OR e.target_id = s.id)
                  WHERE e.weight > 0) nb
            WHERE nb.r <= %s AND nb.other NOT IN (SELECT id FROM seed)),
        ent AS (SELECT id, max(w) AS w FROM near GROUP BY id),
        edf AS (SELECT m.entity_id, count(*) AS df FROM knowledge_mention m JOIN ent ON ent.id = m.entity_id
                GROUP BY m.entity_id),
        direct AS (
            SELECT m.chunk_id, sum(ent.w * (1 + ln(m.count)) / ln(2 + edf.df)) AS score
            FROM knowledge_mention m JOIN ent ON ent.id = m.entity_id JOIN edf ON edf.entity_id = m.entity_id
            WHERE edf.df <= greatest(2000, (SELECT n_chunks FROM knowledge_corpusstat WHERE id = 1) / 50)
            GROUP BY m.chunk_id)
        SELECT c.id, direct.score, c.document_id FROM direct JOIN knowledge_chunk c ON c.id = direct.chunk_id
        WHERE {where}
        ORDER BY direct.score DESC, c.id LIMIT %s
    """
    with connection.cursor() as cursor:
        cursor.execute(sql, [kinds, names, neighbours, *params, k])
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


def fetch_hits(chunk_ids: Sequence[int]) -> dict[int, dict[str, Any]]:
    """Chunk rows (with document fields) by id — only ids already returned by an ACL-filtered stage."""
    if not chunk_ids:
        return {}
    with connection.cursor() as cursor:
        cursor.execute(
            """
            SELECT c.id, c.document_id, d.source, d.title, c.section_path, c.page, c.ordinal, c.text,
                   coalesce(c.updated_at, d.source_updated_at), d.access_tier, c.prev_id, c.content_hash,
                   c.injection_flag, c.embedding::real[], c.vendor
            FROM knowledge_chunk c JOIN knowledge_document d ON d.id = c.document_id WHERE c.id = ANY(%s)
            """,
            [list(chunk_ids)],
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
        return {row[0]: dict(zip(columns, row, strict=True)) for row in cursor.fetchall()}


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
