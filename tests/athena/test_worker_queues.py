"""The order in which a worker that consumes several queues takes their tasks, with a real Celery worker and the
real Redis.

At night an ingest of a few hundred documents and the sync fill the `ingest` and `embed` queues while
engineers ask questions; a worker of `make run` (or the systemd unit, or the model worker of the compose file)
consumes those queues and `realtime` with the same processes. Questions must be taken before the backlog, not
in turn with it: taken in turn, ten questions waited behind fifteen ingest batches, 85 s at p95 instead of 4."""

from __future__ import annotations

import os
import subprocess
import time

import pytest
from celery.result import AsyncResult

from athena.stack import Stack
from tests.conftest import ROOT, celery_worker_argv

pytestmark = [pytest.mark.django_db, pytest.mark.integration]


def _stack_worker_queues() -> list[str]:
    argv = Stack(components=("worker",)).service("worker").argv
    return argv[argv.index("-Q") + 1].split(",")


def _run_until_done(settings, queues: dict[str, str], every: list[str], name: str) -> list[str]:  # type: ignore[no-untyped-def]
    """Start a one-process worker consuming `queues` in their order, as the stack's worker does, wait until it
    has run every task of `every` (at most 120 s), stop it, and return the task ids in the order they ran."""
    from athena.celery import app

    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "athena.settings.test",
        "ATHENA_DB_NAME": settings.DATABASES["default"]["NAME"],
        "ATHENA_WORKER_WARM_UP": "false",
    }
    worker = subprocess.Popen(
        celery_worker_argv(",".join(queues.values()), name),
        cwd=ROOT,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        done: dict[str, float] = {}
        deadline = time.monotonic() + 120
        while len(done) < len(every) and time.monotonic() < deadline:
            for task_id in every:
                if task_id not in done:
                    result = AsyncResult(task_id, app=app)
                    if result.ready():
                        assert result.date_done is not None
                        done[task_id] = result.date_done.timestamp()
            time.sleep(0.2)
    finally:
        worker.terminate()
        try:
            worker.wait(timeout=20)
        except subprocess.TimeoutExpired:
            worker.kill()
            worker.wait()
    assert len(done) == len(every), "the worker did not run every task within 120 s"
    return sorted(every, key=done.__getitem__)


def test_the_stack_worker_consumes_every_queue_the_realtime_queue_first_and_housekeeping_next():
    queues = _stack_worker_queues()
    assert sorted(queues) == ["embed", "housekeeping", "ingest", "realtime"]
    assert queues[:2] == ["realtime", "housekeeping"], queues


def test_the_stack_answerer_consumes_only_the_realtime_queue_under_a_name_of_its_own(settings):
    """`make run` runs a second worker for questions alone (a question cannot interrupt the embed batch a process
    of the worker runs); its heartbeat names it apart from the worker's, so admission counts both its processes
    and the worker's (agents/realtime.py)."""
    stack = Stack(components=("worker", "answerer"))
    assert stack.components == ["worker", "answerer"]
    worker, answerer = stack.service("worker").argv, stack.service("answerer").argv
    assert answerer[answerer.index("-Q") + 1] == settings.ATHENA_REALTIME_QUEUE
    assert answerer[answerer.index("-n") + 1] != worker[worker.index("-n") + 1]
    assert answerer[answerer.index("--concurrency") + 1] == str(settings.ATHENA_ANSWERER_CONCURRENCY)
    assert "answerer" in Stack.ALL and Stack.NEEDS["answerer"] == Stack.NEEDS["worker"]


def test_a_worker_takes_the_questions_waiting_before_a_backlog_of_ingest_and_embed_tasks(settings):
    """Four ingest and four embed tasks and two questions wait when a one-process worker, consuming the queues
    as the stack's worker does (same order, names of this test's own so that no other worker takes them), starts:
    both questions run first."""
    from athena.celery import app

    suffix = f"order-{os.getpid()}"
    queues = {name: f"{name}-{suffix}" for name in _stack_worker_queues()}
    sent: dict[str, list[str]] = {name: [] for name in queues}
    # celery.accumulate returns its arguments: a task that every worker of this project knows and that touches
    # nothing; its results (asked for: no task stores one by default, CELERY_TASK_IGNORE_RESULT) record when each
    # ran
    for name, count in (("ingest", 4), ("embed", 4), ("realtime", 2)):
        for i in range(count):
            result = app.send_task(
                "celery.accumulate", args=[f"{name}-{i}"], queue=queues[name], ignore_result=False
            )
            sent[name].append(result.id)
    every = [task_id for ids in sent.values() for task_id in ids]
    order = _run_until_done(settings, queues, every, suffix)
    names = {task_id: name for name, ids in sent.items() for task_id in ids}
    assert [names[task_id] for task_id in order[:2]] == ["realtime", "realtime"], [names[t] for t in order]


# beat's short periodic tasks: the audit checkpoint (a verification of the chain, ~27k events/s), the hour's
# totals of aggregated audit events and the upload expiry (which deletes expired private files). The others do
# ingest work and stay on `ingest`: the sync walks every folder and queues a run of it, the repack rebuilds the
# posting blocks under the statistics lock, the stale re-index queues ingest batches only while the ingest
# queues are empty.
HOUSEKEEPING = {
    "audit checkpoint": "housekeeping",
    "audit aggregation windows": "housekeeping",
    "hourly private upload expiry": "housekeeping",
    "nightly source folder sync": "ingest",
    "nightly posting block repack": "ingest",
    "re-index of documents an older analyser indexed": "ingest",
}


def _beat_routes() -> dict[str, str]:
    """The queue the real router gives each task of beat's schedule (athena/celery.py), by the entry's name."""
    from athena.celery import app

    app.finalize()
    return {
        name: app.amqp.router.route({}, entry["task"])["queue"].name
        for name, entry in app.conf.beat_schedule.items()
    }


def test_beat_sends_its_short_tasks_to_the_housekeeping_queue_and_its_ingest_work_to_ingest(settings):
    assert _beat_routes() == HOUSEKEEPING
    assert "housekeeping" not in settings.ATHENA_INGEST_QUEUES  # admission's ingest work: embed and ingest


def test_beat_housekeeping_runs_before_a_backlog_of_ingest_and_embed_tasks(settings):
    """An ingest of a few hundred documents keeps `embed` and `ingest` full for an hour or more; an audit
    checkpoint (tamper evidence) or the upload expiry (a file that must be deleted) queued behind it waited for
    all of it. Four ingest and four embed tasks wait, then beat's short tasks, each sent to the queue the real
    router gives it, when a one-process worker consuming the queues as the stack's worker does starts: those
    run first."""
    from athena.celery import app

    suffix = f"housekeeping-{os.getpid()}"
    queues = {name: f"{name}-{suffix}" for name in _stack_worker_queues()}
    backlog = [
        app.send_task("celery.accumulate", args=[f"{name}-{i}"], queue=queues[name], ignore_result=False).id
        for name in ("ingest", "embed")
        for i in range(4)
    ]
    routes = _beat_routes()
    short = [name for name, queue in HOUSEKEEPING.items() if queue == "housekeeping"]
    assert all(routes[name] in queues for name in short), routes  # the stack's worker consumes their queue
    housekeeping = [
        app.send_task("celery.accumulate", args=[name], queue=queues[routes[name]], ignore_result=False).id
        for name in short
    ]
    order = _run_until_done(settings, queues, [*backlog, *housekeeping], suffix)
    places = sorted(order.index(task_id) for task_id in housekeeping)
    assert places == list(range(len(housekeeping))), f"beat's short tasks ran at {places} of {len(order)}"


def test_a_task_of_the_last_queue_is_not_starved_while_questions_keep_coming(settings):
    """Beat's housekeeping (audit checkpoints, the aggregated audit totals, the upload expiry) and its ingest work
    (the nightly sync) come after the questions in the stack's worker. While questions keep the realtime queue
    full (a busy hour: admission keeps a few waiting at all times) the worker still takes the others a turn: one
    task of the last queue queued before forty questions is taken among the first QUEUE_TURN_AFTER + 1, not after
    all."""
    from athena.celery import app
    from athena.queue_order import QUEUE_TURN_AFTER

    assert _stack_worker_queues()[-1] == "ingest"
    suffix = f"turns-{os.getpid()}"
    queues = {name: f"{name}-{suffix}" for name in _stack_worker_queues()}
    first = app.send_task(
        "celery.accumulate", args=["ingest"], queue=queues["ingest"], ignore_result=False
    ).id
    questions = [
        app.send_task(
            "celery.accumulate", args=[f"realtime-{i}"], queue=queues["realtime"], ignore_result=False
        ).id
        for i in range(40)
    ]
    every = [first, *questions]
    order = _run_until_done(settings, queues, every, suffix)
    place = order.index(first)
    assert place <= QUEUE_TURN_AFTER, f"the ingest task was taken after {place} questions"


def test_the_turn_goes_to_each_other_queue_in_its_own_turn():
    """The cycle alone, as kombu's Redis transport drives it: `consume` before each read, `rotate` with the queue
    that gave the message."""
    from athena.queue_order import QUEUE_TURN_AFTER, QuestionsFirstCycle

    cycle = QuestionsFirstCycle()
    cycle.update(["realtime", "embed", "ingest"])
    for _ in range(QUEUE_TURN_AFTER):
        assert cycle.consume(3) == ["realtime", "embed", "ingest"]
        cycle.rotate("realtime")
    assert cycle.consume(3) == ["embed", "ingest", "realtime"]
    cycle.rotate("embed")  # the turn was taken: questions first again, the next turn starts with ingest
    assert cycle.consume(3) == ["realtime", "embed", "ingest"]
    for _ in range(QUEUE_TURN_AFTER):
        cycle.rotate("realtime")
    assert cycle.consume(3) == ["ingest", "embed", "realtime"]
    cycle.update(["realtime"])  # a worker of one queue: nothing to give a turn to
    assert cycle.consume(1) == ["realtime"]
