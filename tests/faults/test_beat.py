"""Beat SIGKILLed around the moment the nightly sync fires and restarted as the stack restarts a dead
component (`stack run` calls the same `up`): the sync runs once a night.

The schedule is placed on the next minute boundary far enough ahead (ATHENA_NIGHTLY_SYNC_HOUR/_MINUTE, UTC as
Celery reads them). Two firings in one test, so that the second can follow the first a minute later:
- killed just after it sent the sync, by a beat that had been running and had sent another task before (the
  one-minute audit checkpoint: a fresh beat saves its schedule after its first send, a running one only every
  three minutes): the restarted beat must not send it again;
- killed a few seconds before the moment and restarted after it: the restarted beat sends it once.
What the sync did is counted in the database (one ingest run of the source folder per real run, the file it
found indexed), what beat sent in its log, and what the worker received in the worker's log."""

from __future__ import annotations

import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from tests.faults.conftest import DB_NAME, FaultStack

pytestmark = [pytest.mark.faults, pytest.mark.integration, pytest.mark.slow]

SENT_SYNC = "Sending due task nightly source folder sync"
SENT_CHECKPOINT = "Sending due task audit checkpoint"
BEAT_STARTED = "beat: Starting..."
WORKER_RECEIVED_SYNC = "knowledge.tasks.sync_source_folders_task["


