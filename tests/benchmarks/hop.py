#!/usr/bin/env python
"""The web -> broker -> worker -> web hop of a question (a script, not collected by pytest).

Three measurements, one question at a time, against a running stack (`manage.py bootstrap`, then
`manage.py stack up --only web`), in the database and Redis the Django settings name:

- floor: `answer_task` published for a question already marked abandoned, so the worker returns at its first
  lines: publish, broker, the worker taking the message, storing a result and the caller being told of it;
- hop: what the web process does to answer (agents.services._answer_on_worker): seal the question, publish
  it to the realtime queue, `realtime.answer_wait` for the result and open it (the answer comes back sealed;
  `--plain-answer` adds a row `hop_plain` with it unsealed), minus the task's own time in the worker
  (`timings_ms.worker`: unseal, lease, user and memory load, pipeline, output guard on quoted text);
- api: `POST /api/v1/ask` end to end minus the same worker time: the hop plus the web's own work
  (authentication, throttles, admission, audit rows, answer and memory) and HTTP.

Also printed: the pipeline's time (`timings_ms.total`) and the output guard on quoted text, which runs after
the pipeline (`timings_ms.quoted_text_guard`). The question must be one the sample KB answers (a refused one
gets 400 from the API, without timings).
Start the web with a question quota a benchmark does not exhaust (ATHENA_QUESTIONS_PER_HOUR=100000).

    python tests/benchmarks/hop.py --requests 50 [--url http://127.0.0.1:8000] [--save hop.json]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
import urllib.request
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

from common import ask_request, percentile, results_save, setup_django
from load import tokens_for

QUESTION = "How do I restart chrony?"  # answered from the sample KB (knowledge/sample_kb)


def summary(values: list[float]) -> dict[str, float]:
    return {
        "p50": round(percentile(values, 0.5), 2),
        "p95": round(percentile(values, 0.95), 2),
        "mean": round(statistics.fmean(values), 2),
        "min": round(min(values), 2),
    }


def floor_once(queue: str, timeout: float) -> float:
    from agents import realtime
    from agents.tasks import answer_task
    from athena.sealing import Purpose, seal

    question_id = str(uuid.uuid4())
    realtime.abandon(question_id)  # the worker returns None at once
    started = time.perf_counter()
    sealed = seal("-", purpose=Purpose.QUESTION)
    answer_task.apply_async(args=[0, sealed, "", None], queue=queue, task_id=question_id).get(
        timeout=timeout, interval=0.05
    )
    return (time.perf_counter() - started) * 1000


def hop_once(
    user_id: int, question: str, queue: str, timeout: float, *, sealed_answer: bool = True
) -> tuple[float, dict[str, float]]:
    """(ms from sealing the question to the opened answer in the web process, the answer's timings_ms).
    `sealed_answer`: the answer comes back sealed, as the web process asks for it; False: in plain text, as
    an earlier release's web process gets it (what sealing the answer costs is the difference)."""
    from agents import realtime
    from agents.tasks import answer_task
    from athena.sealing import Purpose, seal, unseal_json

    question_id = str(uuid.uuid4())
    options = {"seal_answer": True} if sealed_answer else {}
    started = time.perf_counter()
    args = [user_id, seal(question, purpose=Purpose.QUESTION), str(uuid.uuid4()), None]
    outcome = realtime.answer_wait(
        question_id=question_id,
        publish=lambda: answer_task.apply_async(args=args, kwargs=options, queue=queue, task_id=question_id),
        timeout=timeout,
        no_worker_grace=timeout,
    )
    if outcome.result is None:
        raise SystemExit(f"no answer from the realtime worker ({outcome.reason}); is the stack up?")
    answer = unseal_json(outcome.result, purpose=Purpose.ANSWER) if sealed_answer else outcome.result
    elapsed = (time.perf_counter() - started) * 1000
    return elapsed, answer["timings_ms"]


def api_once(url: str, token: str, question: str, timeout: float) -> tuple[float, dict[str, float]]:
    """(ms of POST /api/v1/ask as the client sees it, the answer's timings_ms)."""
    request = ask_request(url, token, question)
    started = time.perf_counter()
    with urllib.request.urlopen(request, timeout=timeout) as response:
        body = json.loads(response.read())
    elapsed = (time.perf_counter() - started) * 1000
    return elapsed, body["timings_ms"]


def measure(kind: str, requests: int, warm: int, once: Callable[[], Any]) -> dict[str, Any]:
    wall: list[float] = []
    timings: dict[str, list[float]] = {"worker": [], "pipeline": [], "quoted_text_guard": [], "task_rest": []}
    for i in range(warm + requests):
        got = once()
        if i < warm:
            continue  # connections, imports and first-call caches on both sides
        elapsed, reported = got if isinstance(got, tuple) else (got, None)
        wall.append(elapsed)
        if reported is not None:
            timings["worker"].append(reported["worker"])
            timings["pipeline"].append(reported["total"])
            timings["quoted_text_guard"].append(reported["quoted_text_guard"])
            # unseal, lease, user and memory load, the service-time record: the task's own bookkeeping
            timings["task_rest"].append(
                reported["worker"] - reported["total"] - reported["quoted_text_guard"]
            )
    print(f"  {kind}: {requests} requests", file=sys.stderr)
    result: dict[str, Any] = {"requests": requests, "wall_ms": summary(wall)}
    if timings["worker"]:
        result.update({f"{name}_ms": summary(values) for name, values in timings.items()})
        result["outside_worker_ms"] = summary([w - t for w, t in zip(wall, timings["worker"], strict=True)])
    return result


def print_report(results: dict[str, Any]) -> None:
    print(f"== web -> broker -> worker -> web, {results['question']!r}, concurrency 1 (ms) ==")
    print(f"  {'':6s} {'wall p50':>9s} {'p95':>8s} {'worker p50':>11s} {'wall-worker p50':>16s} {'p95':>8s}")
    for kind in ("floor", "hop", "hop_plain", "api"):
        if kind not in results:
            continue
        r = results[kind]
        line = f"  {kind:6s} {r['wall_ms']['p50']:9.2f} {r['wall_ms']['p95']:8.2f}"
        if "worker_ms" in r:
            line += (
                f" {r['worker_ms']['p50']:11.2f} {r['outside_worker_ms']['p50']:16.2f}"
                f" {r['outside_worker_ms']['p95']:8.2f}"
            )
        print(line)
    if "hop" in results:
        r = results["hop"]
        print(
            f"  in the worker (hop runs), p50: pipeline {r['pipeline_ms']['p50']:.1f}, output guard on quoted text "
            f"{r['quoted_text_guard_ms']['p50']:.1f}, the rest of the task {r['task_rest_ms']['p50']:.1f}"
        )


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--url", default="http://127.0.0.1:8000")
    parser.add_argument("--requests", type=int, default=50)
    parser.add_argument("--warm", type=int, default=3, help="requests before the timed ones, per kind")
    parser.add_argument("--question", default=QUESTION)
    parser.add_argument("--timeout", type=float, default=60.0)
    parser.add_argument(
        "--queue",
        help="publish the floor and hop measurements to this queue (default: ATHENA_REALTIME_QUEUE; the smoke "
        "test's own worker's); the api row goes where the web server publishes, its own setting",
    )
    parser.add_argument("--no-api", action="store_true", help="skip the HTTP measurement (no web running)")
    parser.add_argument(
        "--plain-answer",
        action="store_true",
        help="also measure the hop with the answer returned unsealed (row hop_plain): what sealing it costs",
    )
    parser.add_argument("--save", type=Path)
    parser.add_argument("--compare", type=Path)
    args = parser.parse_args()
    setup_django()
    from django.conf import settings
    from rest_framework.authtoken.models import Token

    queue = args.queue or settings.ATHENA_REALTIME_QUEUE
    token = tokens_for(1)[0]
    user_id = Token.objects.get(key=token).user_id
    results: dict[str, Any] = {"date": time.strftime("%Y-%m-%d %H:%M"), "question": args.question}
    results["floor"] = measure("floor", args.requests, args.warm, lambda: floor_once(queue, args.timeout))
    results["hop"] = measure(
        "hop", args.requests, args.warm, lambda: hop_once(user_id, args.question, queue, args.timeout)
    )
    if args.plain_answer:
        results["hop_plain"] = measure(
            "hop_plain",
            args.requests,
            args.warm,
            lambda: hop_once(user_id, args.question, queue, args.timeout, sealed_answer=False),
        )
    if not args.no_api:
        results["api"] = measure(
            "api", args.requests, args.warm, lambda: api_once(args.url, token, args.question, args.timeout)
        )
    print_report(results)
    results_save(results, args.save, args.compare)


if __name__ == "__main__":
    main()
