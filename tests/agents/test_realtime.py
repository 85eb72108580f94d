"""Admission and liveness of the realtime queue, through the ask API, with the real Redis.

The worker state these tests need (a heartbeat, questions waiting, the mean answer time) is written to Redis
in the form the workers and web processes write it; the fault suite (tests/faults/) covers real workers."""

from __future__ import annotations

import time

import pytest
from django.test import override_settings

from agents import realtime
from agents.models import Conversation
from agents.selectors import conversation_list
from audit.models import AuditEvent
from tests.api import client_for, make_user

pytestmark = [pytest.mark.django_db, pytest.mark.integration]


@pytest.fixture()
def clean_realtime_keys(redis_client):  # type: ignore[no-untyped-def]
    """The realtime keys in a namespace of this test's own, and the other queues under names no worker consumes:
    the session's real worker (tests/conftest.py), once started, beats and records its tasks meanwhile, and took
    a made-up message left in its own queue for a broken one and stopped."""
    import uuid

    own = uuid.uuid4().hex[:12]
    # (not CELERY_TASK_ROUTES: Celery reads it once, and the session's later ingest tasks went to these queues)
    with override_settings(
        ATHENA_REALTIME_KEYS=f"athena:test-{own}:rt", ATHENA_INGEST_QUEUES=(f"embed-{own}", f"ingest-{own}")
    ):
        yield redis_client
        keys = list(redis_client.scan_iter(match=f"athena:test-{own}:rt:*", count=500))
        redis_client.delete(*keys, *realtime.other_queues())


def _busy(redis_client, *, processes: int, waiting: int, service_ms: float) -> None:  # type: ignore[no-untyped-def]
    redis_client.zadd(realtime.workers_key(), {f"celery@busy|{processes}": time.time()})
    if waiting:
        redis_client.zadd(realtime.pending_key(), {f"q{i}": time.time() for i in range(waiting)})
    redis_client.set(realtime.service_key(), str(service_ms))


def test_expected_wait_counts_the_questions_ahead_served_in_parallel():
    def wait(pending: int) -> float:
        return realtime.Capacity(
            workers=1, processes=2, pending=pending, service_seconds=2.0
        ).expected_wait_seconds

    # `pending` counts the asking question itself
    assert wait(1) == wait(2) == 0.0  # a process is free
    assert wait(3) == 1.0  # both busy: half an answer, on average, until one frees up
    assert wait(5) == 3.0  # and one more round for the two queued ahead
    no_worker = realtime.Capacity(workers=0, processes=0, pending=0, service_seconds=1.0)
    assert no_worker.expected_wait_seconds == float("inf")


def test_expected_wait_counts_the_other_queues_tasks_running_and_the_turn_they_get():
    def wait(pending: int, others: tuple[float, ...] = (), turn: float = 0.0) -> float:
        return realtime.Capacity(
            workers=1,
            processes=2,
            pending=pending,
            service_seconds=1.0,
            others_left=others,
            turn_seconds=turn,
        ).expected_wait_seconds

    # both processes embedding: the first question starts when the sooner batch ends, the next one an answer
    # later (before that process's batch ends, 5 s)
    assert wait(1, (3.0, 5.0)) == 3.0
    assert wait(2, (3.0, 5.0)) == 4.0
    # one process embedding: the other takes a question at once, the second after half an answer
    assert wait(1, (3.0,)) == 0.0
    assert wait(2, (3.0,)) == 0.5
    assert wait(4, (3.0,)) == 2.5
    # a stale list longer than the processes counts the soonest ends only
    assert wait(1, (9.0, 3.0, 5.0)) == 3.0
    # tasks waiting in the other queues: one turn in every QUEUE_TURN_AFTER + 1 (8 s here: 1 s per question)
    assert wait(5) == 1.5
    assert wait(5, turn=8.0) == 2.5
    assert wait(2, turn=8.0) == 0.0
    # admission's part: the questions ahead at the mean answer time, as if every process answered
    crowded = realtime.Capacity(
        workers=1, processes=2, pending=5, service_seconds=1.0, others_left=(3.0, 5.0), turn_seconds=8.0
    )
    assert crowded.queue_wait_seconds == 1.5 and crowded.expected_wait_seconds == 8.0


