"""Every question leaves an audit event, even when the answering pipeline fails, and a refused question's
personal data is not stored as the conversation's title; the web server's worker timeout outlasts the wait
for an answer, so the wait's own audit event is written before gunicorn would kill the worker."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from django.conf import settings
from django.test import override_settings

from agents.models import Conversation
from agents.services import Blocked, ask
from audit.models import AuditEvent
from tests.api import make_user

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.integration
@pytest.mark.django_db
def test_a_question_whose_pipeline_fails_is_audited() -> None:
    user = make_user("eng", "employees")
    broken = {**settings.ATHENA_EMBEDDER, "BACKEND": "knowledge.embedders.NoSuchEmbedder"}
    with override_settings(ATHENA_EMBEDDER=broken), pytest.raises(Exception):  # noqa: B017 - any failure
        ask(user=user, question="How do I rotate the VPN pre-shared key?")
    event = AuditEvent.objects.get(kind="question")
    assert event.verdict == "error" and event.actor == "eng"
    assert "rotate" not in str(event.payload)  # not screened: the text is withheld
    assert event.payload["error"]


@pytest.mark.integration
@pytest.mark.slow
@pytest.mark.django_db
def test_a_refused_questions_personal_data_is_not_the_conversation_title() -> None:
    user = make_user("eng", "employees")
    with pytest.raises(Blocked):
        ask(user=user, question="My SSN is 536-22-1234, can you update my HR record?")
    titles = list(Conversation.objects.filter(user=user).values_list("title", flat=True))
    assert titles and not any("536-22-1234" in title for title in titles)


@pytest.mark.unit
def test_gunicorn_outlasts_the_answer_wait() -> None:
    from athena import gunicorn_conf

    assert gunicorn_conf.timeout > settings.ATHENA_ANSWER_TIMEOUT_SECONDS
    # every web server of the project is started with that configuration
    commands = [
        line
        for path in [*(ROOT / "deploy").rglob("*.y*ml"), *(ROOT / "deploy").rglob("*.service")]
        for line in path.read_text().splitlines()
        if "gunicorn" in line and "wsgi" in line
    ]
    assert commands and all("python:athena.gunicorn_conf" in line for line in commands), commands
    assert not any(re.search(r"--timeout\s+\d+", line) for line in commands)


@pytest.mark.unit
def test_the_local_web_server_uses_the_same_configuration() -> None:
    from athena.stack import Stack

    argv = Stack(components=("web",))._services()["web"].argv
    assert "python:athena.gunicorn_conf" in argv and "--timeout" not in argv
