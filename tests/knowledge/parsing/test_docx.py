"""knowledge.parsing.docx: core properties, headings, lists, tables; damaged files and zip bombs."""

from __future__ import annotations

import zipfile
from datetime import UTC, datetime

import pytest

from knowledge.parsing import ParseError, archive_limits_check, parse_file
from tests.knowledge.parsing.blocks import FIXTURES

pytestmark = pytest.mark.unit


@pytest.mark.slow  # unstructured's DOCX partitioner loads its NLP models on first use: ~16 s
def test_docx_core_properties_headings_lists_table():
    doc = parse_file(FIXTURES / "guide.docx")
    assert (doc.title, doc.author) == ("VPN Onboarding Guide", "Ops Team")
    assert doc.updated_at == datetime(2024, 2, 1, 8, 30, tzinfo=UTC)
    assert [(b.text, b.level) for b in doc.blocks if b.kind == "title"] == [
        ("VPN Onboarding Guide", 1),
        ("Requesting access", 2),
        ("Ports", 2),
    ]
    assert [b.kind for b in doc.blocks if "ticket" in b.text or "bundle" in b.text] == ["list_item"] * 2
    table = next(b for b in doc.blocks if b.kind == "table")
    assert table.text == "Port | Use\n--- | ---\n1194 | OpenVPN UDP\n443 | TCP fallback"
    assert table.level == 2 and table.section_path == ("VPN Onboarding Guide", "Ports")


@pytest.mark.parametrize(
    ("raw", "code"),
    [
        (b"not a zip", "corrupt"),
        (b"PK\x03\x04garbage", "corrupt"),
        (b"\xd0\xcf\x11\xe0legacy", "unsupported"),
    ],
)
def test_damaged_or_legacy_docx_is_refused(tmp_path, raw, code):
    path = tmp_path / "fake.docx"
    path.write_bytes(raw)
    with pytest.raises(ParseError) as info:
        parse_file(path)
    assert info.value.code == code


def test_archive_limits_refuse_a_zip_bomb(tmp_path):
    bomb = tmp_path / "bomb.docx"
    with zipfile.ZipFile(bomb, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("word/document.xml", b"0" * 5_000_000)  # inflates about 1000x
    with pytest.raises(ParseError) as info:
        archive_limits_check(bomb, name="bomb.docx")
    assert info.value.code == "too_large"
    with pytest.raises(ParseError) as info:
        archive_limits_check(bomb, name="bomb.docx", max_uncompressed=1_000_000)
    assert "limit 1000000 bytes" in info.value.message
    archive_limits_check(FIXTURES / "guide.docx", name="guide.docx")  # a real document passes