def test_a_question_that_would_wait_too_long_is_refused_at_once_with_retry_after(clean_realtime_keys):
    _busy(
        clean_realtime_keys, processes=2, waiting=12, service_ms=1500
    )  # 12 ahead: (.5 + 5) x 1.5 s = 8.25 s
    user = make_user("crowded", "employees")
    started = time.monotonic()
    with override_settings(ATHENA_REALTIME_VIA_CELERY=True, ATHENA_MAX_QUEUE_WAIT_SECONDS=5):
        response = client_for(user).post("/api/v1/ask", {"question": "How do I restart BGP?"}, format="json")
    assert time.monotonic() - started < 2
    assert response.status_code == 503, response.content
    assert response["Retry-After"] == "9"  # rounded up
    assert response.json()["error"]["code"] == "overloaded"
    assert response.json()["error"]["retry_after"] == 9
    assert response.json()["error"]["details"] == {"ahead": 12, "expected_wait_seconds": 8.2}
    event = AuditEvent.objects.filter(kind="question", actor="crowded").latest("id")
    assert event.verdict == "unavailable" and event.payload["error"] == "overloaded"
    assert "restart BGP" not in str(event.payload)  # not screened for personal data: not logged
    assert clean_realtime_keys.zcard(realtime.pending_key()) == 12  # the refused question is not waiting
    assert clean_realtime_keys.zcard(realtime.user_pending_key(user.pk)) == 0
    assert not Conversation.objects.filter(user=user).exists()  # nor did it leave an empty conversation


def _in_batches(redis_client, *, ends_in: tuple[float, ...]) -> None:  # type: ignore[no-untyped-def]
    """The processes of the worker `_busy` announces run embed batches ending in `ends_in` seconds; a batch on a
    worker that takes no questions (another host's ingest-only worker) and one of a process that stopped
    refreshing (killed) are there too, and must not count."""
    now = time.time()
    members = {f"celery@busy|{100 + i}|embed|{now + left}": now for i, left in enumerate(ends_in)}
    members[f"ingest@elsewhere|200|ingest|{now + 2}"] = now
    members[f"celery@busy|201|embed|{now + 1}"] = now - 60
    redis_client.zadd(realtime.others_key(), members)


def test_a_question_meeting_every_process_in_a_batch_waits_for_it_and_is_told_how_long(clean_realtime_keys):
    """No question waits, but both processes of the one realtime worker run embed batches that end in 9 and
    12 s. Refusing the question would not end the batches sooner, so it is admitted; its place in the queue
    says it starts in about 9 s (before: 0, and the page promised an answer that did not come)."""
    client = clean_realtime_keys
    asker = make_user("behind-batches", "employees")
    _busy(client, processes=2, waiting=0, service_ms=1000)
    _in_batches(client, ends_in=(9.0, 12.0))
    client.delete(realtime.user_pending_key(asker.pk))
    admission = realtime.admission_try(question_id="mine", user_id=asker.pk, user_cap=2)
    assert admission.admitted and admission.capacity.queue_wait_seconds == 0.0
    assert 8.0 <= admission.capacity.expected_wait_seconds <= 9.0
    with override_settings(ATHENA_MAX_QUEUE_WAIT_SECONDS=5):
        body = client_for(asker).get("/api/v1/ask/queue").json()
    assert body["ahead"] == 0 and 8.0 <= body["expected_wait_seconds"] <= 9.0, body
    client.delete(realtime.user_pending_key(asker.pk))


def test_a_crowded_queue_behind_batches_is_refused_with_the_whole_wait(clean_realtime_keys):
    """Twelve questions ahead at 1.5 s on two processes make 8.25 s, past the 5 s bound: refused at once. The
    reply's wait and Retry-After count the batches the two processes run first (9 and 12 s): 19.5 s."""
    client = clean_realtime_keys
    user = make_user("crowded-behind-batches", "employees")
    _busy(client, processes=2, waiting=12, service_ms=1500)
    _in_batches(client, ends_in=(9.0, 12.0))
    with override_settings(ATHENA_REALTIME_VIA_CELERY=True, ATHENA_MAX_QUEUE_WAIT_SECONDS=5):
        response = client_for(user).post("/api/v1/ask", {"question": "How do I restart BGP?"}, format="json")
    assert response.status_code == 503, response.content
    body = response.json()["error"]
    assert body["code"] == "overloaded" and body["details"]["ahead"] == 12
    # 19.5 s when the batches' ends were written, less the time the request took
    assert 18.0 <= body["details"]["expected_wait_seconds"] <= 19.5
    assert response["Retry-After"] in {"19", "20"}


