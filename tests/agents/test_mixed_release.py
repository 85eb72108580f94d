"""A rolling upgrade done in the wrong order (web hosts before the realtime workers): a question's task message
carries what the worker's release does not know (an added option or argument, one fewer, a renamed task). The
message is published as a web process of the later release publishes it (by name, without this release's
signature check) to a real worker, which refuses it; the asker gets 503 with Retry-After, audited as
unavailable, where every question used to end in a server error until the workers were upgraded."""

from __future__ import annotations

import time
from typing import Any

import pytest
from django.test import override_settings

from agents import realtime
from audit.models import AuditEvent
from tests.api import client_for, make_user

pytestmark = [pytest.mark.django_db, pytest.mark.integration]


def _later_release(how: str) -> Any:
    from athena.celery import app

    def publish(*, args: list[Any], kwargs: dict[str, Any], queue: str, task_id: str) -> Any:
        if how == "added option":
            return app.send_task(
                "agents.tasks.answer_task",
                args=args,
                kwargs={**kwargs, "answer_language": "de"},
                queue=queue,
                task_id=task_id,
            )
        if how == "added argument":
            return app.send_task(
                "agents.tasks.answer_task", args=[*args, "de"], kwargs=kwargs, queue=queue, task_id=task_id
            )
        if how == "dropped argument":  # refused by Python's call itself, as by a worker without the check
            return app.send_task(
                "agents.tasks.answer_task", args=args[:-1], kwargs=kwargs, queue=queue, task_id=task_id
            )
        return app.send_task(
            "agents.tasks.answer_question_task", args=args, kwargs=kwargs, queue=queue, task_id=task_id
        )

    return publish


@pytest.mark.parametrize("how", ["added option", "added argument", "dropped argument", "renamed task"])
def test_a_question_from_a_web_process_of_a_later_release_gets_503_not_a_server_error(  # type: ignore[no-untyped-def]
    celery_worker_process, redis_client, monkeypatch, how
):
    from agents.tasks import answer_task, passage_guard_task

    user = make_user(f"later-web-{how.replace(' ', '-')}", "employees")
    redis_client.delete(realtime.user_pending_key(user.pk))
    # the worker's pool process has loaded its models (a task went through it): the time measured is the refusal's
    passage_guard_task.apply_async(args=["warm"], queue="realtime").get(timeout=120)
    deadline = time.monotonic() + 60
    while not realtime.workers_alive() and time.monotonic() < deadline:
        time.sleep(0.2)
    monkeypatch.setattr(answer_task, "apply_async", _later_release(how))
    started = time.monotonic()
    with override_settings(ATHENA_REALTIME_VIA_CELERY=True, ATHENA_MAX_QUEUE_WAIT_SECONDS=0):
        response = client_for(user).post(
            "/api/v1/ask", {"question": "What hold timer do we use for BGP?"}, format="json"
        )
    elapsed = time.monotonic() - started
    assert response.status_code == 503, response.content
    assert int(response["Retry-After"]) >= 1
    assert "another release" in response.json()["error"]["message"]
    assert elapsed < 20, elapsed  # the worker's refusal is read at once, not waited out (the answer timeout)
    event = AuditEvent.objects.filter(kind="question", actor=user.username).get()
    assert event.verdict == "unavailable" and event.payload["error"] == "release_mismatch"
    assert redis_client.zcard(realtime.user_pending_key(user.pk)) == 0


def test_a_passage_to_screen_from_a_web_process_of_a_later_release_is_unavailable(  # type: ignore[no-untyped-def]
    celery_worker_process, monkeypatch
):
    """The passage viewer's screening (passage_guard_task) sent with an option this worker does not know, as a
    web process of a later release sends it (or this release's `sealed` to a worker of the earlier one): 503,
    never a server error."""
    from agents.services import passage_text_guard
    from agents.tasks import passage_guard_task
    from athena.celery import app
    from athena.errors import Unavailable

    passage_guard_task.apply_async(args=["warm"], queue="realtime").get(timeout=120)

    def later(*, args: list[Any], kwargs: dict[str, Any], queue: str) -> Any:
        return app.send_task(
            "agents.tasks.passage_guard_task", args=args, kwargs={**kwargs, "mask_style": "x"}, queue=queue
        )

    monkeypatch.setattr(passage_guard_task, "apply_async", later)
    with override_settings(ATHENA_REALTIME_VIA_CELERY=True), pytest.raises(Unavailable) as raised:
        passage_text_guard("The hold timer is 90 seconds.")
    assert "another release" in raised.value.message and raised.value.retry_after
