from __future__ import annotations

from drf_spectacular.utils import OpenApiParameter, extend_schema, inline_serializer
from rest_framework import serializers
from rest_framework.permissions import AllowAny
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from athena.errors import ValidationFailed
from athena.health import health_report
from athena.http import refuse_repeated_params, refuse_unknown_fields


def health_fields() -> dict[str, serializers.Field]:
    """The health body's fields: `components` (versions, hosts, errors) only for staff; everyone else gets the
    status alone. New instances per call: drf-spectacular's inline_serializer consumes the dict it is given
    (the serializer metaclass pops the fields), and a shared dict left the 503 response without a body in
    the schema."""
    return {"status": serializers.CharField(), "components": serializers.DictField(required=False)}


class HealthApi(APIView):
    """Component status; reports which component is down instead of failing. Anyone (a load balancer) gets
    the overall status; only staff get the components, whose details name versions, hosts and errors."""

    permission_classes = [AllowAny]

    @extend_schema(
        responses={
            200: inline_serializer("Health", health_fields()),
            503: inline_serializer("HealthDegraded", health_fields()),
        },
        parameters=[
            OpenApiParameter(
                "workers",
                str,
                enum=["true", "false"],
                description="false: the web process's own readiness only (database, pgvector, Redis)",
            )
        ],
    )
    def get(self, request: Request) -> Response:
        # ?workers=false: the web process's own readiness (database, pgvector, Redis), for probes that must
        # not take every web server out of service when the workers are down
        refuse_unknown_fields(request.query_params.keys(), {"workers", "format"})
        refuse_repeated_params(request.query_params)
        workers = request.query_params.get("workers", "true").lower()
        if workers not in ("true", "false"):
            # "0" or "no" read as true would take every web server out of service when the workers are down
            raise ValidationFailed(
                f"workers must be true or false, got {workers!r}", details={"workers": workers}
            )
        report = health_report(include_workers=workers == "true")
        code = 200 if report["status"] == "ok" else 503
        if not (request.user and request.user.is_staff):
            return Response({"status": report["status"]}, status=code)  # details (versions, hosts) for staff
        return Response(report, status=code)
