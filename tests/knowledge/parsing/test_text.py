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
    path = tmp_path / "fenceport.conf.sample.txt"
    path.write_text(
        "! Configuration\n\nvrrp_instance VI_1 {\n    state MASTER\n\n    priority 100\n}\n", encoding="utf-8"
    )
    doc = parse_file(path)
    assert kinds(doc.blocks) == ["code", "code"]
    assert doc.blocks[1].text == "vrrp_instance VI_1 {\n    state MASTER\n\n    priority 100\n}"


def test_config_comment_block_stays_with_the_setting_below_it(tmp_path):
    path = tmp_path / "tidesync.conf.example.txt"
    path.write_text(
        "#" * 40 + "\n### INITIAL SPOOL FLUSH\n# This setting is handy to promptly drain the backlog\n"
        "# at boot if it's behind by a wide margin.\n\n! flushstep 1.0 3\n\n# A second comment.\n"
        "# Still the second one.\n\n! hwclock\n\nupstream tide.example.org quick\n",
        encoding="utf-8",
    )
    doc = parse_file(path)
    assert [b.text for b in doc.blocks] == [
        "### INITIAL SPOOL FLUSH\n# This setting is handy to promptly drain the backlog\n"
        "# at boot if it's behind by a wide margin.\n! flushstep 1.0 3",  # the rule line is decoration
        "# A second comment.\n# Still the second one.\n! hwclock",
        "upstream tide.example.org quick",
    ]


def test_a_line_wrapped_at_a_hyphen_keeps_the_compound_whole(tmp_path):
    """fmt and editors wrap at the hyphens of compounds and option names; joined with a space they would read
    "--hold- in-foreground", which neither a search for the option nor a reader recognises."""
    notes = tmp_path / "notes.txt"
    notes.write_text(
        "Debugging\n=========\n\n"
        "To stop the daemon forking use --hold-\n"
        "in-foreground. A single option takes a comma-\n"
        "separated set. The mode is set -\n"
        "once - at start. It ends with a hyphen-\n"
        "Then a capital. Client-\n"
        "and server-side checks differ.\n"
    )
    text = by_text(parse_file(notes).blocks, "forking").text
    assert text == (
        "To stop the daemon forking use --hold-in-foreground. A single option takes a comma-separated set. "
        "The mode is set - once - at start. It ends with a hyphen- Then a capital. Client- and server-side "
        "checks differ."
    )


def _blocks(tmp_path, text: str):  # type: ignore[no-untyped-def]
    path = tmp_path / "runbook.txt"
    path.write_text(text)
    return [(b.kind, b.text) for b in parse_file(path).blocks if b.kind != "title"]


def test_a_table_aligned_with_spaces_is_a_table_with_its_header(tmp_path):
    blocks = _blocks(
        tmp_path,
        "CONTRACTS\n"
        "  Vendor       Contract number      Level                         Renewal\n"
        "  Quillgate    QG-77120             24x7, 4-hour onsite (core)    2027-01-31\n"
        "  Relaywerk    RW-CARE-20418        next business day             2026-11-30\n",
    )
    assert blocks == [
        (
            "table",
            "Vendor | Contract number | Level | Renewal\n--- | --- | --- | ---\n"
            "Quillgate | QG-77120 | 24x7, 4-hour onsite (core) | 2027-01-31\n"
            "Relaywerk | RW-CARE-20418 | next business day | 2026-11-30",
        )
    ]
    # columns that do not line up, or a first row of figures, are no table
    ragged = (
        "  Vendor    Contract    Level\n  Quillgate  QG-1   24x7, onsite\n  Relaywerk    RW-2    next day\n"
    )
    assert "table" not in [kind for kind, _ in _blocks(tmp_path, ragged)]
    figures = "  2024    Contract number    Level\n  Quillgate    QG-77120    24x7 onsite\n"
    assert "table" not in [
        kind for kind, _ in _blocks(tmp_path, figures + "  Relaywerk    RW-2    next day\n")
    ]


