"""Realtime answering across processes: admission, worker liveness, and recovery from a worker that dies.

The web process publishes a question to the `realtime` queue under a task id that is the question's
idempotency key, then waits for the result in short slices. Between slices it looks at three things the
workers keep in Redis (all under `athena:<database>:rt:`):

- `workers` — a sorted set, one member per worker process that consumes the realtime queue
  (`hostname|concurrency`; `hostname|0|k` while it stops, finishing k questions), scored with the time of its
  last heartbeat (every HEARTBEAT_SECONDS) on Redis's clock (redis_now: web and workers on other hosts may not agree on the time);
- `lease:<id>` — set by the pool process computing question <id>, refreshed while it works and left to
  expire (LEASE_SECONDS) when it stops; `starts:<id>` counts the times a process began that question;
- `pending` — questions published and not yet answered (scored with their publish time, Redis's), which
  with the mean answer time `service_ms` gives the expected wait of a new question; `pending:user:<user id>`
  holds the same entries per asker, so that one user cannot have more than ATHENA_USER_MAX_IN_FLIGHT
  questions waiting (fairness: the realtime queue itself is first-in first-out, so a heavy user's share of it
  is what bounds the wait of everyone else) and an asker can be told their own place in the queue
  (`queue_position`).
- `others` — a sorted set, one member per pool process of any worker running a task of another queue (an
  embed batch, a parse), `hostname|pid|queue|expected end`, scored with its last refresh (OtherTaskLease);
  `others_ms` holds each queue's mean task time. A question cannot start on such a process before its task
  ends, and after QUEUE_TURN_AFTER questions in a row a worker gives those queues a turn (athena.queue_order),
  so admission counts both (Capacity).

Recovery: a pool process killed mid-answer is noticed by its Celery parent, which gives the message back to
the queue (acks_late + reject_on_worker_lost) and a new pool process runs it. When the whole worker dies, the
message stays unacknowledged in Redis until the broker's visibility timeout (an hour, which must exceed the
longest ingestion task), so the web process republishes the question itself as soon as the lease it saw
has expired without a result. Either copy runs under the same task id; a copy that finds the answer already
stored returns it without computing again, and the audit event is written once, by the web process, when
the answer arrives. When no realtime worker has sent a heartbeat for NO_WORKER_GRACE seconds the caller gets
503 with Retry-After instead of waiting for the full answer timeout.
"""

from __future__ import annotations

import json
import logging
import math
import os
import statistics
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from django.conf import settings
from redis.exceptions import RedisError

from athena.consumers import RedisBeat
from athena.sealing import KeyMismatch
from athena.throttling import redis_client, redis_now

logger = logging.getLogger(__name__)

HEARTBEAT_SECONDS = 1.0
# A worker missing three heartbeats in a row is gone (a loaded 2-core machine can delay one by a second).
WORKER_TTL_SECONDS = 4.0
LEASE_REFRESH_SECONDS = 1.0
LEASE_SECONDS = 4
POLL_SECONDS = 0.5
MAX_REPUBLISH = 3  # a question that kills its worker every time must not take the service down with it
SERVICE_EWMA_WEIGHT = 0.2  # the mean answer time follows load within ~5 answers


def _prefix() -> str:
    # the database name keeps a test run's keys apart from a development server sharing the Redis
    return settings.ATHENA_REALTIME_KEYS or f"athena:{settings.DATABASES['default']['NAME']}:rt"


def workers_key() -> str:
    return f"{_prefix()}:workers"


def lease_key(question_id: str) -> str:
    return f"{_prefix()}:lease:{question_id}"


def starts_key(question_id: str) -> str:
    return f"{_prefix()}:starts:{question_id}"


def pending_key() -> str:
    return f"{_prefix()}:pending"


def user_pending_key(user_id: int) -> str:
    return f"{_prefix()}:pending:user:{user_id}"


def service_key() -> str:
    return f"{_prefix()}:service_ms"


def others_key() -> str:
    return f"{_prefix()}:others"


def other_means_key() -> str:
    return f"{_prefix()}:others_ms"