def test_tasks_waiting_in_the_other_queues_lengthen_the_wait_by_their_turn(clean_realtime_keys):
    """Eleven questions ahead of the asker, two of them being answered, on two processes at 1 s each: 5 s. With
    embed tasks of 8 s waiting, a worker gives them one turn in nine: 1 s more per answer, 9.5 s in all, which
    the asker is told; admission still bounds the 5 s that the questions ahead make."""
    client = clean_realtime_keys
    _busy(client, processes=2, waiting=11, service_ms=1000)
    assert realtime.capacity_read(adding="probe").expected_wait_seconds == 5.0
    client.zrem(realtime.pending_key(), "probe")
    (embed,) = [queue for queue in realtime.other_queues() if queue.startswith("embed")]
    client.hset(realtime.other_means_key(), embed, "8000")
    client.rpush(embed, "a task waiting")  # a queue of this test's own: no worker takes it
    capacity = realtime.capacity_read(adding="probe")
    assert capacity.turn_seconds == 8.0
    assert capacity.expected_wait_seconds == 9.5
    assert capacity.queue_wait_seconds == 5.0


def test_a_stopping_worker_counts_no_process_for_new_questions_and_stays_alive_for_its_own(
    clean_realtime_keys,
):
    """A worker that began its warm shutdown takes no new question, yet admission kept counting its processes
    (and the tasks they ran) until it exited: with another worker up, a question met a wait computed for
    processes that would never take it. Its askers' questions under way must not be cut off meanwhile (the
    worker still beats, alive with no process to offer), and must not count as waiting for the other worker's
    processes either (it says how many it is finishing)."""
    client = clean_realtime_keys
    _busy(client, processes=2, waiting=8, service_ms=1000)  # eight questions waiting or being answered
    now = time.time()
    client.zadd(realtime.others_key(), {f"celery@stopping|300|embed|{now + 30}": now})
    finishing = [2]
    heartbeat = realtime.WorkerHeartbeat(
        hostname="celery@stopping", concurrency=2, finishing=lambda: finishing[0]
    )

    def members() -> set[str]:
        return {member.decode() for member in client.zrange(realtime.workers_key(), 0, -1)}

    heartbeat.start()
    try:
        deadline = time.monotonic() + 10
        while "celery@stopping|2" not in members() and time.monotonic() < deadline:
            time.sleep(0.05)
        client.zadd(realtime.workers_key(), {"celery@busy|2": time.time()})
        running = realtime.capacity_read(adding="probe")
        # four processes, one of them in a 30 s embed batch: 8 ahead on the other three, 2.17 s
        assert running.processes == 4 and running.others_left, running
        assert round(running.expected_wait_seconds, 2) == 2.17
        client.zrem(realtime.pending_key(), "probe")

        heartbeat.drain()  # what the worker_shutting_down signal calls
        assert members() == {"celery@busy|2", "celery@stopping|0|2"}  # at once, not at the next beat
        finishing[0] = 1  # one of its two questions answered: the next beats say so
        time.sleep(2 * realtime.HEARTBEAT_SECONDS)
        client.zadd(realtime.workers_key(), {"celery@busy|2": time.time()})
        assert members() == {"celery@busy|2", "celery@stopping|0|1"}
        stopping = realtime.capacity_read(adding="probe")
        # the busy worker's two processes alone, the stopping one's batch and the question it finishes not
        # in their way: 7 ahead on two processes, 3 s
        assert stopping.processes == 2 and stopping.others_left == () and stopping.pending == 8, stopping
        assert stopping.expected_wait_seconds == 3.0
        assert realtime.workers_alive()  # the question it is finishing is still waited for
        client.zrem(realtime.pending_key(), "probe")
    finally:
        heartbeat.stop()
    assert members() == {"celery@busy|2"}


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_a_real_workers_ingest_tasks_are_counted_while_they_run_and_timed(  # type: ignore[no-untyped-def]
    tmp_path, celery_worker_process, redis_client
):
    """The worker's own processes record each parse and embed task they run under the name of the worker that
    beats for the realtime queue, take it back when it ends, and keep each queue's mean task time."""
    import threading

    from django.core.management import call_command

    from tests.knowledge.conftest import write_docs

    corpus = write_docs(
        tmp_path / "kb",
        {
            f"relay-{i}.md": f"# Relay {i}\n\nRestart relay {i} with `relayctl restart {i}` after a drain.\n"
            for i in range(3)
        },
    )
    client = redis_client
    client.delete(realtime.others_key(), realtime.other_means_key())
    seen: set[str] = set()
    heartbeats: set[str] = set()
    done = threading.Event()

    def watch() -> None:
        while not done.is_set():
            seen.update(member.decode() for member in client.zrange(realtime.others_key(), 0, -1))
            heartbeats.update(member.decode() for member in client.zrange(realtime.workers_key(), 0, -1))
            time.sleep(0.01)

    watcher = threading.Thread(target=watch, daemon=True)
    watcher.start()
    try:
        call_command("ingest", str(corpus), "--wait")
    finally:
        done.set()
        watcher.join(5)
    hostnames = {member.rsplit("|", 1)[0] for member in heartbeats}
    assert hostnames, "the worker never beat"
    running = [member.rsplit("|", 3) for member in seen]
    assert {queue for _, _, queue, _ in running} >= {"ingest", "embed"}, seen
    assert {hostname for hostname, _, _, _ in running} <= hostnames, (seen, heartbeats)
    assert client.zcard(realtime.others_key()) == 0  # each taken back when its task ended
    means = {queue.decode(): float(ms) for queue, ms in client.hgetall(realtime.other_means_key()).items()}
    assert set(means) >= {"ingest", "embed"} and all(ms > 0 for ms in means.values()), means


