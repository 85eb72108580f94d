"""The pages Django shows for an error wear the product's look and say what to do next: a stale form (CSRF),
an unknown address, a page not open to the user, a request not understood, a server error. Django's own are
bare pages without a viewport (drawn at desktop width on a phone) and without a way back."""

from __future__ import annotations

import pytest
from django.template import loader
from django.test import Client

from tests.factories import UserFactory

pytestmark = [pytest.mark.integration, pytest.mark.django_db]


def _ours(html: str, heading: str) -> None:
    assert "· Athena KB</title>" in html and "Django" not in html and "DEBUG" not in html, html[:400]
    assert 'name="viewport"' in html and 'lang="en"' in html
    assert f"<h1>{heading}</h1>" in html, html
    assert "agents/athena" in html  # the product's stylesheet


def test_a_sign_in_form_gone_stale_says_so_and_links_to_a_fresh_one() -> None:
    UserFactory(username="gwen", password="pw-gwen-1")
    client = Client(enforce_csrf_checks=True)
    client.get("/accounts/login/")
    # the form of a page opened before the token changed (a sign-in or sign-out in another tab)
    page = client.post(
        "/accounts/login/",
        {"username": "gwen", "password": "pw-gwen-1", "csrfmiddlewaretoken": "x" * 64},
    )
    assert page.status_code == 403
    html = page.content.decode()
    _ours(html, "The form had expired")
    assert "Nothing was sent" in html and 'href="/accounts/login/">Sign in again</a>' in html


def test_an_unknown_address_and_a_server_error_in_the_product_look() -> None:
    client = Client()
    missing = client.get("/no-such-page/")
    assert missing.status_code == 404
    _ours(missing.content.decode(), "Page not found")
    assert 'href="/">Back to Athena</a>' in missing.content.decode()
    # 500.html and 400.html are drawn without a request (no user, no context processors)
    _ours(loader.get_template("500.html").render(), "Something went wrong on our side")
    _ours(loader.get_template("400.html").render(), "Request not understood")


def test_a_page_not_open_to_the_user_says_who_is_signed_in() -> None:
    from django.core.exceptions import PermissionDenied
    from django.test import RequestFactory
    from django.views.defaults import permission_denied

    request = RequestFactory().get("/somewhere/")
    request.user = UserFactory(username="hank")
    html = permission_denied(request, PermissionDenied()).content.decode()
    _ours(html, "Not allowed")
    assert "signed in as hank" in html
