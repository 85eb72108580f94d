"""knowledge.parsing.registry: one parser per document type, dispatch by extension, and what parse_file
does for every format (size limits, unsupported files, fallbacks for dates and titles)."""

from __future__ import annotations

import os
from datetime import UTC, datetime
from pathlib import Path

import pytest

from knowledge.parsing import ParseError, parse_file
from knowledge.parsing.registry import (
    EXTENSIONS,
    PARSERS,
    UNSUPPORTED_EXTENSIONS,
    document_type,
    parser_for,
    parser_register,
)
from tests.knowledge.parsing.blocks import FIXTURES

pytestmark = pytest.mark.unit

SUPPORTED = {"html": "html", "markdown": "markdown", "text": "text", "pdf": "pdf", "docx": "docx"}


def test_every_supported_type_has_exactly_one_parser_in_its_own_module():
    assert set(PARSERS) == set(SUPPORTED)
    for doc_type, parser in PARSERS.items():
        assert parser.__module__ == f"knowledge.parsing.{SUPPORTED[doc_type]}"
    assert set(EXTENSIONS.values()) == set(PARSERS)  # every parser claims an extension
    assert not set(EXTENSIONS) & UNSUPPORTED_EXTENSIONS


def test_a_second_parser_for_a_type_or_an_extension_is_refused():
    before = (dict(PARSERS), dict(EXTENSIONS))
    with pytest.raises(ValueError, match="already has a parser"):
        parser_register("html", extensions=(".html5",))(PARSERS["html"])
    with pytest.raises(ValueError, match="already taken"):
        parser_register("hypertext", extensions=(".HTM",))(PARSERS["html"])
    with pytest.raises(ValueError, match="already taken"):
        parser_register("rich", extensions=(".rtf",))(PARSERS["text"])
    assert before == (PARSERS, EXTENSIONS)  # a refused registration changes nothing


@pytest.mark.parametrize(
    ("name", "doc_type"),
    [
        ("resolver.html", "html"),
        ("page.HTM", "html"),
        ("sop.md", "markdown"),
        ("runbook.pdf", "pdf"),
        ("guide.docx", "docx"),
        ("lb-pool.8.txt", "text"),
        ("README", "text"),
        ("README.Debian", "text"),  # unknown extensions are sniffed and parsed as text
        ("tidesync.conf.example1", "text"),
    ],
)
def test_document_type_by_extension(name, doc_type):
    assert document_type(Path(name)) == doc_type


def test_parsed_format_is_the_document_type():
    for name in ("resolver.html", "sop-dns-failover.md", "runbook-notes.txt", "ip-demo.8.txt", "runbook.pdf"):
        assert parse_file(FIXTURES / name).metadata["format"] == document_type(FIXTURES / name)


def test_unknown_type_raises_the_unsupported_error(tmp_path):
    sheet = tmp_path / "table.xlsx"
    sheet.write_bytes(b"PK\x03\x04 whatever")
    with pytest.raises(ParseError) as info:
        parse_file(sheet)
    assert (info.value.code, info.value.message) == ("unsupported", ".xlsx files are not supported")
    with pytest.raises(ParseError) as info:
        parser_for("rtf")
    assert info.value.code == "unsupported"
    assert "docx, html, markdown, pdf, text" in info.value.message  # names the valid types


def test_file_level_errors(tmp_path):
    empty = tmp_path / "empty.txt"
    empty.write_bytes(b"")
    big = tmp_path / "big.txt"
    big.write_text("x" * 200)
    for path, kwargs, code in (
        (empty, {}, "empty"),
        (big, {"max_bytes": 100}, "too_large"),
        (tmp_path, {}, "unsupported"),
    ):
        with pytest.raises(ParseError) as info:
            parse_file(path, **kwargs)
        assert info.value.code == code


def test_missing_file_is_an_os_error(tmp_path):
    with pytest.raises(FileNotFoundError):
        parse_file(tmp_path / "nope.txt")


def test_updated_at_falls_back_to_file_mtime(tmp_path):
    path = tmp_path / "plain.txt"
    path.write_text("Just text.\n")
    stamp = datetime(2022, 6, 1, 12, 0, tzinfo=UTC).timestamp()
    os.utime(path, (stamp, stamp))
    assert parse_file(path).updated_at == datetime(2022, 6, 1, 12, 0, tzinfo=UTC)


def test_title_falls_back_to_the_file_name(tmp_path):
    for name, title in (("notes.text", "notes"), ("plain-page.htm", "plain-page"), ("README", "README")):
        path = tmp_path / name
        path.write_text("just a sentence.\n")
        assert parse_file(path).title == title
