"""The three retrieval sources, each one SQL statement with the ACL and metadata filters INSIDE it, before
the top-k cut. They take a cursor-producing connection so they can run concurrently in threads."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, time
from typing import Any

import numpy as np
from django.db import connection

from retrieval.bm25 import Bm25Params, idf, tf_component
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
    prune_from: int | None = None,
    first_depth: int = 256,
) -> list[Scored]:
    """Exact Okapi BM25 top-k from the postings table. `terms` carry a query weight (1 for the question's own
    terms, less for synonym expansions). Terms in more than `max_df_ratio` of chunks are dropped: their idf
    is near zero, yet their postings dominate the cost.

    Below `prune_from` chunks (default LARGE_CORPUS) every posting of every term is summed in one statement.
    Above it, :func:`_bm25_threshold` reads each term's best postings first and skips chunks that provably
    cannot reach the top-k; both return the same ranking (tested)."""
    if not terms:
        return []
    where, params = visibility_sql(principal, filters)
    weights: dict[str, float] = {}
    for term, weight in terms:
        weights[term] = max(weight, weights.get(term, 0.0))
    head: list[Any] = [
        k1,
        b,
        list(weights),
        list(weights.values()),
        max_df_ratio,
    ]  # BM25_SQL leads with these
    with connection.cursor() as cursor:
        cursor.execute("SELECT n_chunks, total_len FROM knowledge_corpusstat WHERE id = 1")
        row = cursor.fetchone()
        n_chunks, total_len = (int(row[0]), int(row[1])) if row else (0, 0)
        threshold = LARGE_CORPUS if prune_from is None else prune_from
        if n_chunks >= threshold and Bm25Params(k1, b) == IMPACT_PARAMS:
            n = max(n_chunks, 1)
            avgdl = max(total_len / n, 1.0)
            cursor.execute("SELECT term, df FROM knowledge_termstat WHERE term = ANY(%s)", [list(weights)])
            cap = max(max_df_ratio * n, 50)
            dfs = {term: df for term, df in cursor.fetchall() if 0 < df <= cap}
            query = {term: weights[term] * idf(df, n) for term, df in dfs.items()}
            return _bm25_threshold(
                cursor, query, avgdl, where, params, k=k, first_depth=first_depth, head=head, dfs=dfs
            )
        cursor.execute(BM25_SQL.format(where=where, postings=ALL_POSTINGS), [*head, 0.0, *params, k])
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
          {postings}
          GROUP BY p.chunk_id)
    SELECT c.id, scored.score FROM scored JOIN knowledge_chunk c ON c.id = scored.chunk_id
    WHERE scored.score >= %s AND {where}
    ORDER BY scored.score DESC, c.id LIMIT %s
"""
# every posting of the query terms, or (MaxScore) only those of chunks holding an essential term
ALL_POSTINGS = "FROM knowledge_posting p JOIN q ON p.term = q.term, s"
CANDIDATE_POSTINGS = (
    "FROM (SELECT DISTINCT chunk_id FROM knowledge_posting WHERE term = ANY(%s::varchar[])) cand "
    "JOIN knowledge_posting p ON p.chunk_id = cand.chunk_id JOIN q ON p.term = q.term, s"
)

GRAPH_MAX_DF = 2_000
LARGE_CORPUS = 50_000  # below this, summing every posting of every query term takes a few ms
MAX_PROBES = 4_000  # (chunk, term) key probes the threshold round may spend completing scores
# Postings are indexed by their BM25 term-frequency component computed with these constants (migration
# 0004, index knowledge_posting_impact); the query below must use the identical expression.
IMPACT_PARAMS, IMPACT_AVGDL = Bm25Params(k1=1.2, b=0.75), 64.0
IMPACT_EXPR = (
    "(p.tf * 2.2::float8 / (p.tf + 1.2::float8 * (0.25::float8 + 0.75::float8 * p.doc_len / 64.0::float8)))"
)


