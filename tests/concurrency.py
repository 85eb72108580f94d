"""Helpers for tests that run two writers at once against the real PostgreSQL: each thread has a database
connection of its own (closed when it ends); where one write must be caught mid-way, the test waits until
PostgreSQL reports the other session waiting for a lock, never a sleep that hopes for the right order."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

from django.db import connections

from agents.models import Answer, Conversation, CurationItem

WAIT_SECONDS = 60


def together(*calls: Callable[[], Any]) -> list[Any]:
    """Run each call in its own thread, released at once by a barrier; each thread closes its database
    connection when done. Returns each call's result, or the exception it raised."""
    barrier = threading.Barrier(len(calls))
    results: list[Any] = [None] * len(calls)

    def run(index: int, call: Callable[[], Any]) -> None:
        try:
            barrier.wait(WAIT_SECONDS)
            results[index] = call()
        except BaseException as exc:  # noqa: BLE001 -- handed to the test, which asserts on it
            results[index] = exc
        finally:
            connections.close_all()  # this thread's connections only

    threads = [threading.Thread(target=run, args=(i, call)) for i, call in enumerate(calls)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(WAIT_SECONDS)
    assert not any(thread.is_alive() for thread in threads), "a concurrent call did not finish"
    return results


def in_thread(call: Callable[[], Any]) -> tuple[threading.Thread, list[Any]]:
    """Start `call` in a thread of its own (own connection, closed at the end); the list receives its result."""
    result: list[Any] = []

    def run() -> None:
        try:
            result.append(call())
        except BaseException as exc:  # noqa: BLE001
            result.append(exc)
        finally:
            connections.close_all()

    thread = threading.Thread(target=run)
    thread.start()
    return thread, result


def until_another_session_waits_for_a_lock(*, or_finished: threading.Thread | None = None) -> None:
    """Return once another session of this database is blocked on a lock (the concurrent write has reached
    the row the test holds), or once `or_finished` has ended (a write that took no lock at all)."""
    deadline = time.monotonic() + WAIT_SECONDS
    with connections["default"].cursor() as cursor:
        while time.monotonic() < deadline:
            if or_finished is not None and not or_finished.is_alive():
                return
            cursor.execute("SELECT pg_stat_clear_snapshot()")  # a transaction would see one snapshot only
            cursor.execute(
                "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() "
                "AND pid <> pg_backend_pid() AND wait_event_type = 'Lock'"
            )
            if cursor.fetchone()[0]:
                return
            time.sleep(0.02)
    raise AssertionError("the concurrent write never waited for the lock")


def an_abstained_answer(user: Any, question: str = "Who rotates the token?") -> Answer:
    conversation = Conversation.objects.create(user=user, title=question)
    answer = Answer.objects.create(
        conversation=conversation,
        user=user,
        question=question,
        abstained=True,
        response={"answer": "", "abstained": True, "citations": []},
    )
    CurationItem.objects.create(answer=answer, reason="abstained")
    return answer


def finished(thread: threading.Thread, outcome: list[Any]) -> Any:
    thread.join(WAIT_SECONDS)
    assert not thread.is_alive(), "the concurrent request did not finish"
    (result,) = outcome
    assert not isinstance(result, BaseException), repr(result)
    return result
