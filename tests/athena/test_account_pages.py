"""The account pages (sign-out, password change and reset) wear the product's look, not Django admin's: their
title, header and links are Athena's, and a non-staff user is not sent to /admin/."""

from __future__ import annotations

import re

import pytest
from django.contrib.auth.tokens import default_token_generator
from django.core import mail
from django.test import Client
from django.utils.encoding import force_bytes
from django.utils.http import urlsafe_base64_encode

from tests.factories import UserFactory

pytestmark = [pytest.mark.integration, pytest.mark.django_db]


def _ours(html: str, heading: str) -> None:
    assert "· Athena KB</title>" in html and "/admin/" not in html and "Django" not in html, html[:400]
    assert f"<h1>{heading}</h1>" in html
    assert "agents/athena" in html  # the product's stylesheet


def test_password_change_in_the_product_look() -> None:
    user = UserFactory(username="erin", password="old-password-1")
    client = Client()
    client.force_login(user)
    page = client.get("/accounts/password_change/")
    _ours(page.content.decode(), "Change password")
    assert 'href="/accounts/password_change/">Password</a>' in client.get("/").content.decode()
    wrong = client.post(
        "/accounts/password_change/",
        {
            "old_password": "nope",
            "new_password1": "a-new-passphrase-9",
            "new_password2": "a-new-passphrase-9",
        },
    )
    assert wrong.status_code == 200 and 'class="error"' in wrong.content.decode()
    done = client.post(
        "/accounts/password_change/",
        {
            "old_password": "old-password-1",
            "new_password1": "a-new-passphrase-9",
            "new_password2": "a-new-passphrase-9",
        },
        follow=True,
    )
    _ours(done.content.decode(), "Password changed")
    user.refresh_from_db()
    assert user.check_password("a-new-passphrase-9")


def test_password_reset_and_sign_out_in_the_product_look(settings) -> None:  # type: ignore[no-untyped-def]
    settings.EMAIL_BACKEND = "django.core.mail.backends.locmem.EmailBackend"
    user = UserFactory(username="frank", password="pw-frank-1", email="frank@example.org")
    client = Client()
    _ours(client.get("/accounts/password_reset/").content.decode(), "Reset password")
    sent = client.post("/accounts/password_reset/", {"email": "frank@example.org"}, follow=True)
    _ours(sent.content.decode(), "Check your mail")
    assert len(mail.outbox) == 1
    link = f"/accounts/reset/{urlsafe_base64_encode(force_bytes(user.pk))}/{default_token_generator.make_token(user)}/"
    form = client.get(link, follow=True)
    _ours(form.content.decode(), "Set a new password")
    assert 'name="new_password1"' in form.content.decode()
    done = client.post(
        form.redirect_chain[-1][0],
        {"new_password1": "a-fresh-passphrase-7", "new_password2": "a-fresh-passphrase-7"},
        follow=True,
    )
    _ours(done.content.decode(), "Password set")
    invalid = client.get("/accounts/reset/MQ/bad-token/")
    _ours(invalid.content.decode(), "Set a new password")
    assert re.search(r"link is not valid", invalid.content.decode())
    client.force_login(user)
    _ours(client.post("/accounts/logout/").content.decode(), "Signed out")
