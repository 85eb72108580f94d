"""The OpenAPI schema's errors: every operation lists the error statuses it really answers with.

Clients generate code from /api/v1/schema. Each view declares its success and its own particular errors with
`extend_schema`; the errors every endpoint shares (README "HTTP API conventions") are added here, with the one
error body, `{"error": {code, message, details?}}`, so that a 400, 401, 403, 404, 413, 415 or 503 is never a status
the schema does not know. tests/athena/test_openapi_responses.py calls every operation and holds each answer
to this schema."""

from __future__ import annotations

from typing import Any

from drf_spectacular.openapi import AutoSchema
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse
from rest_framework import serializers
from rest_framework.permissions import AllowAny, IsAuthenticated

from athena.errors import ErrorSerializer

BODY_METHODS = ("POST", "PUT", "PATCH")

COMMON_ERRORS = {
    "400": "`invalid`: a field, filter or query parameter the endpoint refuses (an unknown one, one given twice, "
    "a bad value), named in `message` and `details`; `parse_error`: a body that is not JSON",
    "401": "`not_authenticated` or `authentication_failed`: no credentials, or invalid ones "
    "(`WWW-Authenticate: Token`)",
    "403": "`permission_denied`: signed in but not allowed (the endpoint needs a role the caller lacks, or a "
    "browser session's request came without its CSRF token)",
    "404": "`not_found`: no such object, or one the caller may not read (the two are answered alike)",
    "413": "`too_large`: a JSON body over 64 KB, refused before it is read",
    "415": "`unsupported_media_type`: a body in a format the endpoint does not read (see its request body)",
    "503": "`dependency_unavailable`: the database or the message broker is not reachable right now; retry "
    "after Retry-After seconds",
}

ERROR_HEADERS = [
    OpenApiParameter(
        "Retry-After",
        int,
        OpenApiParameter.HEADER,
        response=[429, 503],
        description="seconds before the request is expected to succeed, when known",
    ),
    OpenApiParameter(
        "WWW-Authenticate",
        str,
        OpenApiParameter.HEADER,
        response=[401],
        description="`Token`: the scheme to authenticate with",
    ),
]


class AthenaAutoSchema(AutoSchema):
    """drf-spectacular's AutoSchema with the shared error responses of every operation added to those the
    view declares (a view's own description of a status wins)."""

    def get_override_parameters(self) -> list[Any]:
        # first: a view's own header of the same name (extend_schema appends it) replaces these
        return [*ERROR_HEADERS, *super().get_override_parameters()]

    def common_error_statuses(self) -> list[str]:
        """The statuses of COMMON_ERRORS this operation can answer with."""
        permissions = {type(permission) for permission in self.view.get_permissions()}
        # every endpoint refuses unknown query parameters, and any request may carry a bad token
        statuses = ["400", "401"]
        if self.method in BODY_METHODS or permissions - {AllowAny, IsAuthenticated}:
            statuses.append("403")  # a role, or a session's CSRF check
        if "{" in self.path:
            statuses.append("404")
        if self.method in BODY_METHODS:
            statuses += ["413", "415"]
        statuses.append("503")
        return statuses

    def _map_basic_serializer(self, serializer: Any, direction: Any) -> dict[str, Any]:
        result: dict[str, Any] = super()._map_basic_serializer(serializer, direction)
        if direction == "response" and isinstance(serializer, serializers.ModelSerializer):
            # a model's serializer writes every field of the row it is given (one that may be left blank, or
            # has a default, is optional in a request only): a generated client need not check for absent keys
            result["required"] = sorted(result.get("properties", {}))
        return result

    # drf-spectacular has no public hook for responses added to every operation: this private method (pinned
    # version, pyproject.toml) builds them; a change in it fails tests/athena/test_openapi_responses.py
    def _get_response_bodies(self, direction: Any = "response") -> dict[str, Any]:
        responses: dict[str, Any] = super()._get_response_bodies(direction)
        for status in self.common_error_statuses():
            if status not in responses:
                described = OpenApiResponse(ErrorSerializer, description=COMMON_ERRORS[status])
                responses[status] = self._get_response_for_code(described, status, direction=direction)
        return responses
