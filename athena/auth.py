"""Sign-in with throttling: after too many recent failures for a login name or from an address, the password
is not even checked (athena.throttling.login_blocked)."""

from __future__ import annotations

from typing import Any

from django.contrib.auth.backends import ModelBackend

from athena.throttling import login_blocked


def client_address(request: Any) -> str:
    return str(request.META.get("REMOTE_ADDR", "")) if request is not None else ""


class ThrottledModelBackend(ModelBackend):
    def authenticate(
        self, request: Any, username: str | None = None, password: str | None = None, **kwargs: Any
    ) -> Any:
        if username is not None and login_blocked(str(username), client_address(request)):
            return None  # Django then fires user_login_failed, which counts and audits the attempt
        return super().authenticate(request, username=username, password=password, **kwargs)