def abandoned_key(question_id: str) -> str:
    return f"{_prefix()}:abandoned:{question_id}"


def abandoned(question_id: str) -> bool:
    """Whether the asker gave up on this question (a copy delivered later must not be computed)."""
    try:
        return bool(redis_client().exists(abandoned_key(question_id)))
    except RedisError:
        return False


def abandon(question_id: str) -> None:
    try:
        # kept as long as the broker may still hold a copy of the message (its visibility timeout)
        redis_client().set(abandoned_key(question_id), "1", ex=3700)
    except RedisError:
        pass


def answer_collected(question_id: str, result: Any) -> None:
    """The asker has the answer to `question_id`: its stored copy (`result`, the task's AsyncResult: the answer
    with the passages it quotes and their titles) is deleted from the result backend, where it stayed for an
    hour after anyone needed it, and the question is marked so that a copy of its message delivered later (one
    republished while the first was still running) is not answered and stored again."""
    abandon(question_id)
    try:
        result.forget()
    except RedisError as exc:  # the result then expires with CELERY_RESULT_EXPIRES
        logger.warning("the stored answer of %s was not deleted: %s", question_id, type(exc).__name__)


# --- worker side ---------------------------------------------------------------------------------------------


class WorkerHeartbeat(RedisBeat):
    """A daemon thread in the Celery worker's main process announcing that it consumes the realtime queue, as
    `hostname|concurrency`.

    A worker that begins to stop (Celery's warm shutdown: it takes no new task and finishes the ones it runs)
    is `drain`ed: until it exits it beats as `hostname|0|k`, alive with no process to offer and `k` questions
    still to finish (`finishing()`, read at each beat). Askers of those questions keep waiting for them (a
    worker is alive); admission counts none of its processes for the questions to come, which another worker,
    or this one restarted, will answer, and does not count its `k` questions as waiting for those others."""

    every = HEARTBEAT_SECONDS
    thread_name = "realtime-heartbeat"

    def __init__(self, *, hostname: str, concurrency: int, finishing: Callable[[], int] = lambda: 0) -> None:
        super().__init__()
        self.hostname = hostname
        self.concurrency = concurrency
        self.finishing = finishing
        self._draining = False
        self._written: set[str] = set()
        # one beat at a time: a beat of the thread that read "not draining" must not write after the drain's
        self._lock = threading.Lock()

    def _member(self) -> str:
        if self._draining:
            return f"{self.hostname}|0|{max(0, self.finishing())}"
        return f"{self.hostname}|{self.concurrency}"

    def beat(self, client: Any, now: float) -> None:
        with self._lock:
            member = self._member()
            with client.pipeline() as pipe:
                stale = self._written - {member}
                if stale:
                    pipe.zrem(workers_key(), *stale)
                pipe.zadd(workers_key(), {member: now})
                # members of workers that died without saying goodbye are dropped here, not only ignored
                pipe.zremrangebyscore(workers_key(), 0, now - 10 * WORKER_TTL_SECONDS)
                pipe.execute()
            self._written = {member}

    def drain(self) -> None:
        """From now on announce no process for new questions; said at once, not at the next beat."""
        with self._lock:
            self._draining = True
        try:
            client = redis_client()
            self.beat(client, redis_now(client))
        except RedisError as exc:  # the beat thread says it again within a second
            logger.warning("%s: the drain was not announced: %s", self.thread_name, exc)

    def retire(self, client: Any) -> None:
        with self._lock:
            if self._written:
                client.zrem(workers_key(), *self._written)
            self._written = set()


class _Refresher:
    """A daemon thread that calls `refresh` every LEASE_REFRESH_SECONDS until stopped (Redis errors skipped: a
    lease that misses a refresh or two is still within its LEASE_SECONDS)."""

    def __init__(self, refresh: Callable[[], None], *, name: str) -> None:
        self._refresh = refresh
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)

    def start(self) -> None:
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.wait(LEASE_REFRESH_SECONDS):
            try:
                self._refresh()
            except RedisError:
                pass

    def stop(self) -> None:
        """Stop refreshing, and wait for a refresh under way (one that ends after the lease is taken back would
        record it again)."""
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(timeout=2)


