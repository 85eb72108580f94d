"""Compliance API: search, one event, CSV/JSONL export, chain status."""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Iterator
from dataclasses import asdict
from typing import Any

from django.http import StreamingHttpResponse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema, extend_schema_field
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from athena.http import refuse_unknown_params
from athena.pagination import MAX_OFFSET, paged_schema
from athena.permissions import IsCompliance
from audit.models import AuditEvent
from audit.selectors import (
    EXPORT_COLUMNS,
    AuditQuery,
    audit_event_as_dict,
    audit_event_get,
    audit_event_search,
    audit_event_search_page,
)
from audit.services import audit_record, audit_verify

# the code of the rule that a search's first day is not after its last (the compliance page words it by its labels)
SINCE_AFTER_UNTIL = "since_after_until"


class AuditQuerySerializer(serializers.Serializer):
    user = serializers.CharField(required=False, allow_blank=True, max_length=150)
    # days are UTC days, as every time the audit log shows (the server's TIME_ZONE is UTC)
    since = serializers.DateField(
        required=False, allow_null=True, help_text="a UTC day, YYYY-MM-DD: events from its 00:00 UTC"
    )
    until = serializers.DateField(
        required=False,
        allow_null=True,
        help_text="a UTC day, YYYY-MM-DD, included: events up to its 24:00 UTC (9999-12-31: no end)",
    )
    document = serializers.CharField(required=False, allow_blank=True, max_length=1000)
    verdict = serializers.CharField(required=False, allow_blank=True, max_length=30)
    kind = serializers.CharField(required=False, allow_blank=True, max_length=50)
    text = serializers.CharField(required=False, allow_blank=True, max_length=200)

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        if attrs.get("since") and attrs.get("until") and attrs["since"] > attrs["until"]:
            raise serializers.ValidationError("'since' is after 'until'", code=SINCE_AFTER_UNTIL)
        return attrs


def audit_query_from(params: Any) -> AuditQuery:
    serializer = AuditQuerySerializer(data=params)
    serializer.is_valid(raise_exception=True)
    return AuditQuery(**{k: v for k, v in serializer.validated_data.items() if v not in (None, "")})


@extend_schema_field({"type": "array", "items": {"type": "string"}, "description": "source ids involved"})
class SourceIdsField(serializers.JSONField):
    """`documents`: audit_record stores a sorted list of source ids (the JSON column itself takes anything)."""


@extend_schema_field({"type": "object", "additionalProperties": {}})
class PayloadField(serializers.JSONField):
    """`payload`: audit_record stores an object whose keys depend on the event's kind."""


class AuditEventSerializer(serializers.ModelSerializer):
    # typed for the schema (a JSON column is "any value" there); what is sent is unchanged
    documents = SourceIdsField()
    payload = PayloadField()

    class Meta:
        model = AuditEvent
        fields = EXPORT_COLUMNS


class AuditSearchApi(APIView):
    permission_classes = [IsCompliance]

    class AuditSearchPageSerializer(serializers.Serializer):
        limit = serializers.IntegerField(required=False, min_value=1, max_value=500, default=50)
        # bounded: past the database's bigint the OFFSET failed with a message that named no parameter
        offset = serializers.IntegerField(required=False, min_value=0, max_value=MAX_OFFSET, default=0)

    @extend_schema(
        operation_id="audit_events_list",
        parameters=[AuditQuerySerializer, AuditSearchPageSerializer],
        responses=paged_schema("AuditEventPage", AuditEventSerializer),
    )
    def get(self, request: Request) -> Response:
        refuse_unknown_params(request, AuditQuerySerializer, self.AuditSearchPageSerializer)
        query = audit_query_from(request.query_params)
        page = self.AuditSearchPageSerializer(data=request.query_params)
        page.is_valid(raise_exception=True)
        limit, offset = page.validated_data["limit"], page.validated_data["offset"]
        total, events = audit_event_search_page(query=query, offset=offset, limit=limit)
        return Response(
            {
                "count": total,
                "limit": limit,
                "offset": offset,
                "results": AuditEventSerializer(events, many=True).data,
            }
        )