def test_no_live_worker_gives_503_with_retry_after_after_the_grace_not_the_answer_timeout(
    clean_realtime_keys,
):
    # a worker whose last heartbeat is older than WORKER_TTL_SECONDS is dead
    clean_realtime_keys.zadd(realtime.workers_key(), {"celery@dead|2": time.time() - 60})
    user = make_user("nobody-home", "employees")
    started = time.monotonic()
    with override_settings(
        ATHENA_REALTIME_VIA_CELERY=True,
        ATHENA_REALTIME_QUEUE="realtime-nobody-listens",
        ATHENA_ANSWER_TIMEOUT_SECONDS=60,
        ATHENA_NO_WORKER_GRACE_SECONDS=2,
    ):
        response = client_for(user).post(
            "/api/v1/ask", {"question": "Where is the DNS runbook?"}, format="json"
        )
    elapsed = time.monotonic() - started
    assert response.status_code == 503, response.content
    assert 2 <= elapsed < 5, elapsed
    assert int(response["Retry-After"]) >= 1
    assert "realtime-nobody-listens" in response.json()["error"]["message"]
    event = AuditEvent.objects.filter(kind="question", actor="nobody-home").latest("id")
    assert event.payload["error"] == "no_worker" and event.payload["question_id"]
    assert clean_realtime_keys.zcard(realtime.pending_key()) == 0  # it no longer counts as waiting
    assert clean_realtime_keys.zcard(realtime.user_pending_key(user.pk)) == 0  # nor as one of the user's
    assert clean_realtime_keys.exists(realtime.abandoned_key(event.payload["question_id"]))
    # the conversation the question opened holds nothing: not an empty entry in the asker's list
    assert not conversation_list(user=user)
    assert Conversation.objects.get(pk=event.payload["conversation"]).deleted


# A worker on a host whose clock is not the web host's (time.time() off by `skew` s); its heartbeat is real.
_SKEWED_WORKER = """
import sys, time
skew = float(sys.argv[1])
_real_time = time.time
time.time = lambda: _real_time() + skew
import django
django.setup()
from agents.realtime import WorkerHeartbeat
WorkerHeartbeat(hostname="celery@skewed", concurrency=1).start()
print("beating", flush=True)
sys.stdin.read()  # until the test closes it, or kills this process (a worker gone without a goodbye)
"""


