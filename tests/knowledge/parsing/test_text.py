"""knowledge.parsing.text and .lines: header fields, setext/caps headings, steps, code and config samples."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from knowledge.parsing import parse_file
from tests.knowledge.parsing.blocks import FIXTURES, by_text, kinds

pytestmark = pytest.mark.unit


def test_text_header_fields_setext_headings_steps_and_code():
    doc = parse_file(FIXTURES / "runbook-notes.txt")
    assert (doc.title, doc.author) == ("Time Sync Runbook", "Platform Team")
    assert doc.updated_at == datetime(2024, 5, 20, tzinfo=UTC)
    assert not any(b.text.startswith(("Title:", "Author:")) for b in doc.blocks)
    assert [(b.text, b.level) for b in doc.blocks if b.kind == "title"] == [
        ("Overview", 1),
        ("Steps", 2),
        ("Notes", 2),
    ]
    steps = [b.text for b in doc.blocks if b.kind == "list_item" and b.section_path[-1] == "Steps"]
    assert steps[0] == "1. Log in to the host." and len(steps) == 3
    assert by_text(doc.blocks, "ntp1.example.net").kind == "code"
    assert by_text(doc.blocks, "config lives").text == "The config lives in /etc/chrony/chrony.conf."


def test_extensionless_text_and_caps_headings(tmp_path):
    path = tmp_path / "README"
    path.write_text(
        "Some intro text here.\n\nUSAGE\n\nRun the tool with\nno arguments at all.\n", encoding="utf-8"
    )
    doc = parse_file(path)
    assert doc.title == "README"
    assert by_text(doc.blocks, "Run the tool").section_path == ("USAGE",)
    assert by_text(doc.blocks, "Run the tool").text == "Run the tool with no arguments at all."


def test_config_sample_keeps_stanzas_whole(tmp_path):
    path = tmp_path / "keepalived.conf.sample.txt"
    path.write_text(
        "! Configuration\n\nvrrp_instance VI_1 {\n    state MASTER\n\n    priority 100\n}\n", encoding="utf-8"
    )
    doc = parse_file(path)
    assert kinds(doc.blocks) == ["code", "code"]
    assert doc.blocks[1].text == "vrrp_instance VI_1 {\n    state MASTER\n\n    priority 100\n}"


def test_config_comment_block_stays_with_the_setting_below_it(tmp_path):
    path = tmp_path / "chrony.conf.example.txt"
    path.write_text(
        "#" * 40 + "\n### INITIAL CLOCK CORRECTION\n# This option is useful to quickly correct the clock\n"
        "# on start if it's off by a large amount.\n\n! makestep 1.0 3\n\n# A second comment.\n"
        "# Still the second one.\n\n! rtcsync\n\nserver ntp.example.org iburst\n",
        encoding="utf-8",
    )
    doc = parse_file(path)
    assert [b.text for b in doc.blocks] == [
        "### INITIAL CLOCK CORRECTION\n# This option is useful to quickly correct the clock\n"
        "# on start if it's off by a large amount.\n! makestep 1.0 3",  # the rule line is decoration
        "# A second comment.\n# Still the second one.\n! rtcsync",
        "server ntp.example.org iburst",
    ]


def test_a_line_wrapped_at_a_hyphen_keeps_the_compound_whole(tmp_path):
    """fmt and editors wrap at the hyphens of compounds and option names; joined with a space they would read
    "--keep- in-foreground", which neither a search for the option nor a reader recognises."""
    notes = tmp_path / "notes.txt"
    notes.write_text(
        "Debugging\n=========\n\n"
        "To stop the daemon forking use --keep-\n"
        "in-foreground. A single option takes a comma-\n"
        "separated list. The mode is set -\n"
        "once - at start. It ends with a hyphen-\n"
        "Then a capital. Client-\n"
        "and server-side checks differ.\n"
    )
    text = by_text(parse_file(notes).blocks, "forking").text
    assert text == (
        "To stop the daemon forking use --keep-in-foreground. A single option takes a comma-separated list. "
        "The mode is set - once - at start. It ends with a hyphen- Then a capital. Client- and server-side "
        "checks differ."
    )
