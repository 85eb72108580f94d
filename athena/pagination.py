"""Pagination that refuses absurd limits/offsets with a 400 instead of letting the database overflow."""

from __future__ import annotations

from drf_spectacular.utils import inline_serializer
from rest_framework import serializers
from rest_framework.exceptions import ValidationError
from rest_framework.pagination import LimitOffsetPagination
from rest_framework.request import Request

MAX_OFFSET = 1_000_000


class BoundedLimitOffsetPagination(LimitOffsetPagination):
    max_limit = 500

    def get_offset(self, request: Request) -> int:
        raw = request.query_params.get(self.offset_query_param)
        if raw is not None:
            try:
                value = int(raw)
            except ValueError:
                raise ValidationError({"offset": "must be an integer"}) from None
            if value < 0 or value > MAX_OFFSET:
                raise ValidationError({"offset": f"must be between 0 and {MAX_OFFSET}"})
        return super().get_offset(request)


class PageParams(serializers.Serializer):
    """`limit` and `offset` query parameters, bounded (the list APIs that slice a queryset themselves)."""

    limit = serializers.IntegerField(required=False, min_value=1, max_value=500)
    offset = serializers.IntegerField(required=False, min_value=0, max_value=MAX_OFFSET, default=0)


def page_params(request: Request, *, default_limit: int = 50) -> tuple[int, int]:
    """(limit, offset) from the query string; a bad value is a 400 naming it."""
    params = PageParams(data=request.query_params)
    params.is_valid(raise_exception=True)
    return params.validated_data.get("limit", default_limit), params.validated_data["offset"]


def paged_schema(name: str, item: type[serializers.Serializer]) -> serializers.Serializer:
    """The OpenAPI shape of a page: `{count, limit, offset, results: [item]}`."""
    return inline_serializer(
        name=name,
        fields={
            "count": serializers.IntegerField(),
            "limit": serializers.IntegerField(),
            "offset": serializers.IntegerField(),
            "results": item(many=True),
        },
    )