class AnswerLease:
    """Held by the pool process computing a question: `lease:<id>` exists while it works (and for up to
    LEASE_SECONDS after it stops, by which time Celery has stored the result)."""

    def __init__(self, question_id: str) -> None:
        self.key = lease_key(question_id)
        self.value = json.dumps({"pid": os.getpid(), "host": os.uname().nodename})
        self._refresher = _Refresher(self._refresh, name="answer-lease")
        self.question_id = question_id

    def __enter__(self) -> AnswerLease:
        try:
            pipe = redis_client().pipeline()
            pipe.set(self.key, self.value, ex=LEASE_SECONDS)
            pipe.incr(starts_key(self.question_id))
            pipe.expire(starts_key(self.question_id), settings.ATHENA_ANSWER_TIMEOUT_SECONDS * 2)
            pipe.execute()
        except RedisError as exc:
            logger.warning("answer lease not recorded: %s", exc)
        self._refresher.start()
        return self

    def _refresh(self) -> None:
        redis_client().set(self.key, self.value, ex=LEASE_SECONDS)

    def __exit__(self, *_: object) -> None:
        self._refresher.stop()


def _mean_folded(previous: bytes | str | None, seconds: float) -> str:
    """A running mean in milliseconds (as stored) with one more time of `seconds` folded in."""
    mean_ms = seconds * 1000
    if previous is not None:
        mean_ms = (1 - SERVICE_EWMA_WEIGHT) * float(previous) + SERVICE_EWMA_WEIGHT * mean_ms
    return f"{mean_ms:.1f}"


# until a queue's first task has been timed: about one embed batch (knowledge.tasks.EMBED_TASK_CHUNKS) on a
# busy 2-core machine
OTHER_TASK_DEFAULT_SECONDS = 2.0
# a task past its expected end is taken to end within this (a long document's one embed task overruns the mean)
OVERRUN_SECONDS = 0.5


def _mean_seconds(raw: bytes | str | None, default: float) -> float:
    return float(raw) / 1000 if raw else default


class OtherTaskLease:
    """Held by a pool process while it runs a task of queue `queue` (not the realtime one): its member of
    `others` says which worker (`hostname`, the name its realtime heartbeat carries), which process and when
    the task should end (now plus the queue's mean task time), refreshed every second and removed when the task
    ends. A process killed mid-task stops refreshing and is no longer counted WORKER_TTL_SECONDS later. `end`
    folds the task's time into the queue's mean."""

    def __init__(self, *, hostname: str, queue: str) -> None:
        self.hostname = hostname
        self.queue = queue
        self.member = ""
        self._started = 0.0
        self._refresher = _Refresher(self._refresh, name="other-task-lease")

    def start(self) -> None:
        self._started = time.monotonic()
        try:
            client = redis_client()
            now = redis_now(client)
            mean = _mean_seconds(client.hget(other_means_key(), self.queue), OTHER_TASK_DEFAULT_SECONDS)
            self.member = f"{self.hostname}|{os.getpid()}|{self.queue}|{now + mean:.3f}"
            pipe = client.pipeline()
            pipe.zadd(others_key(), {self.member: now})
            # members of processes that died mid-task are dropped here, not only ignored
            pipe.zremrangebyscore(others_key(), 0, now - 10 * WORKER_TTL_SECONDS)
            pipe.execute()
        except RedisError as exc:
            logger.warning("other task not recorded for admission: %s", exc)
            return
        self._refresher.start()

    def _refresh(self) -> None:
        client = redis_client()
        client.zadd(others_key(), {self.member: redis_now(client)})

    def end(self) -> None:
        self._refresher.stop()
        if not self.member:
            return
        seconds = time.monotonic() - self._started
        try:
            client = redis_client()
            mean_ms = _mean_folded(client.hget(other_means_key(), self.queue), seconds)
            pipe = client.pipeline()
            pipe.zrem(others_key(), self.member)
            pipe.hset(other_means_key(), self.queue, mean_ms)
            pipe.expire(other_means_key(), 86_400)
            pipe.execute()
        except RedisError:
            pass


