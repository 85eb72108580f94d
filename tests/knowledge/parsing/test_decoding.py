"""knowledge.parsing.decoding: BOMs and legacy encodings fall back instead of failing; binary data is refused."""

from __future__ import annotations

import codecs

import pytest

from knowledge.parsing import ParseError, parse_file

pytestmark = pytest.mark.unit


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("caf\xe9 \x96 na\xefve r\xe9sum\xe9\n".encode("latin-1"), "café – naïve résumé"),  # cp1252 dash
        (codecs.BOM_UTF16_LE + "UTF-16 text here\n".encode("utf-16-le"), "UTF-16 text here"),
        (codecs.BOM_UTF8 + b"BOM text\n", "BOM text"),
    ],
)
def test_text_encodings_fall_back_instead_of_failing(tmp_path, raw, expected):
    path = tmp_path / "enc.txt"
    path.write_bytes(raw)
    assert parse_file(path).blocks[0].text == expected


@pytest.mark.parametrize(
    ("raw", "code"),
    [
        (b"looks like text\x00\x01\x02 but is not", "binary"),  # NUL bytes
        (b"\x89PNG\r\n\x1a\n" + b"0" * 50, "binary"),  # a magic number, whatever the extension
        (bytes(range(1, 9)) * 20, "encoding"),  # decodes to mostly control characters
        (codecs.BOM_UTF8 + b"\xff\xfe broken", "encoding"),  # invalid after its BOM
    ],
)
def test_binary_and_undecodable_text_is_refused(tmp_path, raw, code):
    path = tmp_path / "data.txt"
    path.write_bytes(raw)
    with pytest.raises(ParseError) as info:
        parse_file(path)
    assert info.value.code == code


def test_html_declared_charset_is_used_when_utf8_fails(tmp_path):
    path = tmp_path / "koi.html"
    path.write_bytes('<meta charset="koi8-r"><p>Привет</p>'.encode("koi8-r"))
    assert parse_file(path).blocks[0].text == "Привет"
