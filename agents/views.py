"""The chat page. Everything dynamic goes through the REST API with the session cookie."""

from __future__ import annotations

from django.conf import settings
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.csrf import ensure_csrf_cookie

from athena.permissions import is_kb_admin


@login_required
@ensure_csrf_cookie
def chat_page(request: HttpRequest) -> HttpResponse:
    return render(
        request,
        "agents/chat.html",
        {
            "max_question_chars": settings.ATHENA_MAX_QUESTION_CHARS,
            "upload_ttl_hours": settings.ATHENA_UPLOAD_TTL_HOURS,
            "is_admin": is_kb_admin(request.user),
        },
    )
