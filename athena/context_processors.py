"""What every page's top bar needs, whichever view rendered it (an error page, the password pages)."""

from __future__ import annotations

from functools import partial
from typing import Any

from django.http import HttpRequest

from athena.permissions import is_compliance


def navigation(request: HttpRequest) -> dict[str, Any]:
    """`is_compliance` for the top bar's Compliance link, on every page (before, the chat and compliance views
    set it themselves, so the compliance staff's link was missing on the password, 403 and 404 pages). A
    callable, which the template calls only when it shows the bar for a signed-in user (one query then, none
    otherwise)."""
    return {"is_compliance": partial(is_compliance, request.user)}
