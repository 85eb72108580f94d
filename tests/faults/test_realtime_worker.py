"""The realtime worker dies while answering: the asker still gets the answer (or a prompt 503), audited once.

Each test asks through the HTTP API in a thread, waits until a worker process holds the question's lease
(it is computing the answer), kills that process for real, and checks the reply and how long it took."""

from __future__ import annotations

import os
import signal
import threading
import time

import pytest

from tests.faults.conftest import FaultStack, Reply

pytestmark = [pytest.mark.faults, pytest.mark.integration, pytest.mark.slow]

QUESTION = "What BGP keepalive and hold timers do we configure on IOS-XE routers?"


class Asking:
    """An ask in flight on its own thread."""

    def __init__(self, stack: FaultStack, question: str = QUESTION) -> None:
        self.reply: Reply | None = None
        self._thread = threading.Thread(target=self._run, args=(stack, question), daemon=True)
        self._thread.start()

    def _run(self, stack: FaultStack, question: str) -> None:
        self.reply = stack.ask(question)

    def result(self, timeout: float = 200) -> Reply:
        self._thread.join(timeout)
        assert self.reply is not None, "the ask did not return"
        return self.reply


def _report(name: str, **figures: object) -> None:
    print(f"\n[fault] {name}: " + ", ".join(f"{k}={v}" for k, v in figures.items()))


def test_pool_process_killed_mid_answer_the_question_is_redelivered_and_answered_once(fault_stack):
    before = fault_stack.questions_started()
    asking = Asking(fault_stack)
    question_id, pid = fault_stack.lease_pid(besides=before)
    assert pid != fault_stack.pid("worker")  # the pool process, not the worker's main process
    killed_at = time.monotonic()
    os.kill(pid, signal.SIGKILL)
    reply = asking.result()
    after_kill = time.monotonic() - killed_at
    _report(
        "pool process SIGKILL",
        status=reply.status,
        total_s=round(reply.seconds, 1),
        after_kill_s=round(after_kill, 1),
    )
    assert reply.status == 200, reply
    assert reply.body["citations"] and not reply.body["abstained"], reply.body
    assert after_kill < 30  # a fresh pool process loads the models, then answers
    assert fault_stack.audit_events(question_id) == [("question", "answered")]
    starts = int(fault_stack.redis().get(fault_stack.rt_key(f"starts:{question_id}")) or 0)
    assert starts >= 2  # computed by the killed process, then again by its replacement


def test_whole_worker_killed_mid_answer_and_restarted_the_asker_gets_the_answer(fault_stack):
    before = fault_stack.questions_started()
    asking = Asking(fault_stack)
    question_id, _ = fault_stack.lease_pid(besides=before)
    killed_at = time.monotonic()
    fault_stack.kill_group("worker")  # main process and pool: nothing gives the message back
    fault_stack.up("worker")  # what `stack run` does for a dead component
    reply = asking.result()
    after_kill = time.monotonic() - killed_at
    _report(
        "worker SIGKILL + restart",
        status=reply.status,
        total_s=round(reply.seconds, 1),
        after_kill_s=round(after_kill, 1),
    )
    assert reply.status == 200, reply
    assert reply.body["citations"] and not reply.body["abstained"], reply.body
    assert fault_stack.audit_events(question_id) == [("question", "answered")]


def test_worker_killed_and_not_restarted_the_asker_gets_503_with_retry_after_within_15_s(fault_stack):
    before = fault_stack.questions_started()
    asking = Asking(fault_stack)
    question_id, _ = fault_stack.lease_pid(besides=before)
    killed_at = time.monotonic()
    fault_stack.kill_group("worker")
    reply = asking.result()
    after_kill = time.monotonic() - killed_at
    _report(
        "worker SIGKILL, no restart",
        status=reply.status,
        total_s=round(reply.seconds, 1),
        after_kill_s=round(after_kill, 1),
    )
    try:
        assert reply.status == 503, reply
        assert int(reply.headers["Retry-After"]) >= 1
        assert after_kill <= 15, after_kill
        assert fault_stack.audit_events(question_id) == [("question", "unavailable")]
        # a new question while no worker is alive gets the same prompt answer
        again = fault_stack.ask(QUESTION)
        assert again.status == 503 and again.seconds <= 15 and "Retry-After" in again.headers, again
    finally:
        fault_stack.up("worker")
        fault_stack.wait_for_worker()
    # the abandoned question, still in the broker, is not answered by the restarted worker
    back = fault_stack.ask(QUESTION)
    assert back.status == 200, back
    assert fault_stack.audit_events(question_id) == [("question", "unavailable")]
