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

With --ingest-docs N each level first queues an ingest of N new documents (written from the sample knowledge
base's public files, each line tagged so that every chunk is new and embedded), as an admin's batch or the
nightly sync would, and its questions are asked while it runs: the level's row then also says how long the
realtime queue grew and whether the ingest was still running when the level ended. With --users, each level
also counts the audit events of the load users' questions (every question is audited, answered or refused)
against the replies the server gave.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from common import DEVSET, ROOT, ask_request, percentile, setup_django

SAMPLE_PUBLIC = ROOT / "knowledge" / "sample_kb" / "public"


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


def documents_write(folder: Path, count: int, tag: str) -> None:
    """`count` documents in `folder`, each a sample knowledge base file whose prose lines carry a tag of their own
    (`tag` and the document's number): new content hashes and new chunk texts, so all of them are embedded."""
    bases = sorted(path for path in SAMPLE_PUBLIC.iterdir() if path.suffix in {".md", ".txt"})
    folder.mkdir(parents=True, exist_ok=True)
    for i in range(count):
        base = bases[i % len(bases)]
        mark = f"{tag}x{i}"
        lines = []
        for line in base.read_text().splitlines():
            # prose only: front matter, headings, indented code and "Field: value" lines stay as they are
            if line.strip() and not line.startswith(("    ", "---", "#")) and ":" not in line[:20]:
                line = f"{line} ({mark})"
            lines.append(line)
        (folder / f"{base.stem}-{mark}{base.suffix}").write_text("\n".join(lines) + "\n")


def ingest_start(count: int, tag: str) -> None:
    """Write `count` new documents under var/load-ingest/`tag` and queue their ingest (`manage.py ingest`, which
    returns once the batches are queued), as an admin's upload of a folder or the nightly sync does."""
    folder = ROOT / "var" / "load-ingest" / tag
    documents_write(folder, count, tag)
    subprocess.run(
        [sys.executable, "manage.py", "ingest", str(folder)], cwd=ROOT, check=True, capture_output=True
    )


class QueueWatch:
    """Samples the length of each Celery queue (`realtime`, `embed`, `ingest`) every half second."""

    QUEUES = ("realtime", "embed", "ingest")

    def __init__(self) -> None:
        import redis
        from django.conf import settings

        self.client = redis.Redis.from_url(settings.CELERY_BROKER_URL)
        self.samples: list[dict[str, int]] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._stop.is_set():
            self.samples.append({name: int(self.client.llen(name)) for name in self.QUEUES})
            self._stop.wait(0.5)

    def __enter__(self) -> QueueWatch:
        self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._stop.set()
        self._thread.join()

    def summary(self) -> dict[str, Any]:
        last = self.samples[-1] if self.samples else {}
        return {
            f"{name}_max": max((sample[name] for sample in self.samples), default=0) for name in self.QUEUES
        } | {"ingest_left_at_end": last.get("ingest", 0) + last.get("embed", 0)}


def audited_questions(users: int, since: float) -> int:
    """Audit events of the load users' questions (kind `question`: answered, abstained, refused, unavailable,
    throttled by the in-flight cap) and of their hourly-limit refusals (`throttled`) recorded since `since`."""
    from datetime import UTC, datetime

    from audit.models import AuditEvent

    names = [f"load-{i}" for i in range(1, users + 1)]
    return AuditEvent.objects.filter(
        kind__in=("question", "throttled"),
        actor__in=names,
        created_at__gte=datetime.fromtimestamp(since, tz=UTC),
    ).count()


def questions(path: Path, limit: int) -> list[str]:
    items = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    return [item["question"] for item in items if not item.get("acl")][:limit]


def ask(url: str, token: str, question: str, timeout: float) -> dict[str, Any]:
    request = ask_request(url, token, question)
    started = time.perf_counter()
    retry_after = None
    code = ""
    worker_seconds = None
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            body = response.read()
            status = response.status
        # the answer's own time in the worker (agents.tasks): the rest of the latency is the wait in the queue,
        # the broker hop and the web process's own work
        worker_ms = (json.loads(body).get("timings_ms") or {}).get("worker")
        worker_seconds = worker_ms / 1000 if worker_ms is not None else None
    except urllib.error.HTTPError as error:
        body = error.read()
        status = error.code
        retry_after = error.headers.get("Retry-After")
        try:
            code = json.loads(body)["error"]["code"]
        except (ValueError, KeyError, TypeError):
            code = "not-json"
    except (urllib.error.URLError, TimeoutError, ConnectionError) as error:
        status = f"error:{type(error).__name__}"
    seconds = time.perf_counter() - started
    return {
        "status": status,
        "code": code,
        "seconds": seconds,
        "retry_after": float(retry_after) if retry_after else None,
        "waited": seconds - worker_seconds if worker_seconds is not None else None,
    }


def level_run(
    url: str,
    tokens: list[str],
    qs: list[str],
    concurrency: int,
    total: int,
    timeout: float,
    honour: bool,
    ingest_docs: int = 0,
    audit_users: int = 0,
) -> dict:
    """`total` questions, at most `concurrency` in flight, spread over the tokens. With `honour`, a client
    told 503 + Retry-After waits that long (at most 10 s) before its next question, as a real one would.
    `ingest_docs`: queue an ingest of that many new documents first (the questions are asked while it runs);
    `audit_users`: count the audit events of users load-1..N's questions against the replies."""
    since = time.time()
    if ingest_docs:
        ingest_start(ingest_docs, f"c{concurrency}t{int(since)}")
        time.sleep(2)  # the workers have taken their first batches
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
    with QueueWatch() as watch, ThreadPoolExecutor(max_workers=concurrency) as pool:
        list(pool.map(one, work))
    wall = time.perf_counter() - started
    answered = [r["seconds"] for r in replies if r["status"] == 200]
    every = [r["seconds"] for r in replies]
    retry = [r["retry_after"] for r in replies if r["retry_after"] is not None]
    waited = [r["waited"] for r in replies if r["status"] == 200 and r["waited"] is not None]
    row: dict[str, Any] = {
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
        # answered questions' latency less their time in the worker: what admission's bound is about
        "waited": {"p50": round(percentile(waited, 0.50), 2), "p95": round(percentile(waited, 0.95), 2)}
        if waited
        else None,
        "status": {str(k): v for k, v in sorted(Counter(r["status"] for r in replies).items(), key=str)},
        "codes": dict(sorted(Counter(r["code"] for r in replies if r["code"]).items())),
        "retry_after_mean_s": round(statistics.mean(retry), 1) if retry else None,
        "queues": watch.summary(),
    }
    if audit_users:
        # every reply from the server is one audited question, except the hourly limit's refusals, which are
        # audited aggregated (athena.throttling); give the web process a moment to commit the last ones
        expected = sum(1 for r in replies if isinstance(r["status"], int) and r["code"] != "throttled")
        time.sleep(1)
        row["audit"] = {"expected": expected, "recorded": audited_questions(audit_users, since)}
    return row


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
        queues, audit = row.get("queues") or {}, row.get("audit")
        extra = [f"codes {row['codes']}"] if row.get("codes") else []
        if row.get("waited"):
            extra.append(
                f"answered: waited before the worker p50 {row['waited']['p50']} / p95 {row['waited']['p95']} s"
            )
        if queues:
            extra.append(
                f"realtime queue max {queues['realtime_max']}, ingest+embed left at end {queues['ingest_left_at_end']}"
            )
        if audit:
            extra.append(f"audited {audit['recorded']} of {audit['expected']} replies")
        if extra:
            print(f"{'':>10}" + "; ".join(extra))
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
    parser.add_argument(
        "--ingest-docs",
        type=int,
        default=0,
        help="queue an ingest of N new documents at the start of each level (asked while it runs)",
    )
    parser.add_argument("--save", type=Path)
    parser.add_argument("--baseline", type=Path, help="a JSON saved by --save, printed under each level")
    args = parser.parse_args()
    setup_django()  # the broker's queues are watched, the audit log counted
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
            ingest_docs=args.ingest_docs,
            audit_users=args.users,
        )
        levels.append(row)
        print(
            f"  concurrency {concurrency}: {row['answers_per_s']} answers/s, {row['status']}", file=sys.stderr
        )
    results = {
        "date": time.strftime("%Y-%m-%d %H:%M"),
        "cpus": os.cpu_count(),
        "url": args.url,
        "ingest_docs": args.ingest_docs,
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