class AuditEventApi(APIView):
    permission_classes = [IsCompliance]

    @extend_schema(responses=AuditEventSerializer)
    def get(self, request: Request, event_id: int) -> Response:
        refuse_unknown_params(request)
        return Response(AuditEventSerializer(audit_event_get(event_id=event_id)).data)


# A spreadsheet runs a cell that starts with one of these as a formula ("=HYPERLINK(...)" as a user name).
FORMULA_PREFIXES = ("=", "+", "-", "@", "\t", "\r")


def csv_cell(value: Any) -> Any:
    """A CSV cell that a spreadsheet shows as text: a leading formula character gets a quote before it."""
    if isinstance(value, str) and value.startswith(FORMULA_PREFIXES):
        return "'" + value
    return value


def _csv_rows(events: Any) -> Iterator[str]:
    buffer = io.StringIO()
    writer = csv.writer(buffer)
    writer.writerow(EXPORT_COLUMNS)
    for event in events.iterator(chunk_size=1000):
        row = audit_event_as_dict(event)
        writer.writerow(
            [
                csv_cell(json.dumps(row[c], sort_keys=True) if isinstance(row[c], dict | list) else row[c])
                for c in EXPORT_COLUMNS
            ]
        )
        yield buffer.getvalue()
        buffer.seek(0)
        buffer.truncate()
    yield buffer.getvalue()


def _jsonl_rows(events: Any) -> Iterator[str]:
    for event in events.iterator(chunk_size=1000):
        yield json.dumps(audit_event_as_dict(event), sort_keys=True, ensure_ascii=False) + "\n"


class AuditExportApi(APIView):
    """Every matching event, oldest first, as CSV or JSON Lines (the export itself is audited)."""

    permission_classes = [IsCompliance]

    @extend_schema(
        parameters=[
            AuditQuerySerializer,
            OpenApiParameter("fmt", str, OpenApiParameter.PATH, enum=["csv", "jsonl"]),
        ],
        # one media type per format: a client reading the CSV as JSON (the schema's default) fails
        responses={(200, "text/csv"): OpenApiTypes.STR, (200, "application/x-ndjson"): OpenApiTypes.STR},
    )
    def get(self, request: Request, fmt: str) -> StreamingHttpResponse:
        refuse_unknown_params(request, AuditQuerySerializer)  # every matching event: no limit or offset
        query = audit_query_from(request.query_params)
        events = audit_event_search(query=query).order_by("id")
        audit_record(
            kind="audit_export",
            actor=request.user,
            payload={"format": fmt, "query": {k: str(v) for k, v in query.__dict__.items() if v}},
        )
        if fmt == "csv":
            response = StreamingHttpResponse(_csv_rows(events), content_type="text/csv; charset=utf-8")
        else:
            response = StreamingHttpResponse(_jsonl_rows(events), content_type="application/x-ndjson")
        response["Content-Disposition"] = f'attachment; filename="athena-audit.{fmt}"'
        return response


class ChainStatusSerializer(serializers.Serializer):
    ok = serializers.BooleanField()
    checked = serializers.IntegerField()
    first_broken_id = serializers.IntegerField(allow_null=True)
    reason = serializers.CharField()
    problems = serializers.ListField(child=serializers.CharField())
    checkpoint_event_id = serializers.IntegerField(allow_null=True)


class AuditChainApi(APIView):
    permission_classes = [IsCompliance]

    @extend_schema(responses=ChainStatusSerializer)
    def get(self, request: Request) -> Response:
        refuse_unknown_params(request)  # `since=` would verify the whole chain as if it had been asked
        report = audit_verify()
        return Response(ChainStatusSerializer(asdict(report)).data)
