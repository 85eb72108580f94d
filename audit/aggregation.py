"""Flood-proof audit events: a repeated event (a throttled request, a failed sign-in, an enumeration alert) is
written at its 1st, 10th, 100th ... occurrence per subject and hour, and the window's exact total once the
hour is over (audit_aggregates_flush, run by a beat task). The counters live in Redis."""

from __future__ import annotations

import hashlib
import json
import logging
import time
from datetime import UTC, datetime
from typing import Any

from athena.throttling import key_prefix, redis_client, redis_now

logger = logging.getLogger(__name__)

AGGREGATE_WINDOW_SECONDS = 3600
# counters outlive their window by one more, so the flush task (every few minutes) still finds the total
AGGREGATE_KEEP_SECONDS = 2 * AGGREGATE_WINDOW_SECONDS


def aggregate_open_key() -> str:
    """Sorted set of the aggregation counters still to be closed, scored by the end of their window."""
    return f"{key_prefix()}:aggopen"


def _is_milestone(count: int) -> bool:
    return str(count).rstrip("0") == "1"  # 1, 10, 100, ...


def audit_aggregated(*, kind: str, actor: Any, subject: str, payload: dict[str, Any], verdict: str) -> bool:
    """Audit a repeated event without letting a flood fill the chain: per `kind` and `subject` (a user, a
    login name) and hour, only the 1st, 10th, 100th ... occurrence is written at once, carrying the count so
    far; once the hour is over, audit_aggregates_flush writes the window's exact total (when it is not one of
    those already written). Returns whether an event was written. Without Redis every occurrence is written
    (fail open)."""
    from audit.services import audit_record

    digest = hashlib.sha256(subject.encode("utf-8")).hexdigest()[:32]  # bounded key, any subject
    actor_name = getattr(actor, "username", None) or (actor if isinstance(actor, str) else "")
    meta = json.dumps(
        {"kind": kind, "actor": actor_name, "verdict": verdict, "payload": payload}, default=str
    )
    try:
        client = redis_client()
        # the hour on Redis's clock: every host counting into a window agrees on which one it is
        window = int(redis_now(client)) // AGGREGATE_WINDOW_SECONDS
        key = f"{key_prefix()}:agg:{kind}:{digest}:{window}"
        with client.pipeline() as pipe:
            pipe.incr(key)
            pipe.expire(key, AGGREGATE_KEEP_SECONDS)
            # what the window's closing event says: the latest occurrence's details
            pipe.set(f"{key}:meta", meta, ex=AGGREGATE_KEEP_SECONDS)
            pipe.zadd(aggregate_open_key(), {key: (window + 1) * AGGREGATE_WINDOW_SECONDS})
            count = int(pipe.execute()[0])
    except Exception:
        logger.warning("audit aggregation: redis unavailable, event written", exc_info=True)
        count, window = 1, int(time.time()) // AGGREGATE_WINDOW_SECONDS
    if not _is_milestone(count):
        return False
    audit_record(
        kind=kind,
        actor=actor,
        payload={**payload, "count": count, "window_started": window * AGGREGATE_WINDOW_SECONDS},
        verdict=verdict,
    )
    return True


# how long a flush runner holds a window it is closing; one killed while writing leaves it to the next run
FLUSH_CLAIM_SECONDS = 600


def audit_aggregates_flush(*, now: float | None = None) -> int:
    """Close every aggregation window that has ended: write one event with its exact total (`count`,
    `window_closed`: true) unless that total was already written as a milestone. Run by a beat task. A runner
    claims a window before writing it (two runners never both write one) and forgets its counters only once
    the event is committed: a write that fails leaves the window to the next run, and a runner killed after
    its write is not followed by a second event for the same window. One window's failure does not stop the
    others. Returns how many events were written."""
    client = redis_client()
    now = redis_now(client) if now is None else now
    written = 0
    for raw in client.zrangebyscore(aggregate_open_key(), 0, now):
        key = raw.decode() if isinstance(raw, bytes) else str(raw)
        if not client.set(f"{key}:claim", "1", nx=True, ex=FLUSH_CLAIM_SECONDS):
            continue  # another runner is closing it
        try:
            written += _window_close(client, key)
        except Exception:
            logger.exception("audit aggregation: window %s not closed; the next run tries again", key)
            client.delete(f"{key}:claim")
            continue
        client.zrem(aggregate_open_key(), key)
        client.delete(key, f"{key}:meta", f"{key}:claim")
    return written


def _window_close(client: Any, key: str) -> int:
    """Write the closing event of the window counted at `key` (1), or nothing (0) when its total is a
    milestone already in the log, its counters expired, or a killed runner wrote it already."""
    from audit.models import AuditEvent
    from audit.services import audit_record

    count_raw, meta_raw = client.mget(key, f"{key}:meta")
    if count_raw is None or meta_raw is None:
        return 0
    count = int(count_raw)
    if _is_milestone(count):
        return 0  # that total is already in the log
    meta = json.loads(meta_raw)
    window_started = int(key.rsplit(":", 1)[1]) * AGGREGATE_WINDOW_SECONDS
    payload = {**meta["payload"], "count": count, "window_started": window_started, "window_closed": True}
    # a closing event is written after its window started: the created_at index bounds the search to it
    since = datetime.fromtimestamp(window_started, tz=UTC)
    written = AuditEvent.objects.filter(
        created_at__gte=since, kind=meta["kind"], actor=meta["actor"], payload__contains=payload
    )
    if written.exists():
        return 0
    audit_record(kind=meta["kind"], actor=meta["actor"], verdict=meta["verdict"], payload=payload)
    return 1