# --- web side ------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Capacity:
    workers: int
    processes: int
    pending: int  # questions waiting or being answered, the one asking included
    service_seconds: float
    # seconds left of the other queues' tasks (embed batches, parses) that processes of these workers run now
    others_left: tuple[float, ...] = ()
    # the mean time of a task of the other queues, when tasks wait there: a worker gives them a turn after
    # QUEUE_TURN_AFTER questions in a row (athena.queue_order); 0 when none wait
    turn_seconds: float = 0.0

    @property
    def expected_wait_seconds(self) -> float:
        """Time before the asking question starts: none while a process is free of questions and of other
        tasks. Otherwise each process frees up in turn -- one running another queue's task when that task
        ends, one answering after half an answer on average -- and from then on starts a question per mean
        answer time (plus, while other tasks wait, a share of the turn they get); the question starts when
        the questions queued ahead of it have started (a fluid model: with no other tasks, half an answer
        plus one answer per `processes` questions queued)."""
        return self._wait(sorted(self.others_left)[: self.processes], turn_seconds=self.turn_seconds)

    @property
    def queue_wait_seconds(self) -> float:
        """The part of the wait that the questions ahead make at the recent mean answer time, every process
        answering: what admission bounds. The rest is what sharing a worker with the ingest costs -- the task a
        process runs when the question arrives (one embed batch at most, knowledge.tasks.EMBED_TASK_CHUNKS) and
        the turns the ingest queues get -- and refusing the question shortens neither: bounding the whole wait
        refused a third of the questions of ten askers during an ingest and answered fewer per second
        (tests/benchmarks/README.md, forty-third session)."""
        return self._wait([], turn_seconds=0.0)

    def _wait(self, others: list[float], *, turn_seconds: float) -> float:
        if self.processes <= 0:
            return math.inf
        answering = self.processes - len(others)
        ahead = max(0, self.pending - 1)
        if ahead < answering:
            return 0.0
        from athena.queue_order import QUEUE_TURN_AFTER

        per_question = self.service_seconds + turn_seconds / QUEUE_TURN_AFTER
        free_at = sorted([*others, *[self.service_seconds / 2] * answering])
        return _all_started(free_at, (ahead - answering) * per_question)


def _all_started(free_at: list[float], work: float) -> float:
    """The earliest time t >= free_at[0] at which processes free from the ascending times `free_at` have
    together put `work` seconds into the questions queued: sum over free_at[p] < t of (t - free_at[p]) = work."""
    total = 0.0
    for count, free in enumerate(free_at, start=1):
        total += free
        t = (work + total) / count
        if count == len(free_at) or t <= free_at[count]:
            return t
    return math.inf  # no process at all (callers check first)


def _member_parts(member: bytes | str) -> tuple[str, int, int]:
    """A realtime worker's heartbeat member read: (hostname, processes it offers for new questions, questions it
    is finishing while it stops). `hostname|concurrency` for a running worker, `hostname|0|k` for a stopping one
    (WorkerHeartbeat.drain); a member that names no number offers one process."""
    host, _, rest = _text(member).partition("|")
    try:
        processes, _, finishing = rest.partition("|")
        return host, max(0, int(processes)), max(0, int(finishing or 0))
    except ValueError:
        return host, 1, 0


def _capacity(
    *,
    members: list[bytes],
    pending: int,
    service_ms: Any,
    others_left: tuple[float, ...],
    turn_seconds: float,
) -> Capacity:
    """The capacity that `pending` questions (waiting or being answered) meet among the live realtime workers
    `members`. The questions that stopping workers are finishing are left out of `pending`: no other worker's
    process will take them."""
    parts = [_member_parts(member) for member in members]
    return Capacity(
        workers=len(members),
        processes=sum(processes for _, processes, _ in parts),
        pending=max(0, pending - sum(finishing for _, _, finishing in parts)),
        service_seconds=_mean_seconds(service_ms, 1.0),
        others_left=others_left,
        turn_seconds=turn_seconds,
    )


