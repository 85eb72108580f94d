#!/usr/bin/env python
"""Load benchmark through the HTTP API (a script, not collected by pytest).

Asks dev-set questions with `POST /api/v1/ask` and token authentication at each concurrency level, and prints
per level: answers/s, latency p50/p95/p99 of the answered (200) questions and of all replies, and the count of
each status (503s are the deliberate back-pressure or no-worker replies; their mean Retry-After is shown).

The server must be running (`make run`, or `manage.py stack up`); start it with a question quota that a
benchmark does not exhaust (ATHENA_QUESTIONS_PER_HOUR=100000). Tokens: --token, or --users N creates users
load-1..N (group employees) and their tokens in the database the Django settings name, and the requests are
spread over them. Each user may have ATHENA_USER_MAX_IN_FLIGHT (2) questions waiting at once; beyond that the
API answers 429 too_many_in_flight (per-user fairness), so use at least concurrency ÷ 2 users (or raise the cap
on the server) to measure the service rather than the cap.

    python tests/benchmarks/load.py --users 4 --levels 1,4,8,16,32 --per-level 32 --save load.json
    python tests/benchmarks/load.py --users 4 --baseline load.json          # compare with an earlier run
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import threading
import time
import urllib.error
import urllib.request
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from common import DEVSET, ask_request, percentile, setup_django


def tokens_for(users: int) -> list[str]:
    setup_django()
    from django.contrib.auth.models import Group, User
    from rest_framework.authtoken.models import Token

    group, _ = Group.objects.get_or_create(name="employees")
    tokens = []
    for i in range(1, users + 1):
        user, _ = User.objects.get_or_create(username=f"load-{i}")
        user.groups.add(group)
        tokens.append(Token.objects.get_or_create(user=user)[0].key)
    return tokens


def questions(path: Path, limit: int) -> list[str]:
    items = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    return [item["question"] for item in items if not item.get("acl")][:limit]


def ask(url: str, token: str, question: str, timeout: float) -> dict[str, Any]:
    request = ask_request(url, token, question)
    started = time.perf_counter()
    retry_after = None
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            response.read()
            status = response.status
    except urllib.error.HTTPError as error:
        error.read()
        status = error.code
        retry_after = error.headers.get("Retry-After")
    except (urllib.error.URLError, TimeoutError, ConnectionError) as error:
        status = f"error:{type(error).__name__}"
    return {
        "status": status,
        "seconds": time.perf_counter() - started,
        "retry_after": float(retry_after) if retry_after else None,
    }


def level_run(
    url: str, tokens: list[str], qs: list[str], concurrency: int, total: int, timeout: float, honour: bool
) -> dict:
    """`total` questions, at most `concurrency` in flight, spread over the tokens. With `honour`, a client
    told 503 + Retry-After waits that long (at most 10 s) before its next question, as a real one would."""
    work = [(tokens[i % len(tokens)], qs[i % len(qs)]) for i in range(total)]
    lock = threading.Lock()
    replies: list[dict[str, Any]] = []

    def one(item: tuple[str, str]) -> None:
        reply = ask(url, item[0], item[1], timeout)
        with lock:
            replies.append(reply)
        if honour and reply["retry_after"]:
            time.sleep(min(reply["retry_after"], 10.0))

    started = time.perf_counter()
    with ThreadPoolExecutor(max_workers=concurrency) as pool:
        list(pool.map(one, work))
    wall = time.perf_counter() - started
    answered = [r["seconds"] for r in replies if r["status"] == 200]
    every = [r["seconds"] for r in replies]
    retry = [r["retry_after"] for r in replies if r["retry_after"] is not None]
    return {
        "concurrency": concurrency,
        "requests": len(replies),
        "wall_s": round(wall, 2),
        "answers_per_s": round(len(answered) / wall, 2),
        "answered": {
            "p50": round(percentile(answered, 0.50), 2),
            "p95": round(percentile(answered, 0.95), 2),
            "p99": round(percentile(answered, 0.99), 2),
            "mean": round(statistics.mean(answered), 2) if answered else float("nan"),
        },
        "all": {"p50": round(percentile(every, 0.50), 2), "p95": round(percentile(every, 0.95), 2)},
        "status": {str(k): v for k, v in sorted(Counter(r["status"] for r in replies).items(), key=str)},
        "retry_after_mean_s": round(statistics.mean(retry), 1) if retry else None,
    }


def print_table(levels: list[dict[str, Any]], baseline: dict[int, dict[str, Any]] | None = None) -> None:
    head = f"{'conc':>4} {'n':>4} {'ans/s':>6} {'p50':>6} {'p95':>6} {'p99':>6} {'all p95':>7}  status (Retry-After)"
    print(head)
    for row in levels:
        a = row["answered"]
        status = " ".join(f"{k}:{v}" for k, v in row["status"].items())
        retry = f" ({row['retry_after_mean_s']} s)" if row["retry_after_mean_s"] is not None else ""
        print(
            f"{row['concurrency']:>4} {row['requests']:>4} {row['answers_per_s']:>6.2f} {a['p50']:>6.2f} "
            f"{a['p95']:>6.2f} {a['p99']:>6.2f} {row['all']['p95']:>7.2f}  {status}{retry}"
        )
        old = (baseline or {}).get(row["concurrency"])
        if old:
            print(
                f"{'':>4} {'was':>4} {old['answers_per_s']:>6.2f} {old['answered']['p50']:>6.2f} "
                f"{old['answered']['p95']:>6.2f} {old['answered']['p99']:>6.2f} {old['all']['p95']:>7.2f}  "
                + " ".join(f"{k}:{v}" for k, v in old["status"].items())
            )


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--url", default=f"http://127.0.0.1:{os.environ.get('PORT', '8000')}")
    parser.add_argument("--token", action="append", default=[], help="API token (repeatable)")
    parser.add_argument("--users", type=int, default=0, help="create N load users and use their tokens")
    parser.add_argument("--levels", default="1,4,8,16,32")
    parser.add_argument(
        "--per-level",
        type=int,
        default=32,
        help="questions per concurrency level (at least the level itself)",
    )
    parser.add_argument("--questions", type=Path, default=DEVSET / "questions.jsonl")
    parser.add_argument("--timeout", type=float, default=200.0, help="client timeout per request, seconds")
    parser.add_argument(
        "--ignore-retry-after", action="store_true", help="send the next question at once after a 503"
    )
    parser.add_argument("--save", type=Path)
    parser.add_argument("--baseline", type=Path, help="a JSON saved by --save, printed under each level")
    args = parser.parse_args()
    tokens = list(args.token) + (tokens_for(args.users) if args.users else [])
    if not tokens:
        parser.error("give --token or --users")
    qs = questions(args.questions, 500)
    levels = []
    for concurrency in (int(x) for x in args.levels.split(",")):
        row = level_run(
            args.url,
            tokens,
            qs,
            concurrency,
            max(args.per_level, concurrency),
            args.timeout,
            not args.ignore_retry_after,
        )
        levels.append(row)
        print(
            f"  concurrency {concurrency}: {row['answers_per_s']} answers/s, {row['status']}", file=sys.stderr
        )
    results = {
        "date": time.strftime("%Y-%m-%d %H:%M"),
        "cpus": os.cpu_count(),
        "url": args.url,
        "levels": levels,
    }
    baseline = None
    if args.baseline:
        baseline = {row["concurrency"]: row for row in json.loads(args.baseline.read_text())["levels"]}
    print_table(levels, baseline)
    if args.save:
        args.save.write_text(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