@pytest.mark.parametrize("skew", [-30.0, 30.0])
def test_a_worker_whose_clock_is_off_is_alive_while_it_beats_and_dead_soon_after_it_stops(  # type: ignore[no-untyped-def]
    clean_realtime_keys, settings, skew
):
    """Web and workers run on different hosts (DESIGN 9), whose clocks may differ by more than the 4 s a
    heartbeat is trusted for (a VM resumed, NTP not yet stepped). A worker behind the web host's clock looked
    dead while beating (every question: 503 no_worker); one ahead looked alive for `skew` seconds after it
    died (questions waited for a worker that was gone). Liveness is measured on one clock, Redis's."""
    import os
    import subprocess
    import sys

    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "athena.settings.test",
        "ATHENA_DB_NAME": settings.DATABASES["default"]["NAME"],
        "ATHENA_REALTIME_KEYS": settings.ATHENA_REALTIME_KEYS,  # this test's own (clean_realtime_keys)
    }
    worker = subprocess.Popen(
        [sys.executable, "-c", _SKEWED_WORKER, str(skew)],
        env=env,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
    )
    try:
        assert worker.stdout is not None and worker.stdout.readline() == b"beating\n"
        deadline = time.monotonic() + 3 * realtime.HEARTBEAT_SECONDS
        while not clean_realtime_keys.zcard(realtime.workers_key()) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert realtime.workers_alive(), "a beating worker was taken for dead"
        capacity = realtime.capacity_read(adding="skew-probe")
        assert (capacity.workers, capacity.processes) == (1, 1)
    finally:
        worker.kill()
        worker.wait()
    died = time.monotonic()
    while realtime.workers_alive() and time.monotonic() - died < 3 * realtime.WORKER_TTL_SECONDS:
        time.sleep(0.1)
    assert not realtime.workers_alive(), "a dead worker was still taken for alive"
    assert time.monotonic() - died <= realtime.WORKER_TTL_SECONDS + 2 * realtime.HEARTBEAT_SECONDS


# --- per-user fairness and the asker's place in the queue -----------------------------------------------------


def _own_waiting(redis_client, user, *ids: str, at: float | None = None) -> None:  # type: ignore[no-untyped-def]
    """Questions of `user` waiting, as the web process's admission records them (both sets)."""
    now = at or time.time()
    redis_client.zadd(realtime.pending_key(), {qid: now for qid in ids})
    redis_client.zadd(realtime.user_pending_key(user.pk), {qid: now for qid in ids})


def test_a_user_at_the_in_flight_cap_is_refused_at_once_while_another_user_is_admitted(clean_realtime_keys):
    redis = clean_realtime_keys
    _busy(redis, processes=1, waiting=0, service_ms=2000)
    heavy, other = make_user("heavy", "employees"), make_user("light", "employees")
    redis.delete(realtime.user_pending_key(heavy.pk), realtime.user_pending_key(other.pk))
    _own_waiting(redis, heavy, "heavy-1", "heavy-2")
    started = time.monotonic()
    with override_settings(
        ATHENA_REALTIME_VIA_CELERY=True, ATHENA_USER_MAX_IN_FLIGHT=2, ATHENA_MAX_QUEUE_WAIT_SECONDS=30
    ):
        refused = client_for(heavy).post("/api/v1/ask", {"question": "How do I restart BGP?"}, format="json")
        assert time.monotonic() - started < 2
        position = client_for(other).get("/api/v1/ask/queue").json()
        admitted = realtime.admission_try(question_id="light-1", user_id=other.pk, user_cap=2)
    assert refused.status_code == 429, refused.content
    error = refused.json()["error"]
    assert error["code"] == "too_many_in_flight" and "2 questions waiting" in error["message"]
    # the oldest of the two is first in the queue (being answered): one answer's time, 2 s
    assert refused["Retry-After"] == "2" and error["retry_after"] == 2
    assert error["details"] == {
        "retry_after": 2,
        "in_flight": 2,
        "limit": 2,
        "ahead": 0,
        "expected_wait_seconds": 0.0,
    }
    event = AuditEvent.objects.filter(kind="question", actor="heavy").latest("id")
    assert event.verdict == "throttled" and event.payload["error"] == "too_many_in_flight"
    assert "BGP" not in str(event.payload)
    assert not Conversation.objects.filter(user=heavy).exists()
    assert redis.zcard(realtime.user_pending_key(heavy.pk)) == 2  # the refused one was never added
    assert redis.zcard(realtime.pending_key()) == 3  # heavy's two and the other user's admitted one
    assert position == {"in_flight": 0, "limit": 2, "ahead": None, "expected_wait_seconds": None}
    assert admitted.admitted and admitted.in_flight == 1
    redis.delete(realtime.user_pending_key(heavy.pk), realtime.user_pending_key(other.pk))


