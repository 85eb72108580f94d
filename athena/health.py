"""Component health checks used by /api/v1/health."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import asdict, dataclass

from django.db import connection

from athena.throttling import redis_client


@dataclass(frozen=True)
class Check:
    name: str
    healthy: bool
    detail: str
    ms: float


def _timed(name: str, probe: Callable[[], str]) -> Check:
    started = time.perf_counter()
    try:
        detail = probe()
        healthy = True
    except Exception as exc:  # health must report any failure, never raise
        detail = f"{type(exc).__name__}: {exc}".strip()[:300]
        healthy = False
    return Check(name, healthy, detail, round((time.perf_counter() - started) * 1000, 1))


def _database() -> str:
    with connection.cursor() as cursor:
        cursor.execute("SELECT current_setting('server_version')")
        return f"PostgreSQL {cursor.fetchone()[0]}"


def _pgvector() -> str:
    with connection.cursor() as cursor:
        cursor.execute("SELECT extversion FROM pg_extension WHERE extname = 'vector'")
        row = cursor.fetchone()
    if row is None:
        raise RuntimeError("pgvector extension is not installed in this database (run migrate)")
    return f"pgvector {row[0]}"


def _redis() -> str:
    client = redis_client()
    client.ping()
    return f"redis {client.info('server').get('redis_version', '?')}"


def _workers() -> str:
    """Healthy when every queue a task is routed to has a worker that beats for it (athena/consumers.py) and
    answers a ping: any one worker's reply said "ok" while nothing took the ingest work."""
    from athena.celery import app
    from athena.consumers import expected_queues, live_consumers

    expected, by_queue = expected_queues(), live_consumers()
    beating = sorted({host for hosts in by_queue.values() for host in hosts})
    answered: set[str] = set()
    if beating:
        # returns as soon as every beating worker has replied; one that beats and does not answer costs 1 s
        replies = app.control.ping(destination=beating, timeout=1.0, limit=len(beating))
        answered = {name for reply in replies for name in reply}
    serving = {queue: [host for host in hosts if host in answered] for queue, hosts in by_queue.items()}
    detail = "; ".join(f"{queue}: {', '.join(serving.get(queue, [])) or 'none'}" for queue in expected)
    silent = sorted(set(beating) - answered)
    if silent:
        detail += f" (beating, no answer to a ping within 1s: {', '.join(silent)})"
    missing = [queue for queue in expected if not serving.get(queue)]
    if missing:
        raise RuntimeError(f"no worker consumes {', '.join(missing)}: {detail}")
    return detail


def health_report(*, include_workers: bool = True) -> dict[str, object]:
    checks = [_timed("database", _database), _timed("pgvector", _pgvector), _timed("redis", _redis)]
    redis_ok = checks[-1].healthy
    if include_workers:
        if redis_ok:
            checks.append(_timed("worker", _workers))
        else:
            checks.append(Check("worker", False, "unknown: the broker (redis) is down", 0.0))
    return {
        "status": "ok" if all(c.healthy for c in checks) else "degraded",
        "components": {c.name: asdict(c) for c in checks},
    }
