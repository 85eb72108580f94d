"""The API's JSON parser: DRF's, except that an object naming one key twice is refused."""

from __future__ import annotations

import codecs
from collections.abc import Mapping
from typing import Any

from rest_framework.exceptions import ParseError
from rest_framework.parsers import JSONParser, get_encoding
from rest_framework.utils import json


def _object_without_repeats(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    # JSON leaves a repeated key to the parser, and Python keeps the last value: {"vote": "up", "vote": "down"}
    # recorded "down" for a client that may have meant either
    data: dict[str, Any] = {}
    for key, value in pairs:
        if key in data:
            raise ValueError(f"key {key!r} is given more than once in one object")
        data[key] = value
    return data


class StrictJSONParser(JSONParser):
    def parse(
        self, stream: Any, media_type: str | None = None, parser_context: Mapping[str, Any] | None = None
    ) -> Any:
        encoding = get_encoding(parser_context or {})
        try:
            decoded = codecs.getreader(encoding)(stream)
            parse_constant = json.strict_constant if self.strict else None
            return json.load(
                decoded, parse_constant=parse_constant, object_pairs_hook=_object_without_repeats
            )
        except ValueError as exc:
            raise ParseError(f"JSON parse error - {exc}") from None
