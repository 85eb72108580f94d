"""The API reference pages (Swagger UI, Redoc) load everything from this server: the product runs offline."""

from __future__ import annotations

import re

import pytest

from tests.factories import UserFactory

pytestmark = [pytest.mark.django_db, pytest.mark.integration]

EXTERNAL = re.compile(r"""(?:src|href)\s*=\s*["'](?:https?:)?//""", re.IGNORECASE)


@pytest.mark.parametrize("url", ["/api/v1/docs", "/api/v1/redoc"])
def test_api_reference_pages_name_no_other_host(client, url: str) -> None:  # type: ignore[no-untyped-def]
    UserFactory(username="dev")
    client.login(username="dev", password="pw")
    response = client.get(url)
    assert response.status_code == 200
    html = response.content.decode()
    assert "/static/drf_spectacular_sidecar/" in html
    assert not EXTERNAL.findall(html), EXTERNAL.findall(html)


def test_redoc_may_not_fetch_from_other_hosts(client) -> None:  # type: ignore[no-untyped-def]
    UserFactory(username="dev")
    client.login(username="dev", password="pw")
    policy = client.get("/api/v1/redoc")["Content-Security-Policy"]
    directives = dict(part.strip().split(" ", 1) for part in policy.split(";") if part.strip())
    assert directives["default-src"] == "'self'" and "http" not in policy


def test_favicon_redirects_to_the_static_icon(client) -> None:  # type: ignore[no-untyped-def]
    response = client.get("/favicon.ico")
    assert response.status_code == 302 and response["Location"].startswith("/static/agents/favicon")
