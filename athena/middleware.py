"""Django middleware: the JSON API's errors keep the `{"error": {code, message}}` shape even where no DRF view
runs; no response of the application is kept by a cache."""

from __future__ import annotations

from collections.abc import Callable

from django.http import HttpRequest, HttpResponse, JsonResponse
from django.utils.cache import patch_cache_control

from athena.http import MAX_JSON_BODY
from athena.permissions import PayloadTooLarge, body_limit

API_PREFIX = "/api/"


def _error(status: int, code: str, message: str) -> JsonResponse:
    return JsonResponse({"error": {"code": code, "message": message}}, status=status)


class ApiErrorsMiddleware:
    """Two API errors that would otherwise be Django's HTML pages:

    - a JSON body over `MAX_JSON_BODY` is refused (413) before anything reads it. A DRF view checks the same
      limit, but for a session-authenticated caller the CSRF check parses the body first, and past Django's
      DATA_UPLOAD_MAX_MEMORY_SIZE that parse fails with an HTML 400;
    - a path under /api/ that no route matches (or a route's converter refuses, such as an upper-case UUID)
      answers a JSON 404."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        if not request.path.startswith(API_PREFIX):
            return self.get_response(request)
        if request.content_type == "application/json":
            try:
                body_limit(request, MAX_JSON_BODY)
            except PayloadTooLarge as exc:
                return _error(exc.http_status, exc.code, exc.message)
        response = self.get_response(request)
        if response.status_code == 404 and not response.get("Content-Type", "").startswith(
            "application/json"
        ):
            return _error(404, "not_found", f"no such endpoint: {request.method} {request.path}")
        return response


class NoStoreMiddleware:
    """Every response of the application (pages, API, exports, the admin) is `Cache-Control: no-store, private`
    unless its view set its own caching: they hold answers, passages, document titles and audit events that a
    shared proxy or the browser's disk cache must not keep, and that must not be shown again from a cache after
    the reader lost access. Listed after WhiteNoise, so the static files keep their long-lived caching."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        response = self.get_response(request)
        if not response.has_header("Cache-Control"):
            patch_cache_control(response, no_store=True, private=True)
        return response
