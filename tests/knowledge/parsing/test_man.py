"""knowledge.parsing.man: man pages rendered as text, recognised by their header line."""

from __future__ import annotations

import pytest

from knowledge.parsing import parse_file
from knowledge.parsing.man import man_rejoin_words
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


def test_words_broken_across_lines_are_whole_again():
    """groff hyphenates long words at line ends and wraps at the hyphens of compounds: a hyphenated word is
    joined when the page uses it elsewhere, a compound or option name keeps its hyphen, and no line is left
    blank (a blank line would end the paragraph)."""
    lines = [
        "       The queue manager will try to con-",
        "       tact the transport again; the contact is retried.",
        "       To stop forking use --keep-",
        "       in-foreground. A single option takes a comma-",
        "       separated list. The mode is set -",
        "       once - at start. It ends with a hyphen-",
        "       Then a capital. A lone word goes down to its tail",
        "       line: config-",
        "       uration",
        "       only if the configuration word exists; pre-",
        "       and post-processing stay apart.",
    ]
    man_rejoin_words(lines)
    assert lines == [
        "       The queue manager will try to contact",
        "       the transport again; the contact is retried.",
        "       To stop forking use --keep-in-foreground.",
        "       A single option takes a comma-separated",
        "       list. The mode is set -",
        "       once - at start. It ends with a hyphen-",
        "       Then a capital. A lone word goes down to its tail",
        "       line:",
        "       configuration",
        "       only if the configuration word exists; pre-",
        "       and post-processing stay apart.",
    ]


def test_a_man_page_wrapped_at_hyphens_reads_whole_words(tmp_path):
    page = tmp_path / "demo.8.txt"
    page.write_text(
        "DEMO(8)                          System Manager's Manual                          DEMO(8)\n\n"
        "OPTIONS\n"
        "       -k, --keep-in-foreground\n"
        "              Do not go into the background; for debugging only use --keep-\n"
        "              in-foreground. Messages are rotat-\n"
        "              ed daily; rotated files are kept.\n\n"
        "demo 1.0                               2024-01-01                              DEMO(8)\n"
    )
    text = by_text(parse_file(page).blocks, "Do not go").text
    assert "use --keep-in-foreground. Messages are rotated daily; rotated files" in text


def test_a_man_page_inside_an_html_pre_has_its_words_mended(tmp_path):
    """Some manuals ship their man pages as HTML holding the rendered page in one <pre>: it stays one block
    of code (walking it as a man page was measured, and dropped), without the running header and footer, and
    with the words groff broke across lines whole again."""
    page = tmp_path / "demo.8.html"
    page.write_text(
        "<html><head><title>Demo manual - demo(8)</title></head><body><pre>\n"
        "DEMO(8)                                                          DEMO(8)\n\n"
        "<b>NAME</b>\n"
        "       demo - demonstration daemon\n\n"
        "<b>DESCRIPTION</b>\n"
        '       The  <a href="demo.8.html"><b>demo</b>(8)</a>  daemon retries a failed con-\n'
        "       nection after <b>retry_time</b> (default: 60s); each connection is logged.\n\n"
        "                                                                 DEMO(8)\n"
        "</pre><pre>\n  apt install build-\n  essential\n</pre></body></html>"
    )
    doc = parse_file(page)
    assert doc.title == "Demo manual - demo(8)"
    man, code = doc.blocks
    assert man.kind == "code" and man.text.startswith("NAME\n")
    assert "failed connection\n       after retry_time (default: 60s)" in man.text
    assert "DEMO(8)" not in man.text
    assert code.kind == "code" and code.text == "apt install build-\nessential"  # no man page: as written
