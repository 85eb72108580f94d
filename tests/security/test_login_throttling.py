"""Sign-in guessing is throttled and its audit trail aggregated: after ATHENA_LOGIN_FAILURES_PER_NAME failures
the password is not even checked, and a flood of failures writes a handful of events with counts, not one
event per attempt under the chain's global lock."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import User
from django.test import Client

from audit.models import AuditEvent

pytestmark = [pytest.mark.integration, pytest.mark.django_db]


def test_guessing_a_password_is_throttled(settings) -> None:  # type: ignore[no-untyped-def]
    settings.ATHENA_LOGIN_FAILURES_PER_NAME = 5
    User.objects.create_user("alice", password="the-right-password")
    client = Client()
    for attempt in range(5):
        assert not client.login(username="alice", password=f"guess-{attempt}")
    # the right password no longer helps while the name is throttled
    assert not client.login(username="alice", password="the-right-password")
    # another name from elsewhere is unaffected
    User.objects.create_user("bob", password="bobs-password")
    assert Client().login(username="bob", password="bobs-password")


def test_a_login_flood_is_audited_aggregated(settings) -> None:  # type: ignore[no-untyped-def]
    settings.ATHENA_LOGIN_FAILURES_PER_NAME = 1000
    client = Client()
    attacker_name = "=cmd|' /C calc'!A0"
    for attempt in range(25):
        client.post("/accounts/login/", {"username": attacker_name, "password": f"p{attempt}"})
    events = AuditEvent.objects.filter(kind="login_failed").order_by("id")
    assert [event.payload["count"] for event in events] == [1, 10]
    assert all(event.actor == attacker_name for event in events)


def test_a_successful_login_clears_the_name_counter(settings) -> None:  # type: ignore[no-untyped-def]
    settings.ATHENA_LOGIN_FAILURES_PER_NAME = 3
    User.objects.create_user("carol", password="carols-password")
    client = Client()
    for attempt in range(2):
        assert not client.login(username="carol", password=f"typo-{attempt}")
    assert client.login(username="carol", password="carols-password")
    client.logout()
    for attempt in range(2):
        assert not client.login(username="carol", password=f"typo-again-{attempt}")
    assert client.login(username="carol", password="carols-password")
