"""Small site-wide pages: the favicon redirect and the API reference (Redoc) kept on this host."""

from __future__ import annotations

from typing import Any

from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.templatetags.static import static
from drf_spectacular.utils import extend_schema
from drf_spectacular.views import SpectacularRedocView

# Redoc's bundle always draws its vendor's logo from the vendor's CDN. The product runs offline and promises
# that no page contacts another host, so the browser is told to load nothing from elsewhere (the logo's <img>
# then removes itself). Redoc needs inline styles, its inline start-up script and a blob: worker for search.
REDOC_CONTENT_SECURITY_POLICY = (
    "default-src 'self'; img-src 'self' data:; style-src 'self' 'unsafe-inline'; "
    "script-src 'self' 'unsafe-inline' blob:; worker-src 'self' blob:; connect-src 'self'; font-src 'self' data:"
)


def favicon(request: HttpRequest) -> HttpResponse:
    """Browsers ask for /favicon.ico on pages that name no icon (the API's JSON, Redoc): send them to ours."""
    return HttpResponseRedirect(static("agents/favicon.svg"))


class RedocPage(SpectacularRedocView):
    template_name = "api/redoc.html"

    @extend_schema(exclude=True)  # a page about the API, not part of it
    def get(self, request: Any, *args: Any, **kwargs: Any) -> Any:
        response = super().get(request, *args, **kwargs)
        response["Content-Security-Policy"] = REDOC_CONTENT_SECURITY_POLICY
        return response
