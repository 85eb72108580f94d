"""knowledge.parsing.common: the typed error and metadata dates."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

import pytest

from knowledge.parsing import ParseError
from knowledge.parsing.common import parse_date

pytestmark = pytest.mark.unit


def test_parse_error_rejects_unknown_codes():
    error = ParseError("binary", "x")
    assert error.code == "binary" and "binary" in str(error)
    with pytest.raises(ValueError, match="valid"):
        ParseError("oops", "x")


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("D:20240315093000+01'00'", datetime(2024, 3, 15, 9, 30, tzinfo=timezone(timedelta(hours=1)))),
        ("2024-05-20", datetime(2024, 5, 20, tzinfo=UTC)),
        ("Tue, 05 Nov 2023 10:00:00 +0000", datetime(2023, 11, 5, 10, 0, tzinfo=UTC)),
        ("20 May 2024", datetime(2024, 5, 20, tzinfo=UTC)),
        ("not a date", None),
        ("", None),
    ],
)
def test_metadata_dates(value, expected):
    assert parse_date(value) == expected
