"""Which worker consumes which queue, as the workers themselves announce it on Redis.

Every Celery worker's main process beats every BEAT_SECONDS, one member per queue it consumes (`queue|hostname`
in the sorted set `athena:<database>:consumers`, scored with Redis's clock, redis_now). The health check reads
it to tell, per queue, whether anything takes its tasks: a ping answered by any one worker said "ok" while the
stack's answerer (questions only) was up and the worker that takes the ingest, embed and housekeeping queues was
down, and every ingest then waited with nothing to say why.
"""

from __future__ import annotations

import logging
import threading
from collections import defaultdict
from typing import Any

from django.conf import settings
from redis.exceptions import RedisError

from athena.throttling import redis_client, redis_now

logger = logging.getLogger(__name__)

BEAT_SECONDS = 2.0
# a worker that missed four beats in a row is gone (a loaded 2-core machine can delay one by a second or two)
STALE_SECONDS = 10.0


def consumers_key() -> str:
    # the database name keeps a test run's workers apart from a development server sharing the Redis
    return settings.ATHENA_CONSUMERS_KEY or f"athena:{settings.DATABASES['default']['NAME']}:consumers"


def expected_queues() -> tuple[str, ...]:
    """Every queue a task of this project is routed to: each needs a worker that consumes it."""
    queues = {settings.CELERY_TASK_DEFAULT_QUEUE, settings.ATHENA_REALTIME_QUEUE}
    queues.update(route["queue"] for route in settings.CELERY_TASK_ROUTES.values())
    return tuple(sorted(queues))


def worker_queues(app: Any) -> list[str]:
    """The queues a Celery worker of `app` consumes (its -Q, or every declared queue without one), sorted."""
    queues = app.amqp.queues
    return sorted(queues.consume_from or queues)


def live_consumers() -> dict[str, list[str]]:
    """Queue -> the workers (hostnames) that beat for it within STALE_SECONDS, sorted."""
    client = redis_client()
    now = redis_now(client)
    members = client.zrangebyscore(consumers_key(), now - STALE_SECONDS, "+inf")
    by_queue: dict[str, list[str]] = defaultdict(list)
    for member in members:
        queue, _, hostname = (member.decode() if isinstance(member, bytes) else member).partition("|")
        by_queue[queue].append(hostname)
    return {queue: sorted(hosts) for queue, hosts in by_queue.items()}


class RedisBeat:
    """A daemon thread in a worker's main process that writes `beat(client, now)` to Redis every `every` seconds
    (now on Redis's clock) until stopped, and `retire(client)` once stopped. A beat that fails (Redis restarting)
    is logged and the next one reconnects."""

    every = BEAT_SECONDS
    thread_name = "redis-beat"

    def __init__(self) -> None:
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name=self.thread_name, daemon=True)

    def beat(self, client: Any, now: float) -> None:
        raise NotImplementedError

    def retire(self, client: Any) -> None:
        raise NotImplementedError

    def start(self) -> None:
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                client = redis_client()
                self.beat(client, redis_now(client))
            except Exception as exc:  # any error: a thread that ended would leave a live worker unannounced
                logger.warning("%s failed: %s", self.thread_name, exc)
            self._stop.wait(self.every)

    def stop(self) -> None:
        """Stop beating and take the announcement back, after a beat under way (one that wrote after the
        retirement would announce the worker for another STALE_SECONDS)."""
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(timeout=self.every + 1)
        try:
            self.retire(redis_client())
        except RedisError:
            pass


class ConsumerBeat(RedisBeat):
    """Announces the queues a worker consumes, one member per queue."""

    thread_name = "consumer-beat"

    def __init__(self, *, hostname: str, queues: list[str]) -> None:
        super().__init__()
        self.members = [f"{queue}|{hostname}" for queue in queues]

    def beat(self, client: Any, now: float) -> None:
        with client.pipeline() as pipe:
            pipe.zadd(consumers_key(), dict.fromkeys(self.members, now))
            # workers that died without saying goodbye leave the set here, not only the check
            pipe.zremrangebyscore(consumers_key(), 0, now - 10 * STALE_SECONDS)
            pipe.execute()

    def retire(self, client: Any) -> None:
        client.zrem(consumers_key(), *self.members)
