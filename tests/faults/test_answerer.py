"""The stack's answerer (a worker that takes only the `realtime` queue) answers a question while every process of
the stack's worker runs an embed task, which a question cannot interrupt: with the worker alone the question
waited for that task to end (seconds per batch during an ingest; here one long document's single embed task)."""

from __future__ import annotations

import time

import pytest

from tests.faults.conftest import SAMPLE, FaultStack

pytestmark = [pytest.mark.faults, pytest.mark.integration, pytest.mark.slow]

PREFIX = "answerer-busy/"
# copies of the sample documents' prose in one document (about 100 chunks each): its chunks are embedded by one
# task, which keeps the worker's only process (the fault stack runs it with concurrency 1) busy for tens of
# seconds on two cores
COPIES = 8


def _long_document(folder) -> None:  # type: ignore[no-untyped-def]
    parts = []
    for copy in range(COPIES):
        for path in sorted(SAMPLE.glob("*.md")):
            for line in path.read_text().splitlines():
                # prose lines only, each made new (so every chunk is embedded), as tests/benchmarks/load.py does
                if line.strip() and not line.startswith(("    ", "---", "#", "```")) and ":" not in line[:20]:
                    parts.append(f"{line} (copy {copy})")
            parts.append("")
    folder.mkdir()
    (folder / "long-handbook.md").write_text("# Handbook\n\n" + "\n".join(parts) + "\n")


def _embedding(stack: FaultStack) -> set[str]:
    """The embed tasks that processes of the stack's worker (`athena@`) run now (agents.realtime.OtherTaskLease:
    `hostname|pid|queue|expected end`, refreshed every second)."""
    client = stack.redis()
    members = client.zrangebyscore(stack.rt_key("others"), time.time() - 4, "+inf")
    return {
        member.decode()
        for member in members
        if member.decode().startswith("athena@") and member.decode().split("|")[2] == "embed"
    }


def _realtime_processes(stack: FaultStack) -> dict[str, int]:
    """The realtime workers' heartbeats (`hostname|concurrency`): what admission counts as processes."""
    members = stack.redis().zrangebyscore(stack.rt_key("workers"), time.time() - 4, "+inf")
    return {name: int(count) for name, count in (m.decode().rsplit("|", 1) for m in members)}


def _answerers(stack: FaultStack) -> int:
    return sum(name.startswith("answerer@") for name in _realtime_processes(stack))


def test_a_question_is_answered_while_the_worker_runs_an_embed_task(
    fault_stack: FaultStack, tmp_path
) -> None:
    fault_stack.up("answerer")
    try:
        deadline = time.monotonic() + 180
        # its pool process has loaded the models (agents.tasks warms them up before it takes a task)
        while not (_answerers(fault_stack) and "models warm in" in fault_stack.log("answerer").read_text()):
            assert time.monotonic() < deadline, (
                f"the answerer did not start; see {fault_stack.log('answerer')}"
            )
            time.sleep(0.2)

        folder = tmp_path / "long"
        _long_document(folder)
        ingest = fault_stack.manage_started("ingest", str(folder), "--prefix", PREFIX, "--wait")
        try:
            deadline = time.monotonic() + 180
            while not (running := _embedding(fault_stack)):
                assert ingest.poll() is None, ingest.stdout.read() if ingest.stdout else ""
                assert time.monotonic() < deadline, "the worker never started embedding the long document"
                time.sleep(0.1)
            # admission counts the worker's process in its embed task as busy (its heartbeat names the same
            # host as the task's lease) and the answerer's as free: a question is expected to start at once
            processes = _realtime_processes(fault_stack)
            busy = {member.split("|")[0] for member in running}
            assert busy <= set(processes), (busy, processes)
            assert sum(processes.values()) - len(running) >= 1, (processes, running)

            asked = time.monotonic()
            reply = fault_stack.ask("What BGP keepalive and hold timers do we configure on IOS-XE routers?")
            still_running = running & _embedding(fault_stack)

            assert reply.status == 200, reply
            waited = reply.seconds - reply.body["timings_ms"]["worker"] / 1000
            print(
                f"\n[fault] asked during an embed task: answered in {reply.seconds:.1f} s, {waited:.1f} s of it queued"
            )
            # the worker's process was still in the same embed task when the answer came: the answerer answered
            assert still_running, f"the answer came after the embed task ended ({reply.seconds:.1f} s)"
        finally:
            output, _ = ingest.communicate(timeout=600)
        assert ingest.returncode == 0, output
        print(f"[fault] the embed task ended {time.monotonic() - asked:.1f} s after the question was asked")
    finally:
        fault_stack.manage("stack", "down", "--only", "answerer")
    fault_stack.wait_for_worker()