def test_queue_position_reveals_only_the_callers_own_place(clean_realtime_keys):
    redis = clean_realtime_keys
    _busy(redis, processes=1, waiting=3, service_ms=2000)  # three questions of other users, older
    asker, idle = make_user("asker", "employees"), make_user("idle", "employees")
    redis.delete(realtime.user_pending_key(asker.pk), realtime.user_pending_key(idle.pk))
    _own_waiting(redis, asker, "mine-1", at=time.time() + 1)
    _own_waiting(redis, asker, "mine-2", at=time.time() + 2)
    assert client_for(None).get("/api/v1/ask/queue").status_code == 401
    body = client_for(asker).get("/api/v1/ask/queue").json()
    # three ahead of the asker's oldest, one process: half an answer, then two more (2.5 x 2 s)
    assert body == {"in_flight": 2, "limit": 2, "ahead": 3, "expected_wait_seconds": 5.0}
    assert client_for(idle).get("/api/v1/ask/queue").json()["ahead"] is None
    redis.delete(realtime.workers_key())  # no worker alive: the place is known, the wait is not
    assert client_for(asker).get("/api/v1/ask/queue").json()["expected_wait_seconds"] is None
    redis.delete(realtime.user_pending_key(asker.pk))


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_one_heavy_user_does_not_starve_another_through_a_real_worker(  # type: ignore[no-untyped-def]
    celery_worker_process, redis_client
):
    """User A has two questions really in flight on the worker; A's third is refused at once with
    Retry-After, and user B's question is admitted and answered meanwhile. Nothing is left waiting."""
    import threading

    from django.db import connection

    heavy, light = make_user("heavy-real", "employees"), make_user("light-real", "employees")
    for user in (heavy, light):
        redis_client.delete(realtime.user_pending_key(user.pk))
    deadline = time.monotonic() + 60  # the worker heartbeats once its queues are set up
    while not realtime.workers_alive() and time.monotonic() < deadline:
        time.sleep(0.2)
    replies: list = []

    def ask_as_heavy(question: str) -> None:
        try:
            replies.append(client_for(heavy).post("/api/v1/ask", {"question": question}, format="json"))
        finally:
            connection.close()

    questions = ["How do I check NTP drift?", "What hold timer do we use for BGP?"]
    with override_settings(
        ATHENA_REALTIME_VIA_CELERY=True, ATHENA_USER_MAX_IN_FLIGHT=2, ATHENA_MAX_QUEUE_WAIT_SECONDS=0
    ):
        threads = [threading.Thread(target=ask_as_heavy, args=(q,)) for q in questions]
        for thread in threads:
            thread.start()
        deadline = time.monotonic() + 20
        while redis_client.zcard(realtime.user_pending_key(heavy.pk)) < 2 and time.monotonic() < deadline:
            time.sleep(0.01)
        started = time.monotonic()
        third = client_for(heavy).post(
            "/api/v1/ask", {"question": "Where is the DNS runbook?"}, format="json"
        )
        refused_in = time.monotonic() - started
        still_waiting = redis_client.zcard(realtime.user_pending_key(heavy.pk))
        other = client_for(light).post(
            "/api/v1/ask", {"question": "How do I rotate TLS certificates?"}, format="json"
        )
        for thread in threads:
            thread.join(120)
    assert still_waiting == 2, "A's questions were answered before the third was asked: the race was lost"
    assert third.status_code == 429, third.content
    assert refused_in < 1.0 and int(third["Retry-After"]) >= 1
    assert third.json()["error"]["code"] == "too_many_in_flight"
    assert other.status_code == 200, other.content
    assert [r.status_code for r in replies] == [200, 200], [r.content for r in replies]
    assert AuditEvent.objects.filter(kind="question", actor="light-real").get().verdict in (
        "answered",
        "abstained",
    )
    for user in (heavy, light):
        assert redis_client.zcard(realtime.user_pending_key(user.pk)) == 0
    assert not {m.decode() for m in redis_client.zrange(realtime.pending_key(), 0, -1)} & {
        e.payload["question_id"] for e in AuditEvent.objects.filter(kind="question")
    }