def test_terms_and_descriptions_aligned_with_spaces_are_one_entry_each(tmp_path):
    blocks = _blocks(
        tmp_path,
        "ALERTS\n"
        "  RELAY-QUEUE-HIGH   the relay queue holds more than 5,000 messages for\n"
        "                     15 minutes.\n"
        "  RELAY-LAG-HIGH     consumer lag is above 200,000 messages.\n"
        "  RELAY-INGEST-ZERO  no documents indexed for 5 minutes.\n\n"
        "STATES\n"
        "  CONNECTING   -- the relay's initial state.\n"
        "  09:30        doors open.\n",
    )
    assert blocks == [
        ("text", "RELAY-QUEUE-HIGH: the relay queue holds more than 5,000 messages for 15 minutes."),
        ("text", "RELAY-LAG-HIGH: consumer lag is above 200,000 messages."),
        ("text", "RELAY-INGEST-ZERO: no documents indexed for 5 minutes."),
        ("text", "CONNECTING -- the relay's initial state."),  # the description's own separator
        ("text", "09:30 doors open."),  # a term with a colon of its own
    ]
    # console output in columns of figures is no list of definitions
    output = "  ^* relay-a.example   3   7   177    41   +212us\n  ^- relay-b.example   3   7   177    41   +27ms\n"
    assert not any(text.startswith("^* relay-a.example:") for _, text in _blocks(tmp_path, output))


def test_label_lines_stay_lines_of_their_own(tmp_path):
    blocks = _blocks(
        tmp_path,
        "SUPPORT DESK\n"
        "  Quillgate Support Desk\n"
        "  Phone:  +1-555-0147 (24x7)\n"
        "  E-mail: desk@quillgate.example\n"
        "  Portal account: QG-NOC-ADMIN (the credentials are kept in the team vault, not\n"
        "    in this file)\n",
    )
    assert blocks == [
        ("text", "Quillgate Support Desk"),
        ("text", "Phone:  +1-555-0147 (24x7)"),
        ("text", "E-mail: desk@quillgate.example"),
        (
            "text",
            "Portal account: QG-NOC-ADMIN (the credentials are kept in the team vault, not in this file)",
        ),
    ]
    # wrapped prose that happens to have one "Word:" line start is joined as before
    prose = "Note: the relay restarts by itself after a crash and\nwrites a core file. Example: none needed here.\n"
    assert _blocks(tmp_path, prose) == [("text", prose.strip().replace("\n", " "))]


def test_a_command_set_off_under_its_lead_in_keeps_its_line(tmp_path):
    blocks = _blocks(
        tmp_path,
        "RECOVERY\n"
        "1. Fix the cause first; replaying into the same error only refills the\n"
        "   queue.\n"
        "2. Replay the queue:\n"
        "     relay-replay --topic qg.dlq --since 2h --rate 2000\n"
        "   The rate is in messages per second.\n"
        "3. Check the consumer lag:\n"
        "     relay-groups.sh --bootstrap-server relay-01:9092 --describe-all-of-them \\\n"
        "       --group indexer\n"
        "   Lag on one partition only: one stuck indexer.\n"
        "4. There are two caveats:\n"
        "     spool data read over UDP is not replayed, and the bind-address\n"
        "     or relay-port options are ignored.\n"
        "   Nothing else changes.\n",
    )
    assert blocks == [
        ("list_item", "1. Fix the cause first; replaying into the same error only refills the queue."),
        (
            "list_item",
            "2. Replay the queue:\nrelay-replay --topic qg.dlq --since 2h --rate 2000\n"
            "The rate is in messages per second.",
        ),
        (
            "list_item",
            "3. Check the consumer lag:\n"
            "relay-groups.sh --bootstrap-server relay-01:9092 --describe-all-of-them \\\n--group indexer\n"
            "Lag on one partition only: one stuck indexer.",
        ),
        # a wrapped sentence under a lead-in is prose: its lines are joined
        (
            "list_item",
            "4. There are two caveats:\nspool data read over UDP is not replayed, and the bind-address or "
            "relay-port options are ignored. Nothing else changes.",
        ),
    ]


