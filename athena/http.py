"""Request checks shared by every app's APIs (knowledge's document endpoints, agents' ask and feedback)."""

from __future__ import annotations

from collections.abc import Iterable

from django.http import QueryDict
from rest_framework import serializers
from rest_framework.request import Request

from athena.errors import ValidationFailed
from athena.permissions import body_limit

MAX_JSON_BODY = 64 * 1024  # the largest legitimate JSON body (a question with filters) is far below


def reject_unknown_fields(request: Request, serializer_class: type[serializers.Serializer]) -> None:
    """Unknown fields are refused rather than ignored, so a typo never silently changes nothing. Oversized
    bodies are refused before they are parsed."""
    body_limit(request, MAX_JSON_BODY)
    if not isinstance(request.data, dict):
        raise ValidationFailed("the request body must be a JSON object")
    refuse_unknown_fields(request.data, serializer_class().fields)
    if isinstance(request.data, QueryDict):  # a form's body: a field given twice would be read as its last
        refuse_repeated_params(request.data)


def refuse_unknown_params(request: Request, *serializer_classes: type[serializers.Serializer]) -> None:
    """Query-string parameters outside the fields of `serializer_classes` (and DRF's own `format`) are refused:
    a misnamed filter (`actor=` for `user=`, `page=` for `offset=`) would otherwise return the unfiltered list,
    an export of the whole audit log among them. So is a parameter given more than once."""
    allowed = {"format"}
    for serializer_class in serializer_classes:
        allowed.update(serializer_class().fields)
    refuse_unknown_fields(request.query_params.keys(), allowed)
    refuse_repeated_params(request.query_params)


def refuse_repeated_params(params: QueryDict) -> None:
    """A parameter given twice (`user=alice&user=bob`) is refused: every filter takes one value, and reading
    the last one alone would answer for bob as if both had been asked for."""
    repeated = repeated_params(params)
    if repeated:
        raise ValidationFailed(
            f"parameter(s) given more than once: {', '.join(repeated)}; each takes one value",
            details={"repeated": repeated},
        )


def repeated_params(params: QueryDict) -> list[str]:
    """The names given more than once in `params`, sorted."""
    return sorted(name for name, values in params.lists() if len(values) > 1)


def refuse_unknown_fields(given: Iterable[str], allowed: Iterable[str]) -> None:
    """Raise ValidationFailed naming every field of `given` that is not in `allowed`."""
    unknown = sorted(set(given) - set(allowed))
    if unknown:
        raise ValidationFailed(f"unknown field(s): {', '.join(unknown)}", details={"unknown": unknown})
