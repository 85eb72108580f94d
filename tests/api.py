"""Users and API clients for the API tests."""

from __future__ import annotations

from django.contrib.auth.models import Group, User
from rest_framework.test import APIClient

from athena import throttling


def make_user(name: str, *groups: str, superuser: bool = False) -> User:
    """A user in `groups` (created when missing) with fresh throttling counters."""
    user = User.objects.create_user(name, password="pw", is_superuser=superuser, is_staff=superuser)
    for group in groups:
        user.groups.add(Group.objects.get_or_create(name=group)[0])
    throttling.user_counters_clear(user)
    return user


def client_for(user: User | None) -> APIClient:
    """An API client authenticated as `user` (anonymous for None)."""
    client = APIClient()
    if user is not None:
        client.force_authenticate(user)
    return client
