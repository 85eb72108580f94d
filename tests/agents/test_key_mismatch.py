"""A web process and a realtime worker that hold different secret keys (ATHENA_SECRET_KEY): one cannot open what
the other sealed (athena.sealing). That is what a key rotation rolled out host by host in one step does for as
long as it lasts, whichever side goes first, and what a host given a wrong key does for good. Through a real
worker: the asker gets 503 with Retry-After naming the cause, audited as unavailable, never a server error (a
question ended in 500 `internal_error` when the worker could not open it, and in an unhandled InvalidToken when
the web process could not open the answer)."""

from __future__ import annotations

import time
from typing import Any

import pytest
from django.conf import settings
from django.test import override_settings

from agents import realtime
from athena.errors import Unavailable
from athena.sealing import InvalidToken, KeyMismatch, Purpose, seal, unseal
from audit.models import AuditEvent
from tests.api import client_for, make_user

pytestmark = [pytest.mark.integration]

QUESTION = "What hold timer do we use for BGP?"
NEW_KEY = "a-rotated-secret-key-this-worker-never-got-0123456789abcdef"


def _worker_ready() -> None:
    from agents.tasks import passage_guard_task

    # the worker's pool process has loaded its models: what is measured is the refusal, not a cold start
    passage_guard_task.apply_async(args=["warm"], queue=settings.ATHENA_REALTIME_QUEUE).get(timeout=120)
    deadline = time.monotonic() + 60
    while not realtime.workers_alive() and time.monotonic() < deadline:
        time.sleep(0.2)


def _ask(user: Any) -> Any:
    started = time.monotonic()
    with override_settings(ATHENA_REALTIME_VIA_CELERY=True, ATHENA_MAX_QUEUE_WAIT_SECONDS=0):
        response = client_for(user).post("/api/v1/ask", {"question": QUESTION}, format="json")
    assert time.monotonic() - started < 60  # read at once, not waited out until the answer timeout
    return response


def _refused_as_key_mismatch(response: Any, user: Any, redis_client: Any) -> None:
    assert response.status_code == 503, response.content
    assert int(response["Retry-After"]) >= 1
    body = response.json()["error"]
    assert body["code"] == "unavailable" and "another secret key" in body["message"], body
    event = AuditEvent.objects.filter(kind="question", actor=user.username).get()
    assert event.verdict == "unavailable" and event.payload["error"] == "key_mismatch"
    # nothing of the question is left waiting, nor its stored result
    assert redis_client.zcard(realtime.user_pending_key(user.pk)) == 0
    assert not redis_client.exists(f"celery-task-meta-{event.payload['question_id']}")


@pytest.mark.unit
def test_a_token_no_key_opens_says_which_settings_to_look_at(settings) -> None:  # type: ignore[no-untyped-def]
    token = seal("a restricted passage", purpose=Purpose.PASSAGE)
    settings.SECRET_KEY = NEW_KEY
    with pytest.raises(KeyMismatch) as raised:
        unseal(token, purpose=Purpose.PASSAGE)
    assert isinstance(raised.value, InvalidToken)  # what callers caught before still catches it
    message = str(raised.value)
    assert "ATHENA_SECRET_KEY" in message and "passage" in message and "restricted" not in message


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_a_worker_that_cannot_open_the_question_gives_503(celery_worker_process, redis_client) -> None:  # type: ignore[no-untyped-def]
    """The web host went first: it seals under the new key (the old one, the worker's, kept as a fallback)."""
    _worker_ready()
    user = make_user("key-web-first", "employees")
    with override_settings(SECRET_KEY=NEW_KEY, SECRET_KEY_FALLBACKS=[settings.SECRET_KEY]):
        response = _ask(user)
    _refused_as_key_mismatch(response, user, redis_client)


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_a_web_process_that_cannot_open_the_answer_gives_503(  # type: ignore[no-untyped-def]
    celery_worker_process, redis_client, monkeypatch
) -> None:
    """The worker went first: it opens the question (sealed here under the worker's key, as a web host still on
    the old key seals it) and seals the answer under a key this web process does not hold."""
    from agents.tasks import answer_task

    _worker_ready()
    user = make_user("key-worker-first", "employees")
    worker_key, publish = settings.SECRET_KEY, answer_task.apply_async

    def sealed_under_the_worker_key(*, args: list[Any], **options: Any) -> Any:
        question = unseal(args[1], purpose=Purpose.QUESTION)
        with override_settings(SECRET_KEY=worker_key):
            return publish(args=[args[0], seal(question, purpose=Purpose.QUESTION), *args[2:]], **options)

    monkeypatch.setattr(answer_task, "apply_async", sealed_under_the_worker_key)
    with override_settings(SECRET_KEY=NEW_KEY, SECRET_KEY_FALLBACKS=[]):
        response = _ask(user)
    _refused_as_key_mismatch(response, user, redis_client)


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_a_passage_the_worker_cannot_open_is_unavailable_not_a_server_error(celery_worker_process) -> None:  # type: ignore[no-untyped-def]
    from agents.services import passage_text_guard

    _worker_ready()
    with (
        override_settings(
            ATHENA_REALTIME_VIA_CELERY=True, SECRET_KEY=NEW_KEY, SECRET_KEY_FALLBACKS=[settings.SECRET_KEY]
        ),
        pytest.raises(Unavailable) as raised,
    ):
        passage_text_guard("The hold timer is 90 seconds.")
    assert "another secret key" in raised.value.message and raised.value.retry_after


@pytest.mark.unit
def test_a_rotation_in_two_rollouts_keeps_every_pair_of_hosts_opening_each_other(settings) -> None:  # type: ignore[no-untyped-def]
    """deploy/README.md: the new key first as a fallback everywhere, then as the key with the old one as the
    fallback. Hosts of neighbouring steps, as a rollout leaves them side by side, open each other's tokens;
    a host of the first step cannot open what one of the last seals, as a one-step swap leaves them."""
    old = settings.SECRET_KEY
    steps = [(old, []), (old, [NEW_KEY]), (NEW_KEY, [old])]

    def sealed_at(step: int) -> str:
        settings.SECRET_KEY, settings.SECRET_KEY_FALLBACKS = steps[step]
        return seal("a question", purpose=Purpose.QUESTION)

    def opens_at(step: int, token: str) -> bool:
        settings.SECRET_KEY, settings.SECRET_KEY_FALLBACKS = steps[step]
        try:
            return unseal(token, purpose=Purpose.QUESTION) == "a question"
        except KeyMismatch:
            return False

    for a, b in ((0, 1), (1, 2)):
        assert opens_at(a, sealed_at(b)) and opens_at(b, sealed_at(a))
    assert not opens_at(0, sealed_at(2))
