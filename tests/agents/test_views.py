"""The chat page and the sign-in page."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.factories import EmployeeFactory, UserFactory

pytestmark = [pytest.mark.django_db, pytest.mark.integration]


def test_chat_page_requires_login(client) -> None:  # type: ignore[no-untyped-def]
    response = client.get("/")
    assert response.status_code == 302 and response["Location"].startswith("/accounts/login/")
    login = client.get(response["Location"])
    assert login.status_code == 200 and b"Sign in" in login.content


def test_chat_page_renders_for_an_employee(client) -> None:  # type: ignore[no-untyped-def]
    EmployeeFactory(username="alice")
    client.login(username="alice", password="pw")
    response = client.get("/")
    assert response.status_code == 200
    html = response.content.decode()
    for marker in (
        'id="question"',
        'maxlength="1000"',
        'id="char-counter"',
        "0 / 1000",
        'id="progress"',
        'id="conversation-list"',
        'id="upload-form"',
        'id="panel-evidence"',
        'id="panel-trace"',
        "agents/chat.js",
        "csrftoken",
    ):
        if marker == "csrftoken":
            assert "csrftoken" in response.cookies
        else:
            assert marker in html, marker
    assert "/compliance/" not in html  # no link to pages the user cannot open
    assert "https://" not in html  # no external CDN


def test_chat_page_links_compliance_for_compliance_staff(client) -> None:  # type: ignore[no-untyped-def]
    UserFactory(username="carol", groups=["compliance"])
    client.login(username="carol", password="pw")
    assert "/compliance/" in client.get("/").content.decode()


def test_static_assets_are_served_by_the_app(client, settings) -> None:  # type: ignore[no-untyped-def]
    from django.contrib.staticfiles import finders

    assert finders.find("agents/chat.js") and finders.find("agents/athena.css")
    script = Path(finders.find("agents/chat.js")).read_text(encoding="utf-8")
    assert "http://" not in script and "https://" not in script
