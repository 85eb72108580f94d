#!/usr/bin/env python
"""Retrieval latency benchmark (a script, not collected by pytest).

Per-stage latency (median, p95) over the dev-set questions for dense, BM25, graph, fusion (search with
rerank and MMR off), rerank and MMR (each switched on alone), on the database named by ATHENA_DB_NAME.

`--synthetic N` first grows the database to N synthetic chunks on top of the dev corpus, built by sampling
real text: each chunk is 2-4 sentences drawn from real chunks, its BM25 postings come from
knowledge.text.analyze exactly as ingestion computes them, its embedding is a normalised random convex
mixture of its source chunks' real embeddings plus small noise (embedding 300k chunks with MiniLM on this CPU
would take hours), and its mentions are copied from the source chunks. One Document per ~20 chunks with
varied department / vendor / tier / ACL groups. The HNSW index is dropped before the bulk load and rebuilt
after (build time reported); HNSW recall@40 against exact search is measured over 50 queries.

    ATHENA_DB_NAME=athena_bench python tests/benchmarks/retrieval.py                  # dev corpus
    python tests/benchmarks/retrieval.py --synthetic 300000 --save big.json          # grow, then measure
    python tests/benchmarks/retrieval.py --drop-synthetic                             # back to the dev corpus
    python tests/benchmarks/retrieval.py --compare old.json
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import random
import resource
import statistics
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

from common import DEVSET, owner_connection, percentile, results_save, setup_django

SYNTHETIC_PREFIX = "synthetic/"
DEPARTMENTS = ("network", "systems", "security", "database", "support", "platform")
VENDORS = ("cisco", "juniper", "arista", "postgresql", "redhat", "debian", "fortinet", "")
GROUPS = ("employees", "ops-admins", "netops", "dba", "secops")
POSTING_INDEXES = (
    "ALTER TABLE knowledge_posting ADD CONSTRAINT knowledge_posting_pkey PRIMARY KEY (term, chunk_id) "
    "INCLUDE (tf, doc_len)",
    "CREATE INDEX knowledge_posting_chunk ON knowledge_posting (chunk_id)",
)


def summary(values: list[float]) -> dict[str, float]:
    return {
        "n": len(values),
        "p50": round(statistics.median(values), 1) if values else float("nan"),
        "p95": round(percentile(values, 0.95), 1),
    }


# --- synthetic corpus ----------------------------------------------------------------------------------------


def _copy(cursor: Any, sql: str, rows: list[tuple]) -> None:
    with cursor.copy(sql) as copy:
        for row in rows:
            copy.write_row(row)


def _copy_model(cursor: Any, model: Any, rows: list[dict[str, Any]]) -> None:
    """COPY `rows` (column -> value) into `model`'s table, every column named: a column a row leaves out gets
    the model field's default (its database form; "" for text, NULL where allowed), "now" for auto_now_add.
    A NOT NULL column added later therefore cannot break the benchmark unless it has no default at all, and
    then the error names it."""
    from django.db import connection
    from django.db.models import JSONField

    fields = [f for f in model._meta.concrete_fields if f.column]
    filled: dict[str, Any] = {}
    for field in fields:
        if rows and field.column in rows[0]:
            continue
        if getattr(field, "auto_now_add", False) or getattr(field, "auto_now", False):
            filled[field.column] = "now"
        else:
            value = field.get_default()  # "" for a text field without one, None for other types
            if value is None and not field.null:
                raise RuntimeError(
                    f"{model._meta.db_table}.{field.column} is NOT NULL without a default: set it"
                )
            filled[field.column] = (
                json.dumps(value)
                if isinstance(field, JSONField)
                else field.get_db_prep_save(value, connection)
            )
    columns = [f.column for f in fields]
    _copy(
        cursor,
        f"COPY {model._meta.db_table} ({', '.join(columns)}) FROM STDIN",
        [tuple(row[c] if c in row else filled[c] for c in columns) for row in rows],
    )


def synthetic_build(target: int, seed: int, batch: int = 10_000) -> dict[str, Any]:
    """Add synthetic chunks until the database holds `target` active chunks."""
    import numpy as np
    from django.contrib.auth.models import Group

    from knowledge.indexing import postings_repack
    from knowledge.models import Chunk, Document
    from knowledge.text import ANALYZER_VERSION, analyze, sentences

    # the bulk load drops and rebuilds indexes: schema changes are the owner role's (the application role only
    # reads and writes rows)
    connection = owner_connection()
    rng = random.Random(seed)
    nrng = np.random.default_rng(seed)
    with connection.cursor() as cursor:
        cursor.execute("SELECT count(*) FROM knowledge_chunk WHERE active")
        existing = cursor.fetchone()[0]
        cursor.execute(
            "SELECT c.id, c.text, c.embedding::real[] FROM knowledge_chunk c JOIN knowledge_document d "
            "ON d.id = c.document_id WHERE c.active AND c.embedding IS NOT NULL AND d.source NOT LIKE %s",
            [SYNTHETIC_PREFIX + "%"],
        )
        sources = cursor.fetchall()
        # synthetic vectors are mixtures of the stored ones, so they carry the stored model's name
        cursor.execute(
            "SELECT embedding_model FROM knowledge_chunk WHERE active AND embedding_model <> '' LIMIT 1"
        )
        row = cursor.fetchone()
        model_name = row[0] if row else "all-MiniLM-L6-v2"
        cursor.execute("SELECT chunk_id, entity_id, count FROM knowledge_mention")
        mentions: dict[int, list[tuple[int, int]]] = {}
        for chunk_id, entity_id, count in cursor.fetchall():
            mentions.setdefault(chunk_id, []).append((entity_id, count))
    n_new = target - existing
    if n_new <= 0:
        return {"added": 0, "total_chunks": existing}
    group_ids = {name: Group.objects.get_or_create(name=name)[0].pk for name in GROUPS}
    source_ids = [s[0] for s in sources]
    vectors = np.asarray([s[2] for s in sources], dtype=np.float32)
    pool = [
        (i, sentence) for i, s in enumerate(sources) for sentence in sentences(s[1]) if len(sentence) > 20
    ]
    print(f"  {len(sources)} source chunks, {len(pool)} sentences; adding {n_new} chunks", file=sys.stderr)
    timings: dict[str, float] = {}
    raw = connection.connection  # psycopg connection, for COPY
    started = time.perf_counter()
    with connection.cursor() as cursor:
        cursor.execute("DROP INDEX IF EXISTS chunk_embedding_hnsw")
        cursor.execute("ALTER TABLE knowledge_posting DROP CONSTRAINT IF EXISTS knowledge_posting_pkey")
        cursor.execute("DROP INDEX IF EXISTS knowledge_posting_chunk")
        cursor.execute("SELECT coalesce(max(id), 0) FROM knowledge_document")
        next_doc = cursor.fetchone()[0] + 1
        cursor.execute("SELECT coalesce(max(id), 0) FROM knowledge_chunk")
        next_chunk = cursor.fetchone()[0] + 1
    first_chunk = next_chunk
    chunk_rows_done = 0
    analyse_s = 0.0
    copy_s = 0.0
    try:
        while chunk_rows_done < n_new:
            size = min(batch, n_new - chunk_rows_done)
            docs: list[tuple] = []
            chunks: list[dict[str, Any]] = []
            postings: list[tuple] = []
            mention_rows: list[tuple] = []
            ordinal = 0
            doc_id = None
            prev = None
            doc_meta: tuple = ()
            t0 = time.perf_counter()
            for _ in range(size):
                if doc_id is None or ordinal >= 20:
                    doc_id, ordinal, prev = next_doc, 0, None
                    next_doc += 1
                    tier = rng.choices(
                        ["internal", "public", "restricted", "confidential"], [6, 2, 1.5, 0.5]
                    )[0]
                    groups = [] if tier in ("internal", "public") else [group_ids[rng.choice(GROUPS[1:])]]
                    doc_meta = (
                        rng.choice(DEPARTMENTS),
                        rng.choice(VENDORS),
                        tier,
                        groups,
                        rng.choice(["sop", "manual", "runbook", "incident", "config_guide", "other"]),
                    )
                    docs.append(
                        (doc_id, f"{SYNTHETIC_PREFIX}{doc_id:07d}.md", f"Synthetic {doc_id}", *doc_meta)
                    )
                picks = [rng.choice(pool) for _ in range(rng.randint(2, 4))]
                text = " ".join(sentence for _, sentence in picks)
                members = sorted({i for i, _ in picks})
                weights = nrng.dirichlet(np.ones(len(members)))
                vector = weights @ vectors[members] + nrng.normal(0, 0.01, vectors.shape[1]).astype(
                    np.float32
                )
                vector /= np.linalg.norm(vector)
                counts = Counter(analyze(text))  # no section path: synthetic chunks have none
                doc_len = sum(counts.values())
                chunk_id = next_chunk
                next_chunk += 1
                department, vendor, tier, groups, doc_type = doc_meta
                chunks.append(
                    {
                        "id": chunk_id,
                        "document_id": doc_id,
                        "ordinal": ordinal,
                        "text": text,
                        "section_path": "",
                        "token_count": len(text.split()),
                        "doc_len": doc_len,
                        "content_hash": hashlib.sha256(text.encode()).hexdigest(),
                        "embedding": "[" + ",".join(f"{x:.6f}" for x in vector) + "]",
                        "embedding_model": model_name,
                        "active": True,
                        "acl_open": tier in ("internal", "public") and not groups,
                        "acl_groups": "{" + ",".join(str(g) for g in groups) + "}",
                        "access_tier": tier,
                        "doc_type": doc_type,
                        "department": department,
                        "vendor": vendor,
                        "prev_id": prev,
                    }
                )
                postings.extend((term, chunk_id, tf, doc_len) for term, tf in counts.items())
                seen: dict[int, int] = {}
                for member in members:
                    for entity_id, count in mentions.get(source_ids[member], [])[:3]:
                        seen[entity_id] = seen.get(entity_id, 0) + count
                mention_rows.extend((chunk_id, e, c) for e, c in list(seen.items())[:5])
                prev = chunk_id
                ordinal += 1
            t1 = time.perf_counter()
            analyse_s += t1 - t0
            with raw.cursor() as cur:
                # documents first, then chunks, then what refers to chunks: each COPY finds the rows its foreign
                # keys name (no superuser to switch the triggers off, and none needed)
                _copy_model(
                    cur,
                    Document,
                    [
                        {
                            "id": d[0],
                            "source": d[1],
                            "title": d[2],
                            "department": d[3],
                            "vendor": d[4],
                            "access_tier": d[5],
                            "doc_type": d[7],
                            "content_hash": "synthetic",
                            "analyzer_version": ANALYZER_VERSION,
                            "version": 1,
                            "status": "indexed",
                            "chunk_count": 20,
                        }
                        for d in docs
                    ],
                )
                _copy(
                    cur,
                    "COPY knowledge_document_allowed_groups (document_id, group_id) FROM STDIN",
                    [(d[0], g) for d in docs for g in d[6]],
                )
                _copy_model(cur, Chunk, chunks)
                _copy(cur, "COPY knowledge_posting (term, chunk_id, tf, doc_len) FROM STDIN", postings)
                _copy(cur, "COPY knowledge_mention (chunk_id, entity_id, count) FROM STDIN", mention_rows)
            raw.commit()
            copy_s += time.perf_counter() - t1
            chunk_rows_done += size
            print(f"\r  {chunk_rows_done}/{n_new} chunks", end="", file=sys.stderr, flush=True)
        print(file=sys.stderr)
    finally:
        timings["generate_analyze_s"] = round(analyse_s, 1)
        timings["copy_s"] = round(copy_s, 1)
        with connection.cursor() as cursor:
            t0 = time.perf_counter()
            for sql in POSTING_INDEXES:
                cursor.execute(sql)
            timings["posting_index_s"] = round(time.perf_counter() - t0, 1)
            t0 = time.perf_counter()
            timings["posting_blocks"] = postings_repack()
            timings["posting_repack_s"] = round(time.perf_counter() - t0, 1)
            t0 = time.perf_counter()
            _stats_recompute(cursor)
            cursor.execute(
                """
                WITH pairs AS (
                    SELECT m1.entity_id AS a, m2.entity_id AS b, count(*) AS c
                    FROM knowledge_mention m1 JOIN knowledge_mention m2
                      ON m1.chunk_id = m2.chunk_id AND m1.entity_id < m2.entity_id
                    WHERE m1.chunk_id >= %s GROUP BY 1, 2)
                INSERT INTO knowledge_edge (source_id, target_id, relation, weight)
                SELECT a, b, 'co_occurs', c FROM pairs
                ON CONFLICT (source_id, target_id, relation) DO UPDATE SET weight = knowledge_edge.weight + EXCLUDED.weight
                """,
                [first_chunk],
            )
            for table, column in (("knowledge_document", "id"), ("knowledge_chunk", "id")):
                cursor.execute(
                    f"SELECT setval(pg_get_serial_sequence('{table}', '{column}'), (SELECT max(id) FROM {table}))"
                )
            timings["stats_edges_s"] = round(time.perf_counter() - t0, 1)
            timings["hnsw_build_s"] = hnsw_build(cursor)
            t0 = time.perf_counter()
            cursor.execute("ANALYZE")
            timings["analyze_s"] = round(time.perf_counter() - t0, 1)
    timings["total_s"] = round(time.perf_counter() - started, 1)
    return {"added": n_new, "total_chunks": existing + n_new, **timings}


def _stats_recompute(cursor: Any) -> None:
    """df and corpus statistics recomputed exactly from the postings (what ingestion keeps incrementally)."""
    cursor.execute("TRUNCATE knowledge_termstat")
    cursor.execute(
        "INSERT INTO knowledge_termstat (term, df) SELECT p.term, count(*) FROM knowledge_posting p "
        "JOIN knowledge_chunk c ON c.id = p.chunk_id WHERE c.active GROUP BY p.term"
    )
    cursor.execute(
        "INSERT INTO knowledge_corpusstat (id, n_chunks, total_len) "
        "SELECT 1, count(*), coalesce(sum(doc_len), 0) FROM knowledge_chunk WHERE active "
        "ON CONFLICT (id) DO UPDATE SET n_chunks = EXCLUDED.n_chunks, total_len = EXCLUDED.total_len"
    )


def hnsw_build(cursor: Any) -> float:
    from knowledge.models import HNSW_INDEX_SQL

    cursor.execute("DROP INDEX IF EXISTS chunk_embedding_hnsw")
    cursor.execute("SET maintenance_work_mem = '2GB'")
    cursor.execute("SET max_parallel_maintenance_workers = 1")  # two cores, shared
    t0 = time.perf_counter()
    cursor.execute(HNSW_INDEX_SQL)
    return round(time.perf_counter() - t0, 1)


def synthetic_drop() -> None:
    from django.db import connection, transaction

    from knowledge.indexing import postings_repack

    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute(
            "SELECT min(id) FROM knowledge_document WHERE source LIKE %s", [SYNTHETIC_PREFIX + "%"]
        )
        first_doc = cursor.fetchone()[0]
        if first_doc is None:
            return
        cursor.execute("SELECT min(id) FROM knowledge_chunk WHERE document_id >= %s", [first_doc])
        first_chunk = cursor.fetchone()[0] or 0
        cursor.execute(
            """
            WITH pairs AS (
                SELECT m1.entity_id AS a, m2.entity_id AS b, count(*) AS c
                FROM knowledge_mention m1 JOIN knowledge_mention m2
                  ON m1.chunk_id = m2.chunk_id AND m1.entity_id < m2.entity_id
                WHERE m1.chunk_id >= %s GROUP BY 1, 2)
            UPDATE knowledge_edge e SET weight = e.weight - pairs.c FROM pairs
            WHERE e.source_id = pairs.a AND e.target_id = pairs.b AND e.relation = 'co_occurs'
            """,
            [first_chunk],
        )
        cursor.execute("DELETE FROM knowledge_edge WHERE weight <= 0")
        cursor.execute("DELETE FROM knowledge_mention WHERE chunk_id >= %s", [first_chunk])
        cursor.execute("DELETE FROM knowledge_posting WHERE chunk_id >= %s", [first_chunk])
        cursor.execute("DELETE FROM knowledge_chunk WHERE id >= %s", [first_chunk])
        cursor.execute("DELETE FROM knowledge_document_allowed_groups WHERE document_id >= %s", [first_doc])
        cursor.execute("DELETE FROM knowledge_document WHERE id >= %s", [first_doc])
        _stats_recompute(cursor)
    postings_repack()
    with connection.cursor() as cursor:
        cursor.execute("VACUUM ANALYZE knowledge_chunk")


# --- measurements --------------------------------------------------------------------------------------------


def questions() -> list[str]:
    """Every dev-set question, in file order (callers take the first N)."""
    items = [
        json.loads(line) for line in (DEVSET / "questions.jsonl").read_text().splitlines() if line.strip()
    ]
    return [item["question"] for item in items]


def bench_principal() -> Any:
    from django.contrib.auth.models import Group

    from athena.principals import Principal

    # an ordinary employee who is also in netops: sees open documents and netops-restricted ones
    ids = tuple(sorted(Group.objects.get_or_create(name=n)[0].pk for n in ("employees", "netops")))
    return Principal(user_id=None, username="bench", group_ids=ids, group_names=("employees", "netops"))


def latency(qs: list[str]) -> dict[str, Any]:
    from retrieval.search import search
    from retrieval.types import SearchConfig

    principal = bench_principal()
    fused_cfg = SearchConfig(rerank=False, mmr=False)
    for q in qs[:5]:  # warm up: model load, connection pools, caches
        search(q, principal, config=SearchConfig())
    samples: dict[str, list[float]] = {}
    for q in qs:
        fused = search(q, principal, config=fused_cfg).timings_ms
        for key in ("embed_query", "dense", "bm25", "graph", "sources", "fusion", "total"):
            if key in fused:
                samples.setdefault("fused_total" if key == "total" else key, []).append(fused[key])
        samples.setdefault("fused_total_without_query_embedding", []).append(
            fused["total"] - fused.get("embed_query", 0.0)
        )
        reranked = search(q, principal, config=SearchConfig(rerank=True, mmr=False)).timings_ms
        if "rerank" in reranked:
            samples.setdefault("rerank", []).append(reranked["rerank"])
        diversified = search(q, principal, config=SearchConfig(rerank=False, mmr=True)).timings_ms
        if "mmr" in diversified:
            samples.setdefault("mmr", []).append(diversified["mmr"])
        full = search(q, principal, config=SearchConfig()).timings_ms
        samples.setdefault("full_total", []).append(full["total"])
    results: dict[str, Any] = {key: summary(values) for key, values in samples.items()}
    results["bm25_exactness"] = bm25_alone(qs, principal, samples)
    for key in ("bm25_alone_blocks", "bm25_alone_sql"):
        results[key] = summary(samples[key])
    return results


def bm25_alone(qs: list[str], principal: Any, samples: dict[str, list[float]]) -> str:
    """BM25 called directly (question terms at weight 1) by posting blocks and by the SQL sum of every
    posting: latency of each, and whether both return the same top-40."""
    from knowledge.text import query_terms
    from retrieval.stages import bm25_search
    from retrieval.types import Filters

    same = 0
    for q in qs:
        terms = [(t, 1.0) for t in query_terms(q)]
        runs = {}
        for method in ("blocks", "sql"):
            t0 = time.perf_counter()
            runs[method] = bm25_search(terms, principal, Filters(), method=method)
            samples.setdefault(f"bm25_alone_{method}", []).append((time.perf_counter() - t0) * 1000)
        blocks, sql = runs["blocks"], runs["sql"]
        same += len(blocks) == len(sql) and all(
            abs(a.score - b.score) <= 1e-9 * abs(b.score) for a, b in zip(blocks, sql, strict=True)
        )
    return f"{same}/{len(qs)} questions: same top-40 scores by blocks and by SQL"


def hnsw_recall(qs: list[str], efs: list[int], k: int = 40) -> dict[str, Any]:
    """Share of the exact top-k (sequential scan) that the HNSW search (as dense_search runs it) returns, at
    each `ef_search` of `efs`, and the latency of each; the exact scan's latency once."""
    from django.db import connection, transaction

    from retrieval.search import embed_query
    from retrieval.stages import dense_search
    from retrieval.types import Filters

    principal = bench_principal()
    recalls: dict[int, list[float]] = {ef: [] for ef in efs}
    index_ms: dict[int, list[float]] = {ef: [] for ef in efs}
    exact_ms = []
    for q in qs:
        vec = embed_query(q)
        with transaction.atomic():
            with connection.cursor() as cursor:
                cursor.execute("SET LOCAL enable_indexscan = off")
                cursor.execute("SET LOCAL enable_bitmapscan = off")
            t0 = time.perf_counter()
            exact = {s.id for s in dense_search(vec, principal, Filters(), k=k)}
            exact_ms.append((time.perf_counter() - t0) * 1000)
        for ef in efs:
            t0 = time.perf_counter()
            approx = {s.id for s in dense_search(vec, principal, Filters(), k=k, ef_search=ef)}
            index_ms[ef].append((time.perf_counter() - t0) * 1000)
            recalls[ef].append(len(approx & exact) / max(1, len(exact)))
    return {
        "queries": len(qs),
        "k": k,
        "exact_ms": summary(exact_ms),
        "by_ef": {
            str(ef): {
                "mean_recall": round(statistics.mean(recalls[ef]), 4),
                "min_recall": round(min(recalls[ef]), 4),
                "under_08": sum(r < 0.8 for r in recalls[ef]),
                "hnsw_ms": summary(index_ms[ef]),
            }
            for ef in efs
        },
    }


