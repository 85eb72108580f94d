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


def test_a_line_wrapped_at_a_hyphen_keeps_the_compound_whole(tmp_path):
    """man wraps at the hyphens of option names and compound words; joined with a space they would read
    "--keep- in-foreground", which neither a search for the option nor a reader recognises."""
    page = tmp_path / "demo.8.txt"
    page.write_text(
        "DEMO(8)                          System Manager's Manual                          DEMO(8)\n\n"
        "OPTIONS\n"
        "       -k, --keep-in-foreground\n"
        "              Do not go into the background. For debugging only; to stop the daemon forking use --keep-\n"
        "              in-foreground. A single option takes a comma-\n"
        "              separated list. The mode is set - \n"
        "              once - at start. Ends with a hyphen-\n"
        "              Then a capital.\n\n"
        "demo 1.0                               2024-01-01                              DEMO(8)\n"
    )
    doc = parse_file(page)
    text = by_text(doc.blocks, "Do not go").text
    assert "use --keep-in-foreground. A single option takes a comma-separated list." in text
    # a dash between spaces, and a hyphen before a capital, are not wrapped compounds
    assert "is set - once - at start" in text
    assert "a hyphen- Then a capital." in text
