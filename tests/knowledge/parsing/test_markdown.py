"""knowledge.parsing.markdown: front matter, rendering through the HTML walker, title from the first H1."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from knowledge.parsing import ParseError, parse_file
from tests.knowledge.parsing.blocks import FIXTURES, by_text

pytestmark = pytest.mark.unit


def test_markdown_front_matter_becomes_metadata_and_leaves_the_text():
    doc = parse_file(FIXTURES / "sop-dns-failover.md")
    assert doc.title == "DNS Failover SOP"
    assert doc.author == "Network Operations"
    assert doc.updated_at == datetime(2024, 3, 1, tzinfo=UTC)
    for key, value in {
        "doc_type": "sop",
        "department": "netops",
        "vendor": "ISC",
        "review_by": "2025-01-31",
        "access_tier": "internal",
        "tags": ["dns", "failover"],
    }.items():
        assert doc.metadata[key] == value
    assert doc.metadata["format"] == "markdown"
    # (a table's rule line under its header is the parser's own "--- | ---")
    assert not any("doc_type" in b.text or "---" in b.text for b in doc.blocks if b.kind != "table")


def test_markdown_structure_links_steps_table_code():
    doc = parse_file(FIXTURES / "sop-dns-failover.md")
    assert doc.links == ["keepalived-guide.md", "https://www.isc.org/bind/"]
    steps = [b for b in doc.blocks if b.kind == "list_item" and b.section_path[-1] == "Procedure"]
    assert [s.text[:3] for s in steps] == ["1. ", "2. ", "3. "]
    table = next(b for b in doc.blocks if b.kind == "table")
    assert table.text.splitlines()[0] == "Check | Expected"
    assert table.level == 2  # one header row and the rule line under it
    assert table.section_path == ("DNS failover", "Procedure", "Verification")
    code = next(b for b in doc.blocks if b.kind == "code")
    assert code.text.startswith("$ dig +short")
    # a level-2 heading after a level-3 one pops the trail back
    rollback = by_text(doc.blocks, "Start keepalived")
    assert rollback.section_path == ("DNS failover", "Rollback")


def test_markdown_without_front_matter_takes_title_from_first_h1(tmp_path):
    path = tmp_path / "notes.md"
    path.write_text("Intro line.\n\n# Real Title\n\nBody text.\n\n## Part\n\nMore.\n", encoding="utf-8")
    doc = parse_file(path)
    assert doc.title == "Real Title"
    assert doc.metadata == {"format": "markdown"}
    assert by_text(doc.blocks, "More.").section_path == ("Real Title", "Part")


def test_markdown_malformed_front_matter_falls_back_to_key_value_lines(tmp_path):
    path = tmp_path / "broken.md"
    path.write_text("---\ntitle: Broken: yes\ndepartment: ops\n  - : [\n---\n\nText.\n", encoding="utf-8")
    doc = parse_file(path)
    assert doc.metadata["department"] == "ops"
    assert doc.title == "Broken: yes"


def test_markdown_with_only_front_matter_is_empty(tmp_path):
    blank = tmp_path / "blank.md"
    blank.write_text("---\ntitle: x\n---\n\n   \n")
    with pytest.raises(ParseError) as info:
        parse_file(blank)
    assert info.value.code == "empty"


def test_markdown_placeholders_in_angle_brackets_stay_text(tmp_path):
    path = tmp_path / "runbook.md"
    path.write_text(
        "# Tunnels\n\n"
        "Gateways are named GW-BR-<nnn> and tunnels TUN-BR-<nnn>, where <nnn> is the branch number.\n\n"
        "Close the record BG-<year>-<nn>. Rules follow <FWR-id>-<short-description>.\n\n"
        "Then ping <address> from the jump host, or run `ssh <user>@<host>`.\n\n"
        "Real markup still is markup: <b>bold</b> text.<br>Next line.\n\n"
        "```\nclear vpn ike-sa gateway GW-BR-<nnn>\n```\n",
        encoding="utf-8",
    )
    doc = parse_file(path)
    text = "\n".join(b.text for b in doc.blocks)
    assert "GW-BR-<nnn> and tunnels TUN-BR-<nnn>, where <nnn> is the branch number." in text
    assert "BG-<year>-<nn>." in text and "<FWR-id>-<short-description>" in text
    # an element name nothing closes is a placeholder too; a code span was escaped by Markdown already
    assert "ping <address> from" in text and "ssh <user>@<host>" in text
    assert "bold text." in text and "<b>" not in text and "<br>" not in text
    assert by_text(doc.blocks, "clear vpn").text == "clear vpn ike-sa gateway GW-BR-<nnn>"


def test_markdown_comments_attributes_and_element_names_used_as_placeholders(tmp_path):
    path = tmp_path / "edge.md"
    path.write_text(
        "# Edge\n\n"
        "Intro.\n\n<!-- keep MTU a<b -->\n\nSet the MTU to 1400 on the tunnel.\n\n<!-- end -->\n\nLast.\n\n"
        'See <a href="/gw" title="GW-BR-<nnn>">the gateway list</a> first.\n\n'
        "List the rules with iptables -t <table> -L and copy with rsync -a <source> <dest>.\n\n"
        "| chain | policy |\n|---|---|\n| input | drop |\n",
        encoding="utf-8",
    )
    text = "\n".join(b.text for b in parse_file(path).blocks)
    # a '<' inside a comment or a quoted attribute value opens no tag
    assert "Set the MTU to 1400 on the tunnel." in text and "Last." in text and "a<b" not in text
    assert "See the gateway list first." in text
    # an element's name that no tag of its own closes (the table below closes its own), and a void element
    # with no attributes, are placeholders
    assert "iptables -t <table> -L and copy with rsync -a <source> <dest>." in text
    assert "input | drop" in text


def test_markdown_code_span_on_its_own_line_under_a_lead_in_keeps_its_line(tmp_path):
    """Markdown joins a paragraph's lines; a command that the author set on a line of its own under "...:"
    stays there, and the text after it starts a line again. A span inside a sentence, or in fenced code, is
    left as it was."""
    path = tmp_path / "relay.md"
    path.write_text(
        "# Relay high CPU\n\n"
        "1. If the scanner is at the top, there is churn. Run\n"
        "   `relayctl summary` and look for peers.\n"
        "2. Check control-plane policing:\n"
        "   `relayctl policy control-plane`\n"
        "   The class RELAY-ICMP is policed at 2000 packets per second.\n"
        "3. Look at the trend:\n"
        "   `relayctl cpu history`\n\n"
        "```\nsettings:\n`not a span`\n```sh\nstill: fenced\n`no span`\n```\n\n"
        "An indented example:\n\n    Example:\n    `as written`\n"
    )
    blocks = [(b.kind, b.text) for b in parse_file(path).blocks if b.kind != "title"]
    assert blocks == [
        (
            "list_item",
            "1. If the scanner is at the top, there is churn. Run relayctl summary and look for peers.",
        ),
        (
            "list_item",
            "2. Check control-plane policing:\nrelayctl policy control-plane\n"
            "The class RELAY-ICMP is policed at 2000 packets per second.",
        ),
        ("list_item", "3. Look at the trend:\nrelayctl cpu history"),
        ("code", "settings:\n`not a span`\n```sh\nstill: fenced\n`no span`"),
        ("text", "An indented example:"),
        ("code", "Example:\n`as written`"),
    ]
