"""PostgreSQL and Redis restarted under a running stack: answers degrade to 503 with a retry hint, never 500,
and the stack recovers by itself."""

from __future__ import annotations

import threading
import time
from collections import Counter

import pytest

from tests.faults.conftest import FaultStack, Reply

pytestmark = [pytest.mark.faults, pytest.mark.integration, pytest.mark.slow]

QUESTIONS = (
    "What BGP keepalive and hold timers do we configure on IOS-XE routers?",
    "Which NTP servers do our hosts use with chrony?",
    "What is our shared_buffers setting for PostgreSQL?",
)


class Askers:
    """`n` threads asking questions one after another until stopped, keeping every reply."""

    def __init__(self, stack: FaultStack, n: int = 2) -> None:
        self.replies: list[tuple[float, Reply]] = []
        self._stop = threading.Event()
        self._threads = [threading.Thread(target=self._run, args=(stack, i), daemon=True) for i in range(n)]
        for thread in self._threads:
            thread.start()

    def _run(self, stack: FaultStack, offset: int) -> None:
        i = offset
        while not self._stop.is_set():
            reply = stack.ask(QUESTIONS[i % len(QUESTIONS)], timeout=150)
            self.replies.append((time.monotonic(), reply))
            i += 1
            if reply.status != 200:
                time.sleep(0.5)

    def stop(self) -> list[tuple[float, Reply]]:
        self._stop.set()
        for thread in self._threads:
            thread.join(200)
        return self.replies


def _answered_again(stack: FaultStack, *, within: float) -> float:
    """Seconds until a question is answered again, following Retry-After as a client would."""
    started = time.monotonic()
    while time.monotonic() - started < within:
        reply = stack.ask(QUESTIONS[0])
        if reply.status == 200:
            return time.monotonic() - started
        assert reply.status == 503 and "Retry-After" in reply.headers, reply
        time.sleep(min(float(reply.headers["Retry-After"]), 5))
    raise AssertionError(f"not answered within {within}s of the restart")


def _check_replies(replies: list[tuple[float, Reply]]) -> Counter[int]:
    statuses = Counter(reply.status for _, reply in replies)
    bad = [reply for _, reply in replies if reply.status not in (200, 503)]
    assert not bad, bad[:3]
    for _, reply in replies:
        if reply.status == 503:
            assert int(reply.headers["Retry-After"]) >= 1, reply
            assert reply.body["error"]["code"] in {"dependency_unavailable", "unavailable"}, reply
    return statuses


def test_postgresql_restarted_during_questions_gives_503_with_retry_after_never_500(fault_stack):
    askers = Askers(fault_stack)
    time.sleep(3)
    down_at = time.monotonic()
    fault_stack.manage("stack", "down", "--only", "postgres")  # pg_ctl stop -m fast: every session is cut
    time.sleep(3)
    fault_stack.up("postgres")
    up_at = time.monotonic()
    time.sleep(5)
    replies = askers.stop()
    statuses = _check_replies(replies)
    during = Counter(r.status for t, r in replies if down_at <= t <= up_at + 1)
    recovered = _answered_again(fault_stack, within=60)
    print(
        f"\n[fault] PostgreSQL restart: replies {dict(statuses)}, while down {dict(during)}, "
        f"down {up_at - down_at:.1f}s, answered again {recovered:.1f}s after the checks"
    )
    assert statuses[503] >= 1  # questions were asked while it was down


