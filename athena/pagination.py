"""Pagination that refuses absurd limits/offsets with a 400 instead of letting the database overflow."""

from __future__ import annotations

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