def test_two_aligned_columns_are_terms_not_a_table_and_lazy_list_lines_join(tmp_path):
    """Two columns are a list of terms and descriptions, whatever the first entry looks like (it is no
    header); a list item's lines that go on at its marker's column join it as before."""
    blocks = _blocks(
        tmp_path,
        "  --verbose, -v     increase verbosity\n"
        "  --quiet, -q       suppress non-error messages\n"
        "  --archive, -a     archive mode; equals -rlptgoD (no -H,-A,-X), the usual choice.\n\n"
        "- This is a long bullet item that wraps onto the following line without\n"
        "any hanging indent, the lazy continuation of the item.\n",
    )
    assert blocks == [
        ("text", "--verbose, -v: increase verbosity"),
        ("text", "--quiet, -q: suppress non-error messages"),
        ("text", "--archive, -a: archive mode; equals -rlptgoD (no -H,-A,-X), the usual choice."),
        (
            "list_item",
            "This is a long bullet item that wraps onto the following line without any hanging indent, the "
            "lazy continuation of the item.",
        ),
    ]


def test_wrapped_prose_above_label_lines_stays_one_paragraph(tmp_path):
    blocks = _blocks(
        tmp_path,
        "Contact the vendor's support desk for any outage that lasts longer than an\n"
        "hour; they answer around the clock, every day of the year.\n"
        "Phone: +1-555-0147 (24x7, ask for the duty escalation manager)\n"
        "E-mail: desk@quillgate.example\n",
    )
    assert blocks == [
        (
            "text",
            "Contact the vendor's support desk for any outage that lasts longer than an hour; they answer "
            "around the clock, every day of the year.",
        ),
        ("text", "Phone: +1-555-0147 (24x7, ask for the duty escalation manager)"),
        ("text", "E-mail: desk@quillgate.example"),
    ]


def test_a_short_aligned_table_is_a_table_and_a_hosts_snippet_stays_code(tmp_path):
    """Short lines read as a snippet of code; a table of short rows is still a table when its columns line up
    under a header of labels. Two aligned columns of addresses and names are a snippet."""
    table = "  Port   Service   Notes\n  22     ssh       admin only\n  443    https     public\n"
    assert _blocks(tmp_path, table) == [
        ("table", "Port | Service | Notes\n--- | --- | ---\n22 | ssh | admin only\n443 | https | public")
    ]
    hosts = "10.20.0.1       relay-gw\n192.168.1.10    relay-01\n192.168.1.11    relay-02\n"
    assert [kind for kind, _ in _blocks(tmp_path, hosts)] == ["code"]


def test_a_short_record_of_label_lines_is_text_and_a_header_block_stays_code(tmp_path):
    """A record whose lines are all short ("Phone:", "E-mail:") is read as one line per label, not as a
    snippet of code; the same lines after a setting that opens a here-document stay code."""
    record = "  Quillgate Support Desk\n  Phone:  +1-555-0147\n  E-mail: desk@quillgate.example\n"
    assert _blocks(tmp_path, record) == [
        ("text", "Quillgate Support Desk"),
        ("text", "Phone:  +1-555-0147"),
        ("text", "E-mail: desk@quillgate.example"),
    ]
    template = "notice_template = <<EOF\nCharset: us-ascii\nFrom: Relay Daemon <relayd>\nSubject: Queued\n"
    assert _blocks(tmp_path, template) == [("code", template.strip())]


def test_document_fields_under_the_title_are_metadata_not_text(tmp_path):
    path = tmp_path / "runbook-relay-v1.txt"
    path.write_text(
        "Title: Relay restart (v1)\n"
        "Author: Platform Team\n"
        "Updated: 2024-02-10\n"
        "Doc-Type: runbook\n"
        "Department: noc\n"
        "Vendor: Quillgate\n"
        "Review-By: 2025-02-10\n"
        "Superseded-By: runbook-relay.md\n"
        "Access-Tier: restricted\n"
        "Allowed-Groups: noc-admins\n"
        "\n"
        "Restart the relay with relayctl restart.\n",
        encoding="utf-8",
    )
    doc = parse_file(path)
    assert doc.title == "Relay restart (v1)"
    assert {key: doc.metadata[key] for key in doc.metadata if key != "format"} == {
        "updated": "2024-02-10",
        "doc_type": "runbook",
        "department": "noc",
        "vendor": "Quillgate",
        "review_by": "2025-02-10",
        "superseded_by": "runbook-relay.md",
        "access_tier": "restricted",
        "allowed_groups": "noc-admins",
    }
    assert [(b.kind, b.text) for b in doc.blocks] == [("text", "Restart the relay with relayctl restart.")]