# Admission in one script, so that the per-user cap and the count cannot be raced by two questions of the same
# user arriving together (a MULTI/EXEC transaction cannot add conditionally). Entries older than the answer
# timeout belong to a web process killed while waiting and are dropped first.
# KEYS: workers, pending, pending:user:<id>, service_ms, others, others_ms, then the other queues (the broker's
# lists); ARGV: now, worker ttl, answer timeout, question id, cap
_ADMIT_SCRIPT = """
local now = tonumber(ARGV[1])
local timeout = tonumber(ARGV[3])
local cap = tonumber(ARGV[5])
local members = redis.call('ZRANGEBYSCORE', KEYS[1], now - tonumber(ARGV[2]), '+inf')
redis.call('ZREMRANGEBYSCORE', KEYS[2], 0, now - timeout)
redis.call('ZREMRANGEBYSCORE', KEYS[3], 0, now - timeout)
local mine = redis.call('ZCARD', KEYS[3])
local admitted = 0
if cap <= 0 or mine < cap then
  redis.call('ZADD', KEYS[2], now, ARGV[4])
  redis.call('ZADD', KEYS[3], now, ARGV[4])
  redis.call('EXPIRE', KEYS[3], math.ceil(timeout) + 60)
  mine = mine + 1
  admitted = 1
end
local waiting = {}
for i = 7, #KEYS do
  waiting[#waiting + 1] = redis.call('LLEN', KEYS[i])
end
return {admitted, members, redis.call('ZCARD', KEYS[2]), mine, redis.call('GET', KEYS[4]) or '',
        redis.call('ZRANGEBYSCORE', KEYS[5], now - tonumber(ARGV[2]), '+inf'), redis.call('HGETALL', KEYS[6]),
        waiting}
"""


def other_queues() -> list[str]:
    """The queues of the ingest work (the broker keeps each as a Redis list of that name)."""
    return list(settings.ATHENA_INGEST_QUEUES)


def _text(value: bytes | str) -> str:
    return value.decode() if isinstance(value, bytes) else value


def _others(
    *, now: float, workers: list[bytes], others: list[bytes], means: dict[Any, Any], waiting: dict[str, int]
) -> tuple[tuple[float, ...], float]:
    """What the other queues hold back: the seconds left of each task a process of a live realtime worker
    runs (`others` members; a task past its expected end is counted as ending within OVERRUN_SECONDS), and the
    mean task time of the queues that have tasks waiting (0.0 when none waits)."""
    # a stopping worker's processes take no question: what they run holds none back
    live = {host for host, processes, _ in map(_member_parts, workers) if processes}
    left: list[float] = []
    for member in others:
        try:
            hostname, _pid, _queue, end = _text(member).rsplit("|", 3)
            if hostname in live:
                left.append(max(OVERRUN_SECONDS, float(end) - now))
        except ValueError:
            continue
    mean_of = {_text(queue): _mean_seconds(mean, 0.0) for queue, mean in means.items()}
    turns = [mean_of.get(queue) or OTHER_TASK_DEFAULT_SECONDS for queue, length in waiting.items() if length]
    # the turns go round the queues that hold tasks (athena.queue_order)
    return tuple(left), statistics.fmean(turns) if turns else 0.0


@dataclass(frozen=True)
class Admission:
    """What a question met on arrival: `admitted` false means its asker already had `in_flight` questions
    waiting, the most allowed (it was not added); `capacity` counts it as waiting only when admitted."""

    admitted: bool
    in_flight: int
    capacity: Capacity


