#!/usr/bin/env python
"""Where an answer's time goes: per-step and per-retrieval-source milliseconds over dev questions, and the
process's peak resident memory.

    python tests/benchmarks/answer_profile.py [--split train|validation|all] [--limit 100] [--user dev-user]
                                       [--out var/bench/profile.json] [--compare OLD.json]

Runs the answering pipeline in this process (no web or broker hop: `load.py` measures that) for the first
`--limit` questions of the dev set, after one warm-up question, against the database the settings name
(ingest the dev corpus first: `devset.py ingest`). Prints, per step, the median, p95 and share of the total
time, most expensive first, then retrieval's own stages (query embedding, each source, fusion, rerank, MMR).
"""

from __future__ import annotations

import argparse
import json
import resource
import statistics
import time
from collections import defaultdict
from pathlib import Path

from common import DEVSET, ROOT, compare, percentile, setup_django


def summary(samples: dict[str, list[float]], total: float) -> dict[str, dict[str, float]]:
    return {
        name: {
            "median_ms": round(statistics.median(values), 2),
            "p95_ms": round(percentile(values, 0.95), 2),
            "share": round(sum(values) / total, 4) if total else 0.0,
            "runs": len(values),
        }
        for name, values in sorted(samples.items(), key=lambda item: -sum(item[1]))
    }


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--split", default="all", choices=("train", "validation", "all"))
    parser.add_argument("--limit", type=int, default=100)
    parser.add_argument("--user", default="dev-user")
    parser.add_argument("--questions", default=str(DEVSET / "questions.jsonl"))
    parser.add_argument("--out", default=str(ROOT / "var" / "bench" / "profile.json"))
    parser.add_argument("--compare", default=None, help="an earlier --out file: print old -> new")
    args = parser.parse_args()
    if args.limit < 1:
        raise SystemExit("--limit must be at least 1")

    setup_django()
    from django.contrib.auth.models import User

    from agents.pipeline import run_pipeline
    from athena.principals import Principal

    try:
        principal = Principal.from_user(User.objects.get(username=args.user))
    except User.DoesNotExist:
        raise SystemExit(f"no user {args.user!r}: run `devset.py ingest` first") from None
    rows = [json.loads(line) for line in Path(args.questions).read_text().splitlines() if line.strip()]
    questions = [q["question"] for q in rows if args.split == "all" or q.get("split") == args.split]
    questions = questions[: args.limit]
    if not questions:
        raise SystemExit("no questions in that split")

    run_pipeline(question=questions[0], principal=principal, history=[])  # warm-up: models, caches
    steps: dict[str, list[float]] = defaultdict(list)
    sources: dict[str, list[float]] = defaultdict(list)
    totals: list[float] = []
    for question in questions:
        started = time.perf_counter()
        result = run_pipeline(question=question, principal=principal, history=[])
        totals.append((time.perf_counter() - started) * 1000)
        for entry in result.trace:
            if entry.get("ms"):
                steps[entry["step"]].append(float(entry["ms"]))
        for name, ms in (result.search_timings_ms or {}).items():
            sources[name].append(float(ms))
    total = sum(totals)
    report = {
        "questions": len(questions),
        "answer_ms": {
            "median": round(statistics.median(totals), 1),
            "p95": round(percentile(totals, 0.95), 1),
        },
        # ru_maxrss is in KiB on Linux
        "peak_rss_mib": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
        "steps": summary(steps, total),
        "retrieval": summary(sources, total),
    }
    print(
        f"{len(questions)} questions: answer p50 {report['answer_ms']['median']} ms, "
        f"p95 {report['answer_ms']['p95']} ms; peak RSS {report['peak_rss_mib']} MiB"
    )
    for part in ("steps", "retrieval"):
        print(f"\n{part:28s}{'p50 ms':>10s}{'p95 ms':>10s}{'share':>8s}{'runs':>6s}")
        for name, figures in report[part].items():
            print(
                f"  {name:26s}{figures['median_ms']:>10.1f}{figures['p95_ms']:>10.1f}"
                f"{figures['share']:>8.1%}{figures['runs']:>6d}"
            )
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(report, indent=1) + "\n")
    print(f"\nsaved {out}")
    if args.compare:
        compare(report, Path(args.compare))


if __name__ == "__main__":
    main()
