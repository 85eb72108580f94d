"""Sign-in with throttling: after too many recent failures for a login name or from an address, the password
is not even checked (athena.throttling.login_attempt_count)."""

from __future__ import annotations

import math
from typing import Any

from django import forms
from django.contrib.auth.backends import ModelBackend
from django.contrib.auth.forms import AuthenticationForm

from athena.throttling import login_attempt_count, login_attempt_succeeded, login_blocked_seconds


def client_address(request: Any) -> str:
    return str(request.META.get("REMOTE_ADDR", "")) if request is not None else ""


class ThrottledModelBackend(ModelBackend):
    def authenticate(
        self, request: Any, username: str | None = None, password: str | None = None, **kwargs: Any
    ) -> Any:
        if username is None:
            return super().authenticate(request, username=username, password=password, **kwargs)
        address = client_address(request)
        # counted before the password is checked (a refused or failed attempt stays counted; Django then fires
        # user_login_failed, which audits it), so that a burst of guesses sent at once is held to the limit
        if not login_attempt_count(str(username), address):
            return None
        user = super().authenticate(request, username=username, password=password, **kwargs)
        if user is not None:
            login_attempt_succeeded(str(username), address)
        return user


class ThrottledAuthenticationForm(AuthenticationForm):
    """The sign-in form: a name or address over its failure limit is told so, and for how long (it read
    "didn't match", so a blocked user kept retrying the right password)."""

    error_messages = {
        **AuthenticationForm.error_messages,
        "invalid_login": "Your user name and password didn't match. Please try again.",
        "blocked": "Too many failed sign-ins for this user name or from this address. Try again in %(minutes)s.",
    }

    def clean(self) -> dict[str, Any]:
        try:
            return super().clean()
        except forms.ValidationError:
            # the failure has been counted and audited by now (user_login_failed)
            seconds = login_blocked_seconds(
                str(self.cleaned_data.get("username") or ""), client_address(self.request)
            )
            if seconds:
                minutes = math.ceil(seconds / 60)
                raise forms.ValidationError(
                    self.error_messages["blocked"],
                    code="blocked",
                    params={"minutes": f"{minutes} minute{'s' if minutes != 1 else ''}"},
                ) from None
            raise