class LogSince:
    """The lines a component's log gained after this object was made."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.offset = path.stat().st_size if path.exists() else 0

    def lines(self, needle: str) -> list[str]:
        if not self.path.exists():
            return []
        with self.path.open("rb") as log:
            log.seek(self.offset)
            text = log.read().decode(errors="replace")
        return [line for line in text.splitlines() if needle in line]

    def wait_for(self, needle: str, *, count: int = 1, until: float) -> float:
        """The time (wall clock) when the log holds `count` lines with `needle`; fails at `until`."""
        while time.time() < until:
            if len(self.lines(needle)) >= count:
                return time.time()
            time.sleep(0.1)
        raise AssertionError(f"{count} x {needle!r} not logged in time; see {self.path}")


def _minute_ahead(seconds: float) -> datetime:
    """The first minute boundary (UTC) at least `seconds` from now."""
    moment = datetime.now(UTC) + timedelta(seconds=seconds)
    return (moment + timedelta(minutes=1)).replace(second=0, microsecond=0)


def _beat_env(fires: datetime) -> dict[str, str]:
    return {
        "ATHENA_NIGHTLY_SYNC_HOUR": str(fires.hour),
        "ATHENA_NIGHTLY_SYNC_MINUTE": str(fires.minute),
        # a running beat has sent other tasks before the sync (checkpoints every 5 minutes in production)
        "ATHENA_AUDIT_CHECKPOINT_MINUTES": "1",
    }


def _sleep_until(moment: float) -> None:
    time.sleep(max(0.0, moment - time.time()))


def _sync_runs(stack: FaultStack, root: Path) -> list[tuple[int, str, int]]:
    return stack.sql(
        "SELECT id, status, total FROM knowledge_ingestrun WHERE root = %s ORDER BY id", str(root.resolve())
    )


def _indexed(stack: FaultStack, source: str) -> bool:
    rows = stack.sql("SELECT status FROM knowledge_document WHERE source = %s", source)
    return bool(rows) and rows[0][0] == "indexed"


def _wait_indexed(stack: FaultStack, source: str, *, within: float) -> float:
    started = time.monotonic()
    while time.monotonic() - started < within:
        if _indexed(stack, source):
            return time.monotonic() - started
        time.sleep(0.5)
    raise AssertionError(f"{source} not indexed within {within}s")


def test_beat_killed_around_the_nightly_sync_and_restarted_runs_it_once(fault_stack: FaultStack) -> None:
    stack = fault_stack
    folder = stack.var / "sources" / "nightly"
    (folder / "vpn-split-tunnel.md").write_text(
        "# VPN split tunnelling\n\nThe office VPN sends only the 10.40.0.0/16 and 10.41.0.0/16 networks "
        "through the tunnel; every other destination leaves through the local internet connection.\n"
    )
    beat_log, worker_log = LogSince(stack.log("beat")), LogSince(stack.log("worker"))
    runs_before = len(_sync_runs(stack, folder))

    # -- 1. killed just after it sent the sync
    fires = _minute_ahead(70)  # room for the checkpoint a minute after beat starts
    asked = time.time()
    stack.up("beat", env=_beat_env(fires))
    started = beat_log.wait_for(BEAT_STARTED, until=fires.timestamp())
    beat_log.wait_for(SENT_CHECKPOINT, until=fires.timestamp())
    sent = beat_log.wait_for(SENT_SYNC, until=fires.timestamp() + 30)
    time.sleep(1.0)  # the message is published; the schedule is saved (or not) right after it
    stack.kill_group("beat")
    killed = time.time()
    stack.up("beat", env=_beat_env(fires))
    restarted = beat_log.wait_for(BEAT_STARTED, count=2, until=time.time() + 60)
    time.sleep(12)  # a restarted beat sends what it finds due in its first ticks
    sends_after_restart = len(beat_log.lines(SENT_SYNC)) - 1
    indexed_after = _wait_indexed(stack, "nightly/vpn-split-tunnel.md", within=120)
    runs = _sync_runs(stack, folder)[runs_before:]
    received = [line for line in worker_log.lines(WORKER_RECEIVED_SYNC) if "] received" in line]
    print(
        f"\n[fault] beat SIGKILL just after sending the sync: beat up {started - asked:.1f}s after "
        f"`stack up`, sync sent {sent - fires.timestamp():+.1f}s from {fires:%H:%M:%S} UTC, beat killed "
        f"{killed - sent:.1f}s after sending, restarted beat up {restarted - killed:.1f}s after the kill; "
        f"sends by the restarted beat: {sends_after_restart}; worker received the sync {len(received)}x; "
        f"sync runs {len(runs)}; the file indexed {indexed_after:.1f}s after those checks"
    )
    assert len(runs) == 1, runs
    assert sends_after_restart == 0, beat_log.lines(SENT_SYNC)

    # -- 2. killed just before the moment, restarted after it (another night: tonight's guard is removed)
    night = stack.redis().keys(f"athena:{DB_NAME}:nightly-sync:*")
    stack.redis().delete(*night)
    (folder / "printer-queues.md").write_text(
        "# Printer queues\n\nEach floor has one secure-release queue; jobs wait there for 24 hours until the "
        "owner badges in at any printer on the floor.\n"
    )
    stack.manage("stack", "down", "--only", "beat")
    beat_log = LogSince(stack.log("beat"))
    fires = _minute_ahead(25)
    stack.up("beat", env=_beat_env(fires))
    beat_log.wait_for(BEAT_STARTED, until=fires.timestamp() - 4)
    _sleep_until(fires.timestamp() - 3)
    assert beat_log.lines(SENT_SYNC) == []
    stack.kill_group("beat")
    killed = time.time()
    _sleep_until(fires.timestamp() + 3)  # down across the moment
    restarting = time.time()
    stack.up("beat", env=_beat_env(fires))
    sent = beat_log.wait_for(SENT_SYNC, until=time.time() + 60)
    time.sleep(12)
    sends = len(beat_log.lines(SENT_SYNC))
    indexed_after = _wait_indexed(stack, "nightly/printer-queues.md", within=120)
    second_runs = _sync_runs(stack, folder)[runs_before + 1 :]
    print(
        f"[fault] beat SIGKILL {fires.timestamp() - killed:.1f}s before the sync at {fires:%H:%M:%S} UTC, "
        f"restarted {restarting - fires.timestamp():.1f}s after it: sync sent {sent - restarting:.1f}s "
        f"after the restart, {sends} send(s) in all; sync runs {len(second_runs)}; the new file indexed "
        f"{indexed_after:.1f}s after those checks"
    )
    assert sends == 1
    assert len(second_runs) == 1, second_runs
    stack.manage("stack", "down", "--only", "beat")
