"""A worker stopped on purpose (`manage.py stack down`, as an operator does before an upgrade) while it runs a
task: the task finishes within the stop (Celery's warm shutdown), the question is answered and audited once,
and the ingest batch is indexed and counted once.

The pool process running the task is paused (SIGSTOP) once it has begun, so that the stop certainly arrives
mid-task whatever the machine's speed, and resumed once the worker's main process has begun its shutdown."""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import sys
import time

import pytest

from tests.faults.conftest import DB_NAME, ROOT, SAMPLE, FaultStack
from tests.faults.test_beat import LogSince
from tests.faults.test_realtime_worker import Asking

pytestmark = [pytest.mark.faults, pytest.mark.integration, pytest.mark.slow]

WARM_SHUTDOWN = "Warm shutdown"


def _stack_down(stack: FaultStack, component: str) -> subprocess.Popen[str]:
    """`manage.py stack down --only <component>` of this stack, started, not waited for."""
    return subprocess.Popen(
        [sys.executable, "manage.py", "stack", "down", "--only", component],
        cwd=ROOT,
        env=stack.env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )


class PausedStop:
    """`stack down --only worker` sent while the pool process `pid` is paused; the process is resumed when the
    worker has logged the start of its shutdown (or after `resume_after` seconds if it never does)."""

    def __init__(self, stack: FaultStack, pid: int, resume_after: float = 20) -> None:
        self.log = LogSince(stack.log("worker"))
        self.pid = pid
        os.kill(pid, signal.SIGSTOP)
        self.started = time.monotonic()
        self.down = _stack_down(stack, "worker")
        deadline = time.monotonic() + resume_after
        while time.monotonic() < deadline and not self.log.lines(WARM_SHUTDOWN):
            time.sleep(0.1)
        time.sleep(0.5)  # the signal has reached every process it was sent to
        # the realtime heartbeat while the worker stops, its task still under way (WorkerHeartbeat.drain)
        # (the live ones: a worker an earlier test killed leaves its member until it is stale)
        self.stopping_members = sorted(
            member.decode()
            for member in stack.redis().zrangebyscore(stack.rt_key("workers"), time.time() - 4, "+inf")
        )
        self.resume()

    def resume(self) -> None:
        _resume(self.pid)

    def wait(self, timeout: float = 200) -> float:
        """Wait for `stack down` to end; returns how long the stop took."""
        output, _ = self.down.communicate(timeout=timeout)
        assert self.down.returncode == 0, output
        return time.monotonic() - self.started


def _restart(stack: FaultStack) -> None:
    stack.up("worker")
    stack.wait_for_worker()


def test_stack_down_of_a_worker_mid_answer_lets_it_answer(fault_stack):
    before = fault_stack.questions_started()
    asking = Asking(fault_stack)
    question_id, pid = fault_stack.lease_pid(besides=before)
    assert pid != fault_stack.pid("worker")
    try:
        stop = PausedStop(fault_stack, pid)
        took = stop.wait()
        reply = asking.result()
    finally:
        _resume(pid)
        _restart(fault_stack)
    print(f"\n[fault] stack down mid-answer: status={reply.status}, stop took {took:.1f}s")
    assert reply.status == 200, reply
    # while it finished the answer, the stopping worker offered no process to new questions, and was alive
    # (the one question it was finishing)
    assert len(stop.stopping_members) == 1 and stop.stopping_members[0].endswith("|0|1"), (
        stop.stopping_members
    )
    assert reply.body["citations"] and not reply.body["abstained"], reply.body
    assert fault_stack.audit_events(question_id) == [("question", "answered")]
    # computed once: by the process that had begun it, not again by a replacement
    assert int(fault_stack.redis().get(fault_stack.rt_key(f"starts:{question_id}")) or 0) == 1


def _resume(pid: int) -> None:
    try:
        os.kill(pid, signal.SIGCONT)
    except ProcessLookupError:
        pass