def admission_try(*, question_id: str, user_id: int | None, user_cap: int = 0) -> Admission:
    """Add question `question_id` of user `user_id` to the questions waiting, unless that user already has
    `user_cap` questions waiting (0: no cap), and read the capacity it meets, atomically.

    Returns the Admission. Raises RedisError when Redis is not reachable."""
    client = redis_client()
    queues = other_queues()
    keys = [
        workers_key(),
        pending_key(),
        user_pending_key(user_id or 0),
        service_key(),
        others_key(),
        other_means_key(),
        *queues,
    ]
    now = redis_now(client)
    args = [now, WORKER_TTL_SECONDS, settings.ATHENA_ANSWER_TIMEOUT_SECONDS, question_id, user_cap]
    admitted, members, pending, mine, service_ms, others, means, waiting = client.register_script(
        _ADMIT_SCRIPT
    )(keys=keys, args=args)
    others_left, turn_seconds = _others(
        now=now,
        workers=members,
        others=others,
        means=dict(zip(means[::2], means[1::2], strict=True)),  # the script's HGETALL is a flat list
        waiting=dict(zip(queues, waiting, strict=True)),
    )
    return Admission(
        admitted=bool(admitted),
        in_flight=int(mine),
        capacity=_capacity(
            members=members,
            pending=int(pending),
            service_ms=service_ms,
            others_left=others_left,
            turn_seconds=turn_seconds,
        ),
    )


def capacity_read(*, adding: str) -> Capacity:
    """Count question `adding` as waiting (no asker, no cap) and read the capacity it meets."""
    return admission_try(question_id=adding, user_id=None).capacity


@dataclass(frozen=True)
class QueuePosition:
    """An asker's own place among the questions waiting or being answered (never anyone else's questions).

    `in_flight`: the asker's questions waiting or being answered; `ahead`: questions (anyone's) published
    before the asker's oldest one and still not answered, None when the asker has none; `expected_wait_seconds`:
    the time before that question starts, None when the asker has none or no worker is alive."""

    in_flight: int
    ahead: int | None
    expected_wait_seconds: float | None


def queue_position(*, user_id: int) -> QueuePosition:
    """The place of `user_id`'s oldest unanswered question in the realtime queue and its expected wait.
    Raises RedisError when Redis is not reachable."""
    client = redis_client()
    now = redis_now(client)
    pipe = client.pipeline(transaction=True)
    pipe.zrangebyscore(user_pending_key(user_id), now - settings.ATHENA_ANSWER_TIMEOUT_SECONDS, "+inf")
    pipe.zrangebyscore(workers_key(), now - WORKER_TTL_SECONDS, "+inf")
    pipe.get(service_key())
    pipe.zrangebyscore(others_key(), now - WORKER_TTL_SECONDS, "+inf")
    pipe.hgetall(other_means_key())
    queues = other_queues()
    for queue in queues:
        pipe.llen(queue)
    mine, members, service_ms, others, means, *waiting = pipe.execute()
    ranks = [rank for rank in (client.zrank(pending_key(), member) for member in mine) if rank is not None]
    if not ranks:
        return QueuePosition(in_flight=0, ahead=None, expected_wait_seconds=None)
    ahead = min(ranks)
    others_left, turn_seconds = _others(
        now=now, workers=members, others=others, means=means, waiting=dict(zip(queues, waiting, strict=True))
    )
    # the questions ahead and the asker's own
    capacity = _capacity(
        members=members,
        pending=ahead + 1,
        service_ms=service_ms,
        others_left=others_left,
        turn_seconds=turn_seconds,
    )
    wait = capacity.expected_wait_seconds
    return QueuePosition(
        in_flight=len(ranks),
        ahead=ahead,
        expected_wait_seconds=round(wait, 1) if math.isfinite(wait) else None,
    )


def workers_alive() -> bool:
    try:
        client = redis_client()
        return bool(client.zcount(workers_key(), redis_now(client) - WORKER_TTL_SECONDS, "+inf"))
    except RedisError:
        return False


def pending_remove(question_id: str, user_id: int | None = None) -> None:
    """The question no longer waits (answered, refused, failed or given up): drop it from the queue counts."""
    try:
        pipe = redis_client().pipeline(transaction=True)
        pipe.zrem(pending_key(), question_id)
        pipe.zrem(user_pending_key(user_id or 0), question_id)
        pipe.execute()
    except RedisError:
        pass


def service_time_record(seconds: float) -> None:
    """Fold one answer's time in its worker process into the running mean used for the expected wait."""
    try:
        client = redis_client()
        client.set(service_key(), _mean_folded(client.get(service_key()), seconds), ex=3600)
    except RedisError:
        pass


