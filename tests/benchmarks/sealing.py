#!/usr/bin/env python
"""What sealing costs (athena.sealing) on the payloads that travel sealed (a script, not collected by pytest).

An answer as the realtime worker returns it is built from the sample KB's own text: `--passages` evidence
passages of about `--chars` characters each (the prediction's top-10 `passages`), three citations quoting them
and a trace of thirty steps. Printed: p50/p95 in ms of kombu's JSON alone (what Celery does to any result), of
seal_json + unseal_json on the same value (JSON included), and the sizes that Redis stores, plain and sealed.
No database or Redis is needed (only SECRET_KEY).

    python tests/benchmarks/sealing.py [--runs 2000] [--passages 10] [--chars 1100]
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path
from typing import Any

from common import percentile, setup_django

ROOT = Path(__file__).resolve().parents[2]


def sample_answer(passages: int, chars: int) -> dict[str, Any]:
    text = " ".join(path.read_text() for path in sorted((ROOT / "knowledge" / "sample_kb").rglob("*.md")))
    words = text.split()
    pieces: list[str] = []
    start = 0
    while len(pieces) < passages:
        piece: list[str] = []
        while sum(len(w) + 1 for w in piece) < chars:
            piece.append(words[start % len(words)])
            start += 1
        pieces.append(" ".join(piece))
    citations = [
        {
            "ref": n + 1,
            "document": f"restricted/doc-{n}.md",
            "title": f"Document {n}",
            "section": "Steps",
            "page": None,
            "chunk_id": 1000 + n,
            "updated_at": "2026-01-01T00:00:00+00:00",
            "access_tier": "restricted",
            "quote": pieces[n][:300],
        }
        for n in range(3)
    ]
    trace = [
        {"step": f"step-{n}", "decision": {"kept": n, "why": "fitted threshold"}, "ms": 1.5}
        for n in range(30)
    ]
    return {
        "answer": " ".join(pieces[n][:200] + f" [{n + 1}]." for n in range(3)),
        "abstained": False,
        "template": "procedure_sop",
        "citations": citations,
        "retrieved": [f"restricted/doc-{n}.md" for n in range(passages)],
        "passages": pieces,
        "attribution_score": 0.91,
        "timings_ms": {"total": 812.4, "worker": 830.1},
        "trace": trace,
    }


def timed(runs: int, once: Any) -> dict[str, float]:
    values = []
    for _ in range(runs):
        started = time.perf_counter()
        once()
        values.append((time.perf_counter() - started) * 1000)
    return {"p50": round(percentile(values, 0.5), 3), "p95": round(percentile(values, 0.95), 3)}


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--runs", type=int, default=2000)
    parser.add_argument("--passages", type=int, default=10)
    parser.add_argument("--chars", type=int, default=1100)
    args = parser.parse_args()
    setup_django()
    from kombu.utils import json as kombu_json

    from athena.sealing import Purpose, seal_json, unseal_json

    answer = sample_answer(args.passages, args.chars)
    plain = kombu_json.dumps(answer)
    token = seal_json(answer, purpose=Purpose.ANSWER)
    assert unseal_json(token, purpose=Purpose.ANSWER) == answer
    for _ in range(50):  # key derivation (cached per purpose) and first-call costs
        unseal_json(seal_json(answer, purpose=Purpose.ANSWER), purpose=Purpose.ANSWER)
    json_only = timed(args.runs, lambda: kombu_json.loads(kombu_json.dumps(answer)))
    sealed = timed(
        args.runs, lambda: unseal_json(seal_json(answer, purpose=Purpose.ANSWER), purpose=Purpose.ANSWER)
    )
    print(f"== an answer of {args.passages} passages x ~{args.chars} chars, {args.runs} runs (ms) ==")
    print(f"  kombu JSON dumps+loads      p50 {json_only['p50']:.3f}  p95 {json_only['p95']:.3f}")
    print(f"  seal_json+unseal_json       p50 {sealed['p50']:.3f}  p95 {sealed['p95']:.3f}")
    print(f"  stored bytes: plain {len(plain)}, sealed {len(token)} ({len(token) / len(plain):.2f}x)")


if __name__ == "__main__":
    main()