def _running_task(stack: FaultStack, task: str, log: LogSince, *, timeout: float = 120) -> tuple[str, int]:
    """Wait until a worker process runs a task named `task`; returns (task id, pid of the pool process), the
    process paused. The task's id is read from the worker's log as soon as its main process receives it, and its
    crash counter (which exists while it runs: see knowledge.tasks.delivery_start) is then polled alone: a scan of
    every key of the broker's Redis between polls missed a batch that ran in 60 ms on a fast machine."""
    import psutil

    client = stack.redis()
    prefix = f"athena:{DB_NAME}:rl:deliveries:"
    worker = psutil.Process(stack.pid("worker"))
    received = re.compile(rf"{task}\[([0-9a-f-]+)\] received")
    deadline = time.monotonic() + timeout
    tried: set[str] = set()
    while time.monotonic() < deadline:
        ids = [match.group(1) for line in log.lines(f"{task}[") if (match := received.search(line))]
        for task_id in (task_id for task_id in ids if task_id not in tried):
            key = prefix + task_id
            # until it starts, runs and ends (its log line); 20 s at most for the pool to take it
            until = min(deadline, time.monotonic() + 20)
            while time.monotonic() < until and not log.lines(f"{task}[{task_id}] succeeded"):
                if client.exists(key):
                    (pool,) = worker.children()
                    pool.suspend()
                    if client.exists(key):
                        return task_id, pool.pid
                    pool.resume()
            tried.add(task_id)
        time.sleep(0.005)
    raise AssertionError(f"no {task} seen running")


@pytest.mark.parametrize("task", ["ingest_files_task", "embed_index_task"])
def test_stack_down_of_a_worker_mid_ingest_finishes_the_batch_and_counts_it_once(fault_stack, tmp_path, task):
    folder = tmp_path / task
    folder.mkdir()
    # documents of their own for each task: a copy of another's chunks reuses its vectors instead of embedding
    pick = {"ingest_files_task": slice(-2, None), "embed_index_task": slice(-4, -2)}[task]
    names = sorted(p.name for p in SAMPLE.iterdir() if p.suffix == ".md")[pick]
    for name in names:
        shutil.copy(SAMPLE / name, folder / name)
    prefix = f"stopped-{task}/"
    log = LogSince(fault_stack.log("worker"))
    # not waited for: on a fast machine the batch was received, run and done (60-100 ms) before the command's
    # own process had exited, and no task was ever seen running
    ingest = fault_stack.manage_started("ingest", str(folder), "--prefix", prefix, "--batch-size", "2")
    try:
        task_id, pid = _running_task(fault_stack, task, log)
    finally:
        output, _ = ingest.communicate(timeout=300)
    assert ingest.returncode == 0, output
    try:
        stop = PausedStop(fault_stack, pid)
        took = stop.wait()
    finally:
        _resume(pid)
        _restart(fault_stack)
    deadline = time.monotonic() + 180
    while time.monotonic() < deadline:
        ((status, counts),) = fault_stack.sql(
            "SELECT status, counts FROM knowledge_ingestrun WHERE options->>'prefix' = %s", prefix
        )
        if status != "running":
            break
        time.sleep(0.5)
    print(f"\n[fault] stack down mid-{task}: stop took {took:.1f}s; run {status} {counts}")
    assert status == "finished", (status, counts)
    assert counts.get("new") == len(names) and not counts.get("failed"), counts
    indexed = fault_stack.sql(
        "SELECT count(*) FROM knowledge_document WHERE source LIKE %s AND status = 'indexed'", prefix + "%"
    )[0][0]
    assert indexed == len(names)
    # run once, within the stop: not cut short and delivered again to the restarted worker
    assert len(log.lines(f"{task}[{task_id}] received")) == 1


# longer than the 30 s that gunicorn gave a request to end after SIGTERM (then its master SIGKILLed the worker)
# before its graceful_timeout followed the answer timeout (athena/gunicorn_conf.py). A reload (SIGHUP) is held
# as long: no SIGKILL follows it, and the old worker process exits only when its request threads have ended
ANSWER_HELD_SECONDS = 36


@pytest.mark.parametrize("how", ["stop", "reload"])
def test_web_stopped_or_reloaded_while_a_question_waits_lets_it_end(fault_stack, how):
    before = fault_stack.questions_started()
    asking = Asking(fault_stack)
    question_id, pid = fault_stack.lease_pid(besides=before)
    os.kill(pid, signal.SIGSTOP)  # the answer is held up: the question waits in the web process
    down = None
    try:
        signalled = time.monotonic()
        if how == "stop":
            down = _stack_down(fault_stack, "web")
        else:
            os.kill(fault_stack.pid("web"), signal.SIGHUP)
        time.sleep(ANSWER_HELD_SECONDS)
    finally:
        _resume(pid)
    try:
        reply = asking.result()
        took = time.monotonic() - signalled
        if down is not None:
            output, _ = down.communicate(timeout=200)
            assert down.returncode == 0, output
    finally:
        if how == "stop":
            fault_stack.up("web")
    print(
        f"\n[fault] web {how} with a question waiting {ANSWER_HELD_SECONDS}s: {reply.status} after {took:.1f}s"
    )
    assert reply.status == 200, reply
    assert reply.body["citations"] and not reply.body["abstained"], reply.body
    assert fault_stack.audit_events(question_id) == [("question", "answered")]