class ReleaseMismatch(Exception):
    """A realtime task message that the worker's release cannot run as sent: an argument it does not know, from a
    web process of a later release (the deploy order in deploy/README.md puts workers first)."""


def release_mismatch(exc: BaseException) -> bool:
    """Whether the exception a question's task (or a passage's, passage_guard_task) raised says that the worker could not run the message at all,
    being of another release than the web process that sent it: ReleaseMismatch; the task's name unknown to it
    (a renamed task: Celery's NotRegistered); or the call itself refused by Python (an added or removed argument,
    from a worker of a release without the ReleaseMismatch check). Never an error of the answering pipeline."""
    from celery.exceptions import NotRegistered

    if isinstance(exc, ReleaseMismatch | NotRegistered):
        return True
    # the worker's call of the task function, before any of its code ran
    return isinstance(exc, TypeError) and str(exc).startswith(("answer_task() ", "passage_guard_task() "))


@dataclass(frozen=True)
class WaitOutcome:
    """How a wait ended: `result` is set when the answer came; otherwise `reason` says why not."""

    result: Any  # the task's return value: the answer, sealed by the worker (athena.sealing)
    reason: str = ""  # "" | "no_worker" | "timeout" | "release_mismatch" | "key_mismatch"
    republished: int = 0


def answer_wait(
    *,
    question_id: str,
    publish: Callable[[], Any],
    timeout: float,
    no_worker_grace: float,
) -> WaitOutcome:
    """Publish a question (`publish()` returns its AsyncResult) and wait for its answer.

    Parameters: `question_id` — the task id and idempotency key; `timeout` — the longest wait in seconds;
    `no_worker_grace` — how long to keep waiting while no realtime worker sends heartbeats.
    Returns the result, or why there is none. A worker that dies while computing (its lease expires
    without a result) gets the question republished under the same id, at most MAX_REPUBLISH times.
    """
    from celery.exceptions import TimeoutError as ResultTimeout

    started = time.monotonic()
    pending = publish()
    republished = 0
    starts_handled = 0
    no_worker_since: float | None = None
    client = redis_client()
    while True:
        try:
            value = pending.get(timeout=POLL_SECONDS, interval=0.05)
        except ResultTimeout:
            pass
        except Exception as exc:
            if release_mismatch(exc):
                logger.error("question %s: the realtime worker runs another release: %s", question_id, exc)
                return WaitOutcome(None, "release_mismatch", republished)
            # a failed question's stored failure is read once too (it names only what failed: TaskFailed)
            answer_collected(question_id, pending)
            if isinstance(exc, KeyMismatch):  # the worker could not open the question
                logger.error(
                    "question %s: the realtime worker holds another secret key: %s", question_id, exc
                )
                return WaitOutcome(None, "key_mismatch", republished)
            raise
        else:
            answer_collected(question_id, pending)
            # None: a copy that found the question abandoned (only after this caller gave up) -- treat as late
            return WaitOutcome(value, "" if value is not None else "timeout", republished)
        now = time.monotonic()
        if now - started >= timeout:
            return WaitOutcome(None, "timeout", republished)
        if workers_alive():
            no_worker_since = None
        else:
            no_worker_since = no_worker_since or now
            if now - no_worker_since >= no_worker_grace:
                return WaitOutcome(None, "no_worker", republished)
        try:
            starts = int(client.get(starts_key(question_id)) or 0)
            leased = bool(client.exists(lease_key(question_id)))
        except RedisError:
            continue
        if starts > starts_handled and not leased and not pending.ready() and republished < MAX_REPUBLISH:
            # the process computing it stopped without storing a result: run it again
            logger.warning("question %s lost its worker; republishing", question_id)
            starts_handled = starts
            republished += 1
            pending = publish()


def retry_after_seconds(capacity: Capacity | None = None) -> int:
    """A Retry-After hint: the expected wait when known, else the time a restarting worker needs."""
    if capacity is not None and math.isfinite(capacity.expected_wait_seconds):
        return max(1, math.ceil(capacity.expected_wait_seconds))
    return max(1, math.ceil(settings.ATHENA_NO_WORKER_GRACE_SECONDS))