def test_configuration_right_under_a_lead_in_is_code_and_values_in_a_sentence_stay_prose(tmp_path):
    blocks = _blocks(
        tmp_path,
        "You may override the unit with systemctl edit relayd.service\n"
        "and set the spool quota (or MaxSpoolFiles) to be blank:\n"
        "[Runtime]\n"
        "SpoolQuotaSet=~\n"
        "The track syntax is:\n"
        "track_group GROUP1 {\n"
        "  group {\n"
        "    VI_1\n"
        "  }\n"
        "}\n"
        "Write it to the list of the project:\n"
        "<relay-dev@lists.example.org>\n",
    )
    assert blocks == [
        (
            "text",
            "You may override the unit with systemctl edit relayd.service and set the spool quota (or "
            "MaxSpoolFiles) to be blank:",
        ),
        ("code", "[Runtime]\nSpoolQuotaSet=~"),
        ("text", "The track syntax is:"),
        ("code", "track_group GROUP1 {\n  group {\n    VI_1\n  }\n}"),
        # a mail address in angle brackets is no tag of a configuration
        ("text", "Write it to the list of the project: <relay-dev@lists.example.org>"),
    ]
    listed = (
        "Alternatively one can name the kind of address:\n"
        "Unicast=06:00:00:00:00:00/07:00:00:00:00:00,\n"
        "Multicast=07:00:00:00:00:00/07:00:00:00:00:00 or any.\n"
    )
    assert _blocks(tmp_path, listed) == [("text", " ".join(listed.split("\n")).strip())]


def test_a_description_under_a_term_wrapped_over_lines_starts_a_line_of_its_own(tmp_path):
    """A term wrapped over two lines at one indentation, then its description indented deeper: the description
    starts its own line (so an answer shows the term apart from it); a wrapped line that goes on in lower
    case, deeper than the lines above it, still joins them."""
    blocks = _blocks(
        tmp_path,
        "relayctl route add 10.0.0.0/8 encap seg mode encap segs 10.9.3.1,10.9.3.2\n"
        "dev eth0\n"
        "    Adds a route with two segments attached.\n\n"
        "The organisers must notify the desk\n"
        "five business days ahead of\n"
        "    any event with more than a hundred guests.\n",
    )
    assert blocks == [
        (
            "text",
            "relayctl route add 10.0.0.0/8 encap seg mode encap segs 10.9.3.1,10.9.3.2 dev eth0\n"
            "Adds a route with two segments attached.",
        ),
        (
            "text",
            "The organisers must notify the desk five business days ahead of any event with more than a hundred "
            "guests.",
        ),
    ]


def test_a_list_of_names_in_lower_case_with_descriptions_is_one_line_per_name(tmp_path):
    blocks = _blocks(
        tmp_path,
        "relay-base: Shared files needed by every relay package\n"
        "relay-server: The relay server itself\n"
        "relay-client-lite: A slimmed down client for the boot image\n",
    )
    assert blocks == [
        ("text", "relay-base: Shared files needed by every relay package"),
        ("text", "relay-server: The relay server itself"),
        ("text", "relay-client-lite: A slimmed down client for the boot image"),
    ]
    # one such line is a wrapped sentence going on, not a label
    wrapped = 'Q: The relay refuses to launch and prints a message such as: "relayd: bind\nfailed: Cannot assign address".\n'
    assert _blocks(tmp_path, wrapped) == [("text", wrapped.strip().replace("\n", " "))]