def _bm25_threshold(
    cursor: Any,
    query: dict[str, float],
    avgdl: float,
    where: str,
    params: list[Any],
    *,
    k: int,
    first_depth: int,
    head: list[Any],
    dfs: dict[str, int],
) -> list[Scored]:
    """Exact top-k in two steps over impact-ordered postings.

    1. Threshold round (Fagin's TA): read the best `first_depth` postings of every term (index
       knowledge_posting_impact), keep the chunks the principal may read, complete the scores of those that
       could reach the top-k by primary-key probes. If the k-th exact score beats the best score an unread
       chunk could have (sum over terms of idf x the term's last impact read), that is the answer.
       Completing scores costs one key probe per (chunk, missing term); past MAX_PROBES it is skipped.
    2. Otherwise MaxScore (:func:`_bm25_maxscore`): the k-th score found (exact, or partial when the
       probes were skipped) is a floor for the final k-th score. Terms whose combined maximum contributions
       stay below it are "non-essential": a chunk containing only those can never reach the top-k.
       Candidates are the chunks holding an essential term, scored exactly over all terms in SQL; only
       those reaching the floor are checked against the ACL. The higher the floor, the fewer terms are
       essential, so before step 2 :func:`_rare_floor` raises it when it can.

    `query` maps each term to its weighted idf. Impacts were computed with avgdl = IMPACT_AVGDL; with the
    corpus's real avgdl a term-frequency component can be at most max(1, avgdl / IMPACT_AVGDL) times larger,
    so that factor keeps both bounds safe. `head` are BM25_SQL's leading arguments, for step 2."""
    if not query:
        return []
    terms = list(query)
    slack = max(1.0, avgdl / IMPACT_AVGDL)
    cursor.execute(
        f"SELECT x.term, p.chunk_id, p.tf, p.doc_len, p.impact FROM unnest(%s::varchar[]) AS x(term) "
        f"CROSS JOIN LATERAL (SELECT p.chunk_id, p.tf, p.doc_len, {IMPACT_EXPR} AS impact "
        f"FROM knowledge_posting p WHERE p.term = x.term ORDER BY {IMPACT_EXPR} DESC LIMIT %s) p",
        [terms, first_depth],
    )
    seen: dict[int, dict[str, float]] = {}
    read: dict[str, int] = dict.fromkeys(terms, 0)
    first: dict[str, float] = {}
    last: dict[str, float] = dict.fromkeys(terms, 0.0)
    for term, chunk_id, tf, doc_len, impact in cursor.fetchall():
        seen.setdefault(chunk_id, {})[term] = query[term] * tf_component(tf, doc_len, avgdl, IMPACT_PARAMS)
        read[term] += 1
        first.setdefault(term, impact)
        last[term] = impact
    # terms whose postings were not all read; an unread posting of t is worth at most ceiling[t]
    ceiling = {t: query[t] * last[t] * slack for t in terms if read[t] == first_depth}
    cursor.execute(
        f"SELECT c.id FROM knowledge_chunk c WHERE c.id = ANY(%s) AND {where}", [list(seen), *params]
    )
    visible = [row[0] for row in cursor.fetchall()]
    score = {c: sum(seen[c].values()) for c in visible}
    upper = {c: score[c] + sum(v for t, v in ceiling.items() if t not in seen[c]) for c in visible}
    by_lower = sorted(score.values(), reverse=True)
    kth_lower = by_lower[k - 1] if len(by_lower) >= k else 0.0
    probe = [c for c in visible if upper[c] > score[c] and upper[c] >= kth_lower]
    if len(probe) * len(ceiling) > MAX_PROBES:
        # completing that many scores by key probes costs more than step 2; the k-th partial score is a
        # floor too (k visible chunks score at least that much)
        return _bm25_maxscore(cursor, query, dfs, avgdl, first, kth_lower, where, params, k=k, head=head)
    if probe and ceiling:
        for chunk_id, term, contribution in _probe(cursor, query, list(ceiling), probe, avgdl):
            if term not in seen[chunk_id]:
                score[chunk_id] += contribution
    top = sorted(score.items(), key=lambda kv: (-kv[1], kv[0]))[:k]
    if not ceiling or (len(top) == k and top[-1][1] > sum(ceiling.values())):
        return [Scored(int(c), float(s)) for c, s in top]
    floor = top[-1][1] if len(top) == k else 0.0
    return _bm25_maxscore(cursor, query, dfs, avgdl, first, floor, where, params, k=k, head=head)


def _probe(
    cursor: Any, query: dict[str, float], terms: list[str], chunk_ids: list[int], avgdl: float
) -> list[tuple[int, str, float]]:
    """(chunk, term, exact contribution) for each of `terms` that `chunk_ids` hold, by primary-key probes."""
    cursor.execute(
        "SELECT chunk_id, term, tf, doc_len FROM knowledge_posting "
        "WHERE term = ANY(%s::varchar[]) AND chunk_id = ANY(%s)",
        [terms, chunk_ids],
    )
    return [
        (chunk_id, term, query[term] * tf_component(tf, doc_len, avgdl, IMPACT_PARAMS))
        for chunk_id, term, tf, doc_len in cursor.fetchall()
    ]


RARE_POSTINGS = 8_000  # postings of the rarest query terms summed to find a floor
RARE_SAMPLE = 200  # readable chunks, among the best 4x as many, whose scores are completed
# exact BM25 contributions with k1 1.2, b .75 (the large-corpus path runs only with IMPACT_PARAMS)
RARE_SQL = """
    WITH acc AS (
        SELECT p.chunk_id, sum(w.idf * p.tf * 2.2 / (p.tf + 1.2 * (0.25 + 0.75 * p.doc_len / %s::float8))) AS partial
        FROM knowledge_posting p JOIN unnest(%s::varchar[], %s::float8[]) AS w(term, idf) ON p.term = w.term
        GROUP BY p.chunk_id ORDER BY partial DESC LIMIT %s)
    SELECT acc.chunk_id, acc.partial FROM acc JOIN knowledge_chunk c ON c.id = acc.chunk_id
    WHERE {where} ORDER BY acc.partial DESC LIMIT %s
"""


