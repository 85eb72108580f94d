#!/usr/bin/env python
"""Parsing benchmark (a script, not collected by pytest): parses every file of a corpus that ingestion would read
with `parse_file`, one after another in this process, and prints how many parsed, how long it took (total,
files/s, median and slowest files) and which files failed or came out without a block of text. It replaces a
timed pytest test that read the dev corpus (machines here are shared: speed is measured, not asserted).

    python tests/benchmarks/parse.py [--corpus DIR] [--save new.json] [--compare old.json]

The default corpus is the dev set's (`../shared/devset/build_corpus.sh DIR` builds it; ATHENA_DEVCORPUS names
it). Exits 1 when a file failed or yielded nothing.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

from common import percentile, results_save, setup_django


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--corpus", type=Path, default=Path(os.environ.get("ATHENA_DEVCORPUS", "/work/devcorpus"))
    )
    parser.add_argument("--save", type=Path)
    parser.add_argument("--compare", type=Path)
    args = parser.parse_args()
    if not args.corpus.is_dir():
        parser.error(f"no corpus at {args.corpus}: build it with ../shared/devset/build_corpus.sh DIR")
    setup_django()
    from knowledge.parsing import ParseError, parse_file
    from knowledge.parsing.registry import EXTENSIONS

    files = sorted(
        path for path in args.corpus.rglob("*") if path.is_file() and path.suffix.lower() in EXTENSIONS
    )
    seconds: dict[Path, float] = {}
    failed: dict[Path, str] = {}
    empty: list[Path] = []
    started = time.perf_counter()
    for path in files:
        began = time.perf_counter()
        try:
            document = parse_file(path)
        except ParseError as exc:
            failed[path] = str(exc)
            continue
        finally:
            seconds[path] = time.perf_counter() - began
        if not document.blocks:
            empty.append(path)
    total = time.perf_counter() - started
    times = list(seconds.values())
    results = {
        "files": len(files),
        "failed": len(failed),
        "empty": len(empty),
        "seconds": round(total, 2),
        "files_per_s": round(len(files) / total, 1) if total else 0.0,
        "ms_p50": round(statistics.median(times) * 1000, 2) if times else 0.0,
        "ms_p95": round(percentile(times, 0.95) * 1000, 2) if times else 0.0,
    }
    print(
        f"corpus {args.corpus}: {len(files)} files parsed in {total:.1f} s ({results['files_per_s']} files/s)"
    )
    print(f"  per file: median {results['ms_p50']} ms, p95 {results['ms_p95']} ms")
    for path in sorted(seconds, key=seconds.__getitem__, reverse=True)[:5]:
        print(f"  slowest: {seconds[path] * 1000:8.1f} ms  {path.relative_to(args.corpus)}")
    for path, reason in failed.items():
        print(f"  FAILED: {path.relative_to(args.corpus)}: {reason}")
    for path in empty:
        print(f"  EMPTY: {path.relative_to(args.corpus)}")
    results_save(results, args.save, args.compare)
    return 1 if failed or empty else 0


if __name__ == "__main__":
    sys.exit(main())