def ef_values(text: str) -> list[int]:
    """The `--ef-search` list; SearchConfig's value and 100 (pgvector's default is 40) when empty."""
    from retrieval.types import SearchConfig

    if not text.strip():
        return sorted({100, SearchConfig().ef_search})
    try:
        values = [int(v) for v in text.split(",") if v.strip()]
    except ValueError:
        raise SystemExit(f"--ef-search: not a list of integers: {text!r}") from None
    if not values or any(not 1 <= v <= 1000 for v in values):
        raise SystemExit("--ef-search: each value must be between 1 and 1000 (pgvector's range)")
    return sorted(set(values))


def db_facts() -> dict[str, Any]:
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute("SELECT count(*) FROM knowledge_chunk WHERE active")
        chunks = cursor.fetchone()[0]
        cursor.execute("SELECT count(*) FROM knowledge_document")
        documents = cursor.fetchone()[0]
        cursor.execute("SELECT count(*) FROM knowledge_posting")
        postings = cursor.fetchone()[0]
        sizes = {}
        for name in (
            "knowledge_chunk",
            "knowledge_posting",
            "knowledge_postingblock",
            "chunk_embedding_hnsw",
            "knowledge_mention",
        ):
            cursor.execute("SELECT pg_total_relation_size(%s::regclass)", [name])
            sizes[name] = round(cursor.fetchone()[0] / 2**20, 1)
    return {"chunks": chunks, "documents": documents, "postings": postings, "size_mb": sizes}