def _rare_floor(
    cursor: Any,
    query: dict[str, float],
    dfs: dict[str, int],
    avgdl: float,
    where: str,
    params: list[Any],
    *,
    k: int,
) -> float:
    """A lower bound for the k-th best score, from the chunks that best match the question's rarest terms.

    The best chunks nearly always hold the rare terms, so: sum the postings of the rarest terms (at most
    RARE_POSTINGS of them), keep the RARE_SAMPLE best chunks the principal may read, complete their scores
    over the other terms by key probes, and return the k-th exact score (0 when fewer than k). Any k
    readable chunks' exact scores bound the final k-th score from below, so the result stays exact; the
    threshold round's floor comes from chunks that are extreme in ONE term and is usually far lower."""
    if not query or min(dfs[t] for t in query) > RARE_POSTINGS:
        return 0.0  # no term is rare: summing even the rarest costs more than the floor saves
    rare: list[str] = []
    total = 0
    for term in sorted(query, key=lambda t: (dfs[t], t)):
        if rare and total + dfs[term] > RARE_POSTINGS:
            break
        rare.append(term)
        total += dfs[term]
    cursor.execute(
        RARE_SQL.format(where=where),
        [avgdl, rare, [query[t] for t in rare], 4 * RARE_SAMPLE, *params, RARE_SAMPLE],
    )
    scores = {chunk_id: float(partial) for chunk_id, partial in cursor.fetchall()}
    others = [t for t in query if t not in rare]
    if others and scores:
        for chunk_id, _, contribution in _probe(cursor, query, others, list(scores), avgdl):
            scores[chunk_id] += contribution
    best = sorted(scores.values(), reverse=True)
    return best[k - 1] if len(best) >= k else 0.0


def _bm25_maxscore(
    cursor: Any,
    query: dict[str, float],
    dfs: dict[str, int],
    avgdl: float,
    first: dict[str, float],
    floor: float,
    where: str,
    params: list[Any],
    *,
    k: int,
    head: list[Any],
) -> list[Scored]:
    """Step 2 of :func:`_bm25_threshold`: `floor` (from the threshold round) is at most the final k-th score,
    raised by :func:`_rare_floor` when it can, and `first` holds each term's highest impact. Terms whose summed
    best contributions stay below the floor cannot put a chunk into the top-k on their own, so only chunks
    holding one of the other ("essential") terms are scored."""
    floor = max(floor, _rare_floor(cursor, query, dfs, avgdl, where, params, k=k))
    slack = max(1.0, avgdl / IMPACT_AVGDL)
    # lowered by a hair, for both uses: SQL and Python sum in different orders, so the floor (a k-th score
    # computed in Python) may exceed the same score in SQL by a few ulps
    floor *= 1 - 1e-9
    non_essential = 0.0
    essential = []
    for bound, term in sorted((query[t] * first.get(t, 0.0) * slack, t) for t in query):
        if non_essential + bound < floor:
            non_essential += bound
        else:
            essential.append(term)
    # only chunks reaching the floor need the ACL check
    cursor.execute(
        BM25_SQL.format(where=where, postings=CANDIDATE_POSTINGS),
        [*head, essential, floor, *params, k],
    )
    return [Scored(int(i), float(s)) for i, s in cursor.fetchall()]


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
    signal and are skipped. The cost is bounded whatever the corpus size."""
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
        edf AS (SELECT ent.id, ent.w,
                       (SELECT count(*) FROM (SELECT 1 FROM knowledge_mention m WHERE m.entity_id = ent.id
                                              LIMIT %s) x) AS df
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
    with connection.cursor() as cursor:
        cursor.execute("SELECT n_chunks FROM knowledge_corpusstat WHERE id = 1")
        row = cursor.fetchone()
        too_common = max(GRAPH_MAX_DF, (int(row[0]) if row else 0) // 50)
        cursor.execute(
            sql, [kinds, names, neighbours, too_common + 1, *params, mentions_per_entity, too_common, k]
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


def fetch_hits(chunk_ids: Sequence[int], visible_to: Principal | None = None) -> dict[int, dict[str, Any]]:
    """Chunk rows (with document fields) by id. Without `visible_to` only for ids an ACL-filtered stage
    returned; with it, ids the principal may not read are left out."""
    if not chunk_ids:
        return {}
    where, params = visibility_sql(visible_to, Filters()) if visible_to is not None else ("true", [])
    with connection.cursor() as cursor:
        cursor.execute(
            f"""
            SELECT c.id, c.document_id, d.source, d.title, c.section_path, c.page, c.ordinal, c.text,
                   coalesce(c.updated_at, d.source_updated_at), d.access_tier, c.prev_id, c.content_hash,
                   c.injection_flag, c.embedding::real[], c.vendor
            FROM knowledge_chunk c JOIN knowledge_document d ON d.id = c.document_id
            WHERE c.id = ANY(%s) AND {where}
            """,
            [list(chunk_ids), *params],
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