def test_redis_restarted_questions_recover_and_a_queued_ingest_is_not_lost(fault_stack, tmp_path):
    # a document queued while no worker runs: its task waits in Redis
    fault_stack.manage("stack", "down", "--only", "worker")
    folder = tmp_path / "late"
    folder.mkdir()
    (folder / "dhcp-pools.md").write_text(
        "# DHCP pool sizing\n\nEvery office DHCP pool keeps 20 percent of its addresses free; the "
        "lease time is 8 hours on wired networks and 2 hours on guest Wi-Fi.\n"
    )
    fault_stack.manage("ingest", str(folder))
    time.sleep(1.5)  # appendfsync everysec: the publish reaches the append-only file within a second
    killed_at = time.monotonic()
    fault_stack.kill_group("redis")  # a crash, not a clean shutdown: only the AOF keeps the queue
    fault_stack.up("redis")
    fault_stack.up("worker")
    deadline = time.monotonic() + 120
    status = None
    while time.monotonic() < deadline:
        rows = fault_stack.sql("SELECT status FROM knowledge_document WHERE source = 'dhcp-pools.md'")
        status = rows[0][0] if rows else None
        if status == "indexed":
            break
        time.sleep(1)
    indexed_after = time.monotonic() - killed_at
    fault_stack.wait_for_worker()
    recovered = _answered_again(fault_stack, within=60)
    print(
        f"\n[fault] Redis SIGKILL + restart: queued ingest {status} {indexed_after:.1f}s after the kill; "
        f"questions answered again {recovered:.1f}s later"
    )
    assert status == "indexed"
    reply = fault_stack.ask("How long is the DHCP lease on guest Wi-Fi?")
    assert reply.status == 200 and "dhcp-pools.md" in reply.body["retrieved"], reply


def test_an_upload_while_redis_is_down_is_refused_marked_failed_and_leaves_no_file(fault_stack):
    """The broker is down when a private upload comes in (and when a passage is opened): the uploader gets 503 with a retry hint, the
    document is marked failed with the reason (their document list tells them), its file is not left on disk
    where nothing names it, and the refusal is audited. With Redis back, the same upload is indexed."""
    content = (
        b"# Generator runs\n\nThe standby generator runs under load every second Tuesday for 30 minutes.\n"
    )
    chunk_id = fault_stack.sql("SELECT id FROM knowledge_chunk WHERE active ORDER BY id LIMIT 1")[0][0]
    fault_stack.manage("stack", "down", "--only", "redis")
    try:
        refused = fault_stack.upload("generator-runs.md", content)
        # the citation viewer screens its passage on a worker: with Redis down it is 503 too, never 500
        passage = fault_stack.get(f"passages/{chunk_id}")
    finally:
        fault_stack.up("redis")
    # which of the two Celery raises depends on whether this web process had subscribed to results before
    assert passage.status == 503 and passage.body["error"]["code"] in {
        "dependency_unavailable",
        "unavailable",
    }, passage
    # and with Redis back, the same web process screens passages again (Celery's result store reconnects)
    deadline = time.monotonic() + 60
    while (passage := fault_stack.get(f"passages/{chunk_id}")).status != 200 and time.monotonic() < deadline:
        time.sleep(1)
    assert passage.status == 200, passage
    assert refused.status == 503 and int(refused.headers["Retry-After"]) >= 1, refused
    assert refused.body["error"]["code"] == "dependency_unavailable", refused
    rows = fault_stack.sql(
        "SELECT source, status, error FROM knowledge_document WHERE source LIKE 'uploads/%%/generator-runs.md'"
    )
    assert len(rows) == 1 and rows[0][1] == "failed" and "not queued" in rows[0][2], rows
    source = rows[0][0]
    assert not (fault_stack.var / "media" / source).exists()
    refusals = fault_stack.sql(
        "SELECT payload->>'code' FROM audit_auditevent WHERE kind = 'upload_refused' ORDER BY id DESC LIMIT 1"
    )
    assert refusals == [("dependency_unavailable",)]

    fault_stack.wait_for_worker()
    accepted = fault_stack.upload("generator-runs.md", content)
    assert accepted.status == 201, accepted
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        status = fault_stack.sql("SELECT status FROM knowledge_document WHERE source = %s", source)[0][0]
        if status == "indexed":
            break
        time.sleep(1)
    assert status == "indexed"
    assert (fault_stack.var / "media" / source).exists()
