"""The web server's worker timeout outlasts the wait for an answer, so the wait's own audit event is written
before gunicorn would kill the worker; every web server of the project uses that configuration."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from django.conf import settings

pytestmark = [pytest.mark.unit]

ROOT = Path(__file__).resolve().parents[2]


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


def test_the_local_web_server_uses_the_same_configuration() -> None:
    from athena.stack import Stack

    argv = Stack(components=("web",)).service("web").argv
    assert "python:athena.gunicorn_conf" in argv and "--timeout" not in argv
