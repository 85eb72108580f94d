"""knowledge.parsing.man: man pages rendered as text, recognised by their header line."""

from __future__ import annotations

import pytest

from knowledge.parsing import parse_file
from tests.knowledge.parsing.blocks import FIXTURES, by_text

pytestmark = pytest.mark.unit


def test_man_page_sections_subsections_and_definitions():
    doc = parse_file(FIXTURES / "ip-demo.8.txt")
    assert doc.title == "ip-demo - demonstration routing table management"
    assert doc.metadata["man_section"] == "8"
    top = [b.text for b in doc.blocks if b.kind == "title" and b.level == 1]
    assert top == ["NAME", "SYNOPSIS", "DESCRIPTION", "SEE ALSO"]
    sub = [b.text for b in doc.blocks if b.kind == "title" and b.level == 2]
    assert sub == ["ip demo add - add a new entry", "ip demo flush - flush entries"]
    table = by_text(doc.blocks, "TABLEID may be")
    assert table.text.startswith("table TABLEID\nthe table to add this route to.")
    assert table.section_path == ("DESCRIPTION", "ip demo add - add a new entry")
    assert by_text(doc.blocks, "dsfield").text == "tos TOS\ndsfield TOS\nthe Type Of Service (TOS) key."
    flush = by_text(doc.blocks, "flushes entries")
    assert flush.section_path == ("DESCRIPTION", "ip demo flush - flush entries")
    # the running header and footer are not content
    assert not any("IP-DEMO(8)" in b.text or "13 Dec 2012" in b.text for b in doc.blocks)
