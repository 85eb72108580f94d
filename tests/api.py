"""Users and API clients for the API tests."""

from __future__ import annotations

from django.contrib.auth.models import User
from rest_framework.test import APIClient

from tests.factories import UserFactory


def make_user(name: str, *groups: str, superuser: bool = False) -> User:
    """A user in `groups` (created when missing), password "pw", with fresh throttling counters: the API tests'
    shorthand for :class:`tests.factories.UserFactory`."""
    return UserFactory(username=name, groups=groups, superuser=superuser)


def client_for(user: User | None) -> APIClient:
    """An API client authenticated as `user` (anonymous for None)."""
    client = APIClient()
    if user is not None:
        client.force_authenticate(user)
    return client
