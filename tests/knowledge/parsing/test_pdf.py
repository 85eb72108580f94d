"""knowledge.parsing.pdf: pages, font-size headings, lists, document info, damage and inflation limits."""

from __future__ import annotations

import zlib
from datetime import datetime, timedelta, timezone

import pytest

from knowledge.parsing import ParseError, parse_file, pdf_inflate_check
from tests.knowledge.parsing.blocks import FIXTURES, by_text

pytestmark = pytest.mark.unit


def test_pdf_pages_headings_lists_and_info():
    doc = parse_file(FIXTURES / "runbook.pdf")
    assert doc.title == "DNS Failover Runbook"
    assert doc.author == "Network Operations"
    assert doc.updated_at == datetime(2024, 3, 15, 9, 30, tzinfo=timezone(timedelta(hours=1)))
    assert doc.metadata["pages"] == 2
    titles = [(b.text, b.level, b.page) for b in doc.blocks if b.kind == "title"]
    assert titles == [
        ("DNS Failover Runbook", 1, 1),
        ("Preparation", 2, 1),
        ("Failover procedure", 2, 2),
    ]
    items = [b.text for b in doc.blocks if b.kind == "list_item"]
    assert items == [
        "Confirm that keepalived runs on both nodes.",
        "Confirm that VRRP advertisements arrive.",
    ]
    stop = by_text(doc.blocks, "Stop keepalived")
    assert stop.page == 2 and stop.section_path == ("DNS Failover Runbook", "Failover procedure")


def test_damaged_pdfs_are_corrupt(tmp_path):
    fake = tmp_path / "fake.pdf"
    fake.write_text("not a pdf at all")
    for path in (FIXTURES / "corrupt.pdf", fake):
        with pytest.raises(ParseError) as info:
            parse_file(path)
        assert info.value.code == "corrupt"


def test_pdf_page_limit(tmp_path):
    with pytest.raises(ParseError) as info:
        parse_file(FIXTURES / "runbook.pdf", max_pdf_pages=1)
    assert info.value.code == "too_large"


def test_pdf_inflate_check_stops_at_the_budget():
    stream = b"1 0 obj\n<< /Filter /FlateDecode >>\nstream\n" + zlib.compress(b"0" * 100_000) + b"\nendstream"
    pdf_inflate_check(stream, name="ok.pdf", max_uncompressed=100_000)
    with pytest.raises(ParseError) as info:
        pdf_inflate_check(stream, name="bomb.pdf", max_uncompressed=99_999)
    assert info.value.code == "too_large"