def print_report(results: dict[str, Any]) -> None:
    facts = results["db"]
    print(
        f"== database: {facts['chunks']} chunks, {facts['documents']} documents, {facts['postings']} postings =="
    )
    print("  sizes MiB: " + "  ".join(f"{k} {v}" for k, v in facts["size_mb"].items()))
    if "build" in results:
        print("== synthetic build ==\n  " + "  ".join(f"{k} {v}" for k, v in results["build"].items()))
    print(f"== latency ms over {results['queries']} queries (median / p95) ==")
    for key, s in results["latency"].items():
        if isinstance(s, dict):
            print(f"  {key:40s} {s['p50']:>8.1f} {s['p95']:>8.1f}   (n={s['n']})")
        else:
            print(f"  {key}: {s}")
    if "hnsw_recall" in results:
        r = results["hnsw_recall"]
        print(
            f"== HNSW recall@{r['k']} vs exact over {r['queries']} queries "
            f"(exact scan p50 {r['exact_ms']['p50']} ms, p95 {r['exact_ms']['p95']} ms) =="
        )
        for ef, e in r["by_ef"].items():
            print(
                f"  ef_search {ef:>5}: mean {e['mean_recall']:.3f}  min {e['min_recall']:.2f}  "
                f"under .8: {e['under_08']:>3}   p50 {e['hnsw_ms']['p50']} ms  p95 {e['hnsw_ms']['p95']} ms"
            )
    print(f"peak RSS {results['peak_rss_mb']:.0f} MiB")


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--synthetic", type=int, nargs="?", const=300_000, default=0, help="grow to N chunks")
    parser.add_argument("--drop-synthetic", action="store_true", help="remove the synthetic chunks and exit")
    parser.add_argument("--queries", type=int, default=90)
    parser.add_argument("--recall-queries", type=int, default=50)
    parser.add_argument(
        "--ef-search",
        default="",
        help="comma-separated ef_search values for the recall check (default: SearchConfig's, and 100)",
    )
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--save", type=Path)
    parser.add_argument("--compare", type=Path)
    args = parser.parse_args()
    setup_django()
    efs = ef_values(args.ef_search)  # a bad list stops the run before a long synthetic build
    if args.drop_synthetic:
        synthetic_drop()
        print("synthetic chunks removed")
        return
    results: dict[str, Any] = {"date": time.strftime("%Y-%m-%d %H:%M"), "cpus": os.cpu_count()}
    if args.synthetic:
        results["build"] = synthetic_build(args.synthetic, args.seed)
    all_questions = questions()
    qs = all_questions[: args.queries]
    results["queries"] = len(qs)
    results["db"] = db_facts()
    results["latency"] = latency(qs)
    if args.recall_queries:
        results["hnsw_recall"] = hnsw_recall(all_questions[: args.recall_queries], efs)
    results["peak_rss_mb"] = round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)
    print_report(results)
    results_save(results, args.save, args.compare)


if __name__ == "__main__":
    main()
