"""knowledge.parsing.man: man pages rendered as text, recognised by their header line."""

from __future__ import annotations

import pytest

from knowledge.parsing import parse_file
from knowledge.parsing.man import man_rejoin_words
from tests.knowledge.parsing.blocks import FIXTURES, by_text

pytestmark = pytest.mark.unit


def test_man_page_sections_subsections_and_definitions():
    doc = parse_file(FIXTURES / "ip-demo.8.txt")
    assert doc.title == "ip-demo - demonstration pool table administration"
    assert doc.metadata["man_section"] == "8"
    top = [b.text for b in doc.blocks if b.kind == "title" and b.level == 1]
    assert top == ["NAME", "SYNOPSIS", "DESCRIPTION", "SEE ALSO"]
    sub = [b.text for b in doc.blocks if b.kind == "title" and b.level == 2]
    assert sub == ["ip demo add - create a record", "ip demo flush - drop records"]
    table = by_text(doc.blocks, "POOLID may be")
    assert table.text.startswith("pool POOLID\nthe pool to place this record in.")
    assert table.section_path == ("DESCRIPTION", "ip demo add - create a record")
    assert by_text(doc.blocks, "dsfield").text == "tos TOS\ndsfield TOS\nthe traffic class (TOS) byte."
    flush = by_text(doc.blocks, "drops records")
    assert flush.section_path == ("DESCRIPTION", "ip demo flush - drop records")
    # the running header and footer are not content
    assert not any("IP-DEMO(8)" in b.text or "13 Dec 2012" in b.text for b in doc.blocks)


def test_words_broken_across_lines_are_whole_again():
    """groff hyphenates long words at line ends and wraps at the hyphens of compounds: a hyphenated word is
    joined when the page uses it elsewhere, a compound or option name keeps its hyphen, and no line is left
    blank (a blank line would end the paragraph)."""
    lines = [
        "       The queue manager will try to con-",
        "       tact the transport again; the contact is retried.",
        "       To stop forking use --hold-",
        "       in-foreground. A single option takes a comma-",
        "       separated set. The mode is set -",
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
        "       To stop forking use --hold-in-foreground.",
        "       A single option takes a comma-separated",
        "       set. The mode is set -",
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
        "DEMO(8)                          Relay Operator's Manual                          DEMO(8)\n\n"
        "OPTIONS\n"
        "       -f, --hold-in-foreground\n"
        "              Stay attached to the terminal; for debugging only use --hold-\n"
        "              in-foreground. Messages are rotat-\n"
        "              ed daily; rotated files are kept.\n\n"
        "demo 1.0                               2024-01-01                              DEMO(8)\n"
    )
    text = by_text(parse_file(page).blocks, "Stay attached").text
    assert "use --hold-in-foreground. Messages are rotated daily; rotated files" in text


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


def test_a_man_pages_examples_keep_their_lines(tmp_path):
    """A man page indents everything, so an example is the paragraph set deeper than the one above it: its
    lines stay lines (a configuration, commands continued with '\\'). A deeper paragraph of prose, a deeper
    list, a term above its description, one line alone, or the first paragraph under a heading is not an
    example."""
    page = tmp_path / "relayd.5.txt"
    page.write_text(
        "RELAYD(5)                        File Formats Manual                        RELAYD(5)\n\n"
        "EXAMPLES\n"
        "       With three relays, your relayd.conf could contain:\n\n"
        "           relay alpha.example.net offline\n"
        "           relay beta.example.net offline\n"
        "           spooldir /var/spool/relayd\n\n"
        "       A filter that sends marked packets to the second queue:\n\n"
        "           relayctl shaper put link lan0 under 7: \\\n"
        "               mark 0x2a queue 2\n\n"
        "       The spool directory must exist before the daemon starts:\n\n"
        "           It is not created for you, and the daemon stops at once when it\n"
        "           is missing, with a message in the system log.\n\n"
        "       The following relays can be named:\n\n"
        "           o alpha for the first site\n"
        "           o beta for the second site\n\n"
        "       Only one is needed:\n\n"
        "           relay alpha.example.net\n\n"
        "       Options\n\n"
        "              spool path\n"
        "                     Spool directory (absolute path) required\n\n"
        "FILES\n"
        "       /etc/relayd.conf\n"
        "       /var/spool/relayd\n\n"
        "relayd 1.0                               2024-01-01                              RELAYD(5)\n"
    )
    blocks = parse_file(page).blocks
    config = by_text(blocks, "relay alpha.example.net offline")
    assert (config.kind, config.marked, config.text) == (
        "code",
        True,  # a line of it is code in an answer whatever it reads as ("relay alpha.example.net offline")
        "relay alpha.example.net offline\nrelay beta.example.net offline\nspooldir /var/spool/relayd",
    )
    command = by_text(blocks, "relayctl shaper put")
    assert command.kind == "code"
    assert command.text.splitlines()[0] == "relayctl shaper put link lan0 under 7: \\"
    prose = by_text(blocks, "It is not created for you")
    assert (prose.kind, prose.text.count("\n")) == ("text", 0)
    assert [b.kind for b in blocks if "site" in b.text] == ["list_item", "list_item"]
    assert [b.kind for b in blocks if b.text == "relay alpha.example.net"] == ["text"]
    # a term with its description set deeper under it is a definition, not an example
    assert by_text(blocks, "Spool directory (absolute path)").kind == "text"
    assert by_text(blocks, "/etc/relayd.conf").kind == "text"


def test_a_table_drawn_with_box_characters_is_a_table(tmp_path):
    """groff draws a man page's tables with box characters: a line with an empty first cell goes on with the
    row above (a cell wrapped over lines reads as one), a spacer line adds nothing, the rows above the first
    inner rule are the header, and a caption right above the table stays text."""
    page = tmp_path / "relayctl.8.txt"
    page.write_text(
        "RELAYCTL(8)                      Relay Operator's Manual                      RELAYCTL(8)\n\n"
        "QUEUES\n"
        "       Table 3. Queue keywords\n"
        "       ┌─────────┬──────────────────────┬───────┐\n"
        "       │Keyword  │ Description          │ Value │\n"
        "       ├─────────┼──────────────────────┼───────┤\n"
        "       │         │                      │       │\n"
        "       │bulk     │ mail that can wait   │ 0     │\n"
        "       ├─────────┼──────────────────────┼───────┤\n"
        "       │urgent   │ pages the on-call    │ 7     │\n"
        "       │         │ engineer at once     │       │\n"
        "       │relay    │ the default route    │ 3     │\n"
        "       └─────────┴──────────────────────┴───────┘\n"
        "       The default queue is bulk.\n\n"
        "relayctl 1.0                             2024-01-01                            RELAYCTL(8)\n"
    )
    blocks = parse_file(page).blocks
    table = next(b for b in blocks if b.kind == "table")
    assert table.text.split("\n") == [
        "Keyword | Description | Value",
        "--- | --- | ---",
        "bulk | mail that can wait | 0",
        "urgent | pages the on-call engineer at once | 7",
        "relay | the default route | 3",  # (no rule above it: its first cell starts the row)
    ]
    assert [b.text for b in blocks if b.kind == "text"] == [
        "Table 3. Queue keywords",
        "The default queue is bulk.",
    ]
    assert not any("│" in b.text or "─" in b.text for b in blocks)
