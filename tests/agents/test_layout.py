"""Code lines of an answer sentence on lines of their own, and definition terms set off (agents/layout.py)."""

from __future__ import annotations

import pytest

from agents.evidence import Draft, Evidence
from agents.layout import (
    code_line,
    command_line,
    laid_out,
    manual_command,
    next_line,
    record_set_off,
    term_set_off,
)
from agents.shaping import shape
from knowledge.text.passages import passage_sentences

pytestmark = [pytest.mark.unit]

SPOOL = (
    "Do this on every relay host.\n"
    "$LoadInput unixsock # local messages\n"
    "$SpoolDir /var/spool/relay # where queued files go\n"
    "*.* @@collector:6514\n"
    "The port is optional."
)
SPOOL_SENTENCE = "$LoadInput unixsock # local messages $SpoolDir /var/spool/relay # where queued files go *.* @@collector:6514"


def flat(text: str) -> str:
    return " ".join(text.split())


@pytest.mark.parametrize(
    "line",
    [
        "$ relayctl drain node7",
        "ops@relay1:~$ sudo relayctl status",
        "$SpoolDir /var/spool/relay",
        "peer_list = 127.0.0.9",
        "/etc/relay/main.conf:",
        'output(kind="forward" target="collector1")',
        "}",
        "pool web_pool {",
        "lease-time 7200;",
        "relayctl create monitor web \\",
        "script check.sh   # every 5 seconds",
        "TIME_UNIT := second | minute | hour",  # a manual's syntax rule
    ],
)
def test_lines_that_only_code_has(line):
    assert code_line(line)


@pytest.mark.parametrize(
    "line",
    [
        "The port is optional.",
        "Examples",
        "--signal=NAME",  # an option's name, not a setting
        "If the peer is down, the relay waits.",
        "See also",
        "Record the number of lost messages in the incident ticket;",  # a semicolon, in prose
        "Lines that begin with # are ignored by the relay",  # a hash, in prose
        "x := y is how the text writes it",  # ':=' in prose, no syntax rule's name in capitals
        "relayd(8), relay.conf(5)",  # references to manual pages, not calls
    ],
)
def test_prose_and_terms_are_not_code(line):
    assert not code_line(line)


def test_a_manual_pages_own_command_opens_its_example_lines():
    assert manual_command("probe - check a path to a host") == "probe"
    assert manual_command("frob-route - route tool") == "frob"
    assert manual_command("relay.conf - configuration file for relayd") == ""
    assert manual_command("Forwarding messages reliably") == ""
    assert code_line("probe -c 3 gw1", command="probe")
    assert not code_line("probe is used to check a path.", command="probe")
    assert not code_line("probe add NAME - add a probe for the given host to the", command="probe")


def test_a_configuration_snippet_keeps_its_lines_and_only_whitespace_changes():
    shown = laid_out(SPOOL_SENTENCE, SPOOL)
    assert shown == (
        "\n\n    $LoadInput unixsock # local messages"
        "\n    $SpoolDir /var/spool/relay # where queued files go"
        "\n    *.* @@collector:6514"
    )
    assert flat(shown) == SPOOL_SENTENCE  # an answer matched against the words finds the same words


def test_prose_around_code_stays_prose_and_indentation_inside_the_block_is_kept():
    passage = "Run these:\n$ relayctl drain node7\n$ relayctl remove node7\nand the queue moves to node8."
    sentence = "Run these: $ relayctl drain node7 $ relayctl remove node7 and the queue moves to node8."
    assert laid_out(sentence, passage) == (
        "Run these:\n\n    $ relayctl drain node7\n    $ relayctl remove node7\nand the queue moves to node8."
    )
    block = "pool web_pool {\n       script check.sh   # every 5 seconds\n       timeout 16\n}"
    assert laid_out("pool web_pool { script check.sh # every 5 seconds timeout 16 }", block) == (
        "\n\n    pool web_pool {\n           script check.sh   # every 5 seconds\n           timeout 16\n    }"
    )


def test_sentences_without_code_over_lines_are_left_as_they_are():
    wrapped = "The relay waits for the peer\nbefore it answers.\nlevel 3\nset level 9\nin the config."
    assert laid_out("The relay waits for the peer before it answers.", wrapped) is None  # prose wrapped
    assert laid_out("level 3 set level 9 in the config.", wrapped) is None  # short lines, no code mark
    assert laid_out("$ relayctl status", "$ relayctl status") is None  # one line
    assert laid_out("not in the passage at all", SPOOL) is None


def test_a_definition_term_on_its_own_line_is_set_off():
    passage = "-q, --quiet\nPrint nothing but errors.\nDROP [ with X ]\nX := icmp | tcp"
    assert (
        term_set_off("-q, --quiet Print nothing but errors.", passage)
        == "-q, --quiet: Print nothing but errors."
    )
    # the next line is no sentence ("X := ..."), or the term is the end of a line of prose
    assert term_set_off("DROP [ with X ] X := icmp | tcp", passage) is None
    assert term_set_off("nothing but errors. DROP", "nothing but errors. DROP") is None
    assert term_set_off("but errors. DROP [ with X ]", passage) is None


def test_an_answer_shows_code_blocks_on_lines_of_their_own_with_their_citation():
    evidence = [
        Evidence(1, "guides/forwarding.html", "Reliable forwarding", "Setup", SPOOL, 1.0),
        Evidence(
            2,
            "man/probe.8.txt",
            "probe - check a path",
            "OPTIONS",
            "-q, --quiet\nPrint nothing but errors.",
            0.9,
        ),
    ]
    draft = Draft(
        "concept_explanation",
        [
            ("Do this on every relay host.", 0),
            (SPOOL_SENTENCE, 0),
            ("The port is optional.", 0),
            ("-q, --quiet Print nothing but errors.", 1),
        ],
    )
    assert shape(draft, evidence).text == (
        "Do this on every relay host. [1]\n\n"
        "    $LoadInput unixsock # local messages\n"
        "    $SpoolDir /var/spool/relay # where queued files go\n"
        "    *.* @@collector:6514 [1]\n"
        "The port is optional. [1] From probe - check a path: -q, --quiet: Print nothing but errors. [2]"
    )
    # a comparison's bullet holds its code block too
    both = Draft("comparison_decision", [(SPOOL_SENTENCE, 0), ("-q, --quiet Print nothing but errors.", 1)])
    bullets = shape(both, evidence).text
    assert bullets.startswith("- Reliable forwarding:\n\n    $LoadInput unixsock")
    assert "    *.* @@collector:6514 [1]\n- probe - check a path: -q, --quiet: Print" in bullets


def test_a_block_holds_the_long_lines_inside_its_braces_and_under_its_first_line():
    ruleset = (
        "zone intake {\n  kind guard stage intake weight 0\n  src net 10.64.0.0/16 udp port 4411 permit\n}"
    )
    shown = laid_out(
        "zone intake { kind guard stage intake weight 0 src net 10.64.0.0/16 udp port 4411 permit }", ruleset
    )
    assert shown == (
        "\n\n    zone intake {\n      kind guard stage intake weight 0\n      src net 10.64.0.0/16 udp port 4411 permit\n    }"
    )
    query = "Checking the queue\nSELECT queued, round(100.0 * sent / total) AS pct_sent\nFROM relay_stats;\nRun it daily."
    sentence = "Checking the queue SELECT queued, round(100.0 * sent / total) AS pct_sent FROM relay_stats; Run it daily."
    assert laid_out(sentence, query) == (
        "Checking the queue\n\n    SELECT queued, round(100.0 * sent / total) AS pct_sent\n    FROM relay_stats;\nRun it daily."
    )


def test_an_answers_code_keeps_its_brackets_and_its_heading_is_set_off():
    passage = "Opening ports\nports = [22]\nlisten_on = 0.0.0.0\nThe relay reads the list at start [4]."
    evidence = [Evidence(1, "guides/relay.md", "Relay guide", "Setup > Opening ports", passage, 1.0)]
    draft = Draft(
        "concept_explanation",
        [("Opening ports ports = [22] listen_on = 0.0.0.0 The relay reads the list at start [4].", 0)],
    )
    assert shape(draft, evidence).text == (
        "Opening ports:\n\n    ports = [22]\n    listen_on = 0.0.0.0\nThe relay reads the list at start. [1]"
    )


def test_a_command_right_under_a_lead_in_is_code():
    passage = "Check the quota by running:\ncat /run/<pid>/quota\nand the open pipes with:\nls /run/<pid>/sock | wc -l\nDone."
    sentence = (
        "Check the quota by running: cat /run/<pid>/quota and the open pipes with: ls /run/<pid>/sock | wc -l"
    )
    assert laid_out(sentence, passage) == (
        "Check the quota by running:\n\n    cat /run/<pid>/quota\nand the open pipes with:\n\n    ls /run/<pid>/sock | wc -l"
    )
    # prose under a lead-in stays prose
    listing = "The relay has two modes:\nthe active one and the passive one for the backup site\nDone."
    assert (
        laid_out("The relay has two modes: the active one and the passive one for the backup site", listing)
        is None
    )


def test_a_heading_that_opens_prose_before_code_is_set_off_as_in_any_sentence():
    passage = "Basic commands\nTry these on the relay:\n$ relayctl status\n$ relayctl drain node7"
    evidence = [Evidence(1, "guides/relay.md", "Relay guide", "Setup > Basic commands", passage, 1.0)]
    sentence = "Basic commands Try these on the relay: $ relayctl status $ relayctl drain node7"
    assert shape(Draft("concept_explanation", [(sentence, 0)]), evidence).text == (
        "Basic commands: Try these on the relay:\n\n    $ relayctl status\n    $ relayctl drain node7 [1]"
    )


TUNNEL = (
    "QuillGate needs a spool directory. If it is missing, make it by running the lines below (as root):\n"
    "# mkdir /run/relay\n"
    "# chown relay /run/relay\n"
    "To reopen its log, send it a signal.\n"
    "kill -HUP `cat /run/relay.pid`\n\n"
    "To split its log on two spaces, run:\n"
    '# awk -F"  " "{print $2}" relay.log\n\n'
    "Add these lines to /etc/relay.conf:\n"
    "# spool settings\n"
    "spool_dir /var/spool/relay\n"
    "# retries = 3\n\n"
    "Example:\n"
    "# end first action\n\n"
    "Peers known to it:\n"
    "$gw1 | the first gateway\n"
    "gw2 | the second one\n\n"
    "Its encapsulation is one of these. Namely:\n"
    "gre - GRE encapsulation\n\n"
    "SEE ALSO\n"
    "relayd(8), relay.conf(5)\n\n"
    "$spool_root/pending/, batches waiting for their turn.\n"
    "Retry=Soft treats both the cases above as retryable.\n"
)
SENTENCES = passage_sentences(TUNNEL, "")


@pytest.mark.parametrize(
    ("sentence", "shown"),
    [
        # a command under a lead-in, its root prompt dropped by the sentence splitter
        ("mkdir /run/relay", "mkdir /run/relay"),
        ("chown relay /run/relay", "chown relay /run/relay"),  # under a command that is under the lead-in
        ("kill -HUP `cat /run/relay.pid`", "kill -HUP `cat /run/relay.pid`"),  # an option, a substitution
        ('awk -F" " "{print $2}" relay.log', 'awk -F"  " "{print $2}" relay.log'),  # spaced as written
    ],
)
def test_a_command_on_a_line_of_its_own_is_told_from_prose(sentence, shown):  # type: ignore[no-untyped-def]
    assert sentence in SENTENCES  # a sentence the splitter makes of the passage
    assert command_line(sentence, TUNNEL) == shown


@pytest.mark.parametrize(
    "sentence",
    [
        "QuillGate needs a spool directory.",  # prose
        "spool settings",  # a comment above the setting it annotates, its '#' dropped by the splitter
        "spool_dir /var/spool/relay",  # under a '#' line: as a root shell's output looks
        "retries = 3",  # a setting commented out
        "end first action",  # a comment in lower case: no argument only a command has
        "$gw1 | the first gateway",  # table rows: a "$name" cell, and a row under a lead-in
        "gw2 | the second one",
        "gre - GRE encapsulation",  # a manual's term item
        "relayd(8), relay.conf(5)",  # references, not a call
        "$spool_root/pending/, batches waiting for their turn.",  # a sentence that opens with a "$name"
        "Retry=Soft treats both the cases above as retryable.",  # and one that opens with a "key=value"
    ],
)
def test_prose_comments_and_table_rows_are_no_command_line(sentence):  # type: ignore[no-untyped-def]
    assert sentence in SENTENCES
    assert command_line(sentence, TUNNEL) is None


def test_two_commands_are_consecutive_lines_only_in_their_order():
    assert next_line("mkdir /run/relay", "chown relay /run/relay", TUNNEL)
    assert not next_line("chown relay /run/relay", "mkdir /run/relay", TUNNEL)
    assert not next_line("mkdir /run/relay", "kill -HUP `cat /run/relay.pid`", TUNNEL)


def test_a_manual_page_sentence_that_opens_with_its_command_is_prose_when_it_ends_as_prose():
    passage = "DESCRIPTION\nprobe sends packets to each host given:\n\n-c count Stop after count packets.\n"
    assert "probe sends packets to each host given:" in passage_sentences(passage, "")
    assert command_line("probe sends packets to each host given:", passage, "probe") is None


def test_prose_around_code_has_one_space_between_words_and_code_keeps_its_spacing():
    # a manual's justified text has runs of spaces; the sentence has one between words, and so does its prose
    passage = 'To  list  only  what  differs,  run:\n  relayctl  -n   show\nReplace  "-n"  with  "-d"  for  defaults.'
    sentence = 'To list only what differs, run: relayctl -n show Replace "-n" with "-d" for defaults.'
    assert laid_out(sentence, passage) == (
        'To list only what differs, run:\n\n    relayctl  -n   show\nReplace "-n" with "-d" for defaults.'
    )


def test_a_numbered_listing_is_code_by_what_follows_its_line_numbers():
    passage = " 1 relay.conf:\n 2     peer gw1 {\n 3       retries = 3\n 4     }\n 5 \n 6   timeout = 16\nLine 3 sets it."
    sentence = "2 peer gw1 { 3 retries = 3 4 } 5 6 timeout = 16 Line 3 sets it."
    assert laid_out(sentence, passage) == (
        "\n\n    2     peer gw1 {\n    3       retries = 3\n    4     }\n    5\n    6   timeout = 16\nLine 3 sets it."
    )
    assert code_line("14    timeout = 16") and code_line("11     }")
    assert not code_line("10 seconds is the default.")
    # a value list's key is no line number, and a number in prose does not make its line code
    assert code_line("0 = COLD_START") and code_line("12     # request_limit = 1")
    assert not code_line("63 }") and not code_line("1 character = 1 byte")


def test_root_commands_continued_commands_and_their_output():
    passage = (
        "To apply the change, run as root:\n"
        "# relayctl set utf8_enable=yes\n"
        "# relayctl reload\n\n"
        "Put all mail on hold:\n"
        "# relaymulti -g group_name -x \\\n"
        "    sh -c 'relayctl hold ALL'\n\n"
        "Show the mapping:\n"
        "# relayctl show map\n"
        "map 0:0 CS3:2 CS6:6\n"
    )
    sentences = passage_sentences(passage, "")
    # a root command with words for arguments is still one, and both lines are one block
    assert command_line("relayctl reload", passage) == "relayctl reload"
    assert next_line("relayctl set utf8_enable=yes", "relayctl reload", passage)
    # the rest of a continued command is no command alone, and a command's output is no command
    assert (
        "sh -c 'relayctl hold ALL'" in sentences
        and command_line("sh -c 'relayctl hold ALL'", passage) is None
    )
    assert "map 0:0 CS3:2 CS6:6" in sentences and command_line("map 0:0 CS3:2 CS6:6", passage) is None


@pytest.mark.parametrize(
    ("passage", "sentence"),
    [
        (
            "Anchors:\nsymbol | meaning\n--- | ---\n$ | where the string stops\n",
            "$ | where the string stops",
        ),  # a row
        (
            "$RELAY_STATE_HOME is unset.\n$RELAY_STATE_DIRS is set to /var/lib/relay/.\n",
            "$RELAY_STATE_DIRS is set to /var/lib/relay/.",
        ),
    ],
)
def test_rows_list_entries_and_prose_that_open_like_code_are_no_command_line(passage, sentence):  # type: ignore[no-untyped-def]
    assert sentence in passage_sentences(passage, "")
    assert command_line(sentence, passage) is None


def test_a_manual_list_entry_with_its_default_is_no_command_under_a_lead_in():
    passage = "Offered in release 4.2 and newer:\nrelay_limit (100)\nThe most peers.\n"
    assert laid_out("Offered in release 4.2 and newer: relay_limit (100) The most peers.", passage) is None


def test_a_listings_numbered_file_line_and_a_call_with_a_number_are_code():
    assert code_line("1 /etc/relay/main.conf:") and code_line("int2hex(61)")
    listing = "Here is an example:\n1 /etc/relay/main.conf:\n2     peer_limit = 3\n3 \nLine 2 sets it."
    assert laid_out(
        "Here is an example: 1 /etc/relay/main.conf: 2 peer_limit = 3 3 Line 2 sets it.", listing
    ) == (
        "Here is an example:\n\n    1 /etc/relay/main.conf:\n    2     peer_limit = 3\n    3\nLine 2 sets it."
    )


def test_third_review_cases_of_lines_alone():
    example = "Example:\n# mkdir /var/relay\n\nExamples:\n# no authentication\n"
    assert command_line("mkdir /var/relay", example) == "mkdir /var/relay"  # a one-word lead-in, a path
    assert command_line("no authentication", example) is None  # a comment under one
    built = "Build it with:\n$ make bundles linked=yes ...further flags...\n"
    assert command_line("$ make bundles linked=yes ...further flags...", built) is not None
    heredoc = "Test the address with:\n$ relayctl verify user <<EOF\nbody\nEOF\n"
    assert command_line("$ relayctl verify user <<EOF", heredoc) is None  # its body is on the next lines
    synopsis = "SYNOPSIS\nrelayctl route { show | flush } SELECTOR\n"
    assert "relayctl route { show | flush } SELECTOR" in passage_sentences(synopsis, "")
    # alternatives in braces are no table's cells; a syntax rule's are not either
    assert command_line("relayctl route { show | flush } SELECTOR", synopsis, "relayctl") is not None
    assert command_line("TTL := { 1..255 | inherit }", "Options:\nTTL := { 1..255 | inherit }\n") is not None
    assert not code_line("Q := Quiet Retry flag.")  # a legend, not a syntax rule
    assert not code_line("lbctl(8)") and not code_line("lbctl(8), lbctl-pool(8)")  # references
    lead_in = "Only when:\nif (concurrency > 0)\n    limit = 4;\nDone."
    assert laid_out("Only when: if (concurrency > 0) limit = 4; Done.", lead_in) == (
        "Only when:\n\n    if (concurrency > 0)\n        limit = 4;\nDone."
    )


IOS = (
    "Reference configuration\n"
    "router bgp 64510\n"
    " bgp log-neighbor-changes\n"
    " timers bgp 30 90\n"
    "\n"
    "interface TenGigabitEthernet0/0/0\n"
    " bfd interval 300 min_rx 300 multiplier 3\n"
    "\n"
    "Apply it in a change window."
)
IOS_MARKED = frozenset(
    [
        "router bgp 64510",
        "bgp log-neighbor-changes",
        "timers bgp 30 90",
        "interface TenGigabitEthernet0/0/0",
        "bfd interval 300 min_rx 300 multiplier 3",
    ]
)


def test_lines_the_format_marks_as_code_are_code_whatever_they_read_as():
    # a router's configuration has no sigil, brace or '=': only its <pre> or Markdown code block says it is code
    first, second, *_ = passage_sentences(IOS, "BGP")
    assert first == "Reference configuration router bgp 64510 bgp log-neighbor-changes timers bgp 30 90"
    assert laid_out(first, IOS) is None
    assert laid_out(first, IOS, marked=IOS_MARKED) == (
        "Reference configuration\n\n    router bgp 64510\n     bgp log-neighbor-changes\n     timers bgp 30 90"
    )
    # a marked line that is a sentence of its own is a one-line block; an unmarked one stays prose
    assert second == "interface TenGigabitEthernet0/0/0 bfd interval 300 min_rx 300 multiplier 3"
    assert laid_out(second, IOS, marked=IOS_MARKED) == (
        "\n\n    interface TenGigabitEthernet0/0/0\n     bfd interval 300 min_rx 300 multiplier 3"
    )
    assert command_line("timers bgp 30 90", IOS, marked=IOS_MARKED) == "timers bgp 30 90"
    assert command_line("timers bgp 30 90", IOS) is None
    # a marked line left unfinished (a here-document, a trailing pipe, a continuation) is still no line alone
    # (the splitter seldom leaves one alone: this asks `command_line` directly)
    relay = "Write the unit:\ncat <<EOF\n[Service]\nEOF\nThen reload."
    assert command_line("cat <<EOF", relay, marked=frozenset(["cat <<EOF", "[Service]", "EOF"])) is None
    assert (
        command_line("[Service]", relay, marked=frozenset(["cat <<EOF", "[Service]", "EOF"])) == "[Service]"
    )
    # shown in an answer, through the passage's Evidence
    evidence = [Evidence(1, "bgp.md", "BGP", "Reference configuration", IOS, 1.0, IOS_MARKED)]
    text = shape(Draft("parameter_lookup", [(first, 0)]), evidence).text
    assert text == (
        "Reference configuration:\n\n    router bgp 64510\n     bgp log-neighbor-changes\n     timers bgp 30 90 [1]"
    )


def test_a_listing_split_by_a_blank_line_keeps_its_indentation_in_both_parts():
    """The sentence splitter ends a sentence at a blank line inside a listing; the second part's lines keep
    their indentation within the listing, not from their own first line."""
    passage = "Example:\nbackend web\n  mode http\n\n  http-request cache-use hot\n  server s1 10.7.0.1:80\n"
    marked = frozenset(["backend web", "mode http", "http-request cache-use hot", "server s1 10.7.0.1:80"])
    assert laid_out("backend web mode http", passage, marked=marked) == "\n\n    backend web\n      mode http"
    second = "http-request cache-use hot server s1 10.7.0.1:80"
    assert laid_out(second, passage, marked=marked) == (
        "\n\n      http-request cache-use hot\n      server s1 10.7.0.1:80"
    )
    # prose above the block is no part of the listing, even where the document marks it as code: the block
    # starts at its own indentation
    prose = "Put this in the backend of the proxy:\n\n  server s1 10.7.0.1:80 check\n  server s2 10.7.0.2:80 check\n"
    both = frozenset(
        [
            "Put this in the backend of the proxy:",
            "server s1 10.7.0.1:80 check",
            "server s2 10.7.0.2:80 check",
        ]
    )
    assert laid_out("server s1 10.7.0.1:80 check server s2 10.7.0.2:80 check", prose, marked=both) == (
        "\n\n    server s1 10.7.0.1:80 check\n    server s2 10.7.0.2:80 check"
    )


def test_a_records_label_lines_show_one_per_line():
    """The splitter reads a record as one sentence; the answer shows its lines as the passage has them, and a
    name in lower case on one wrapped line is no record."""
    passage = "SUPPORT DESK\n  Quillgate Support Desk\n  Phone:  +1-555-0147 (24x7)\n  E-mail: desk@quillgate.example\n"
    sentence = "Quillgate Support Desk Phone: +1-555-0147 (24x7) E-mail: desk@quillgate.example"
    assert record_set_off(sentence, passage) == (
        "Quillgate Support Desk\nPhone: +1-555-0147 (24x7)\nE-mail: desk@quillgate.example"
    )
    wrapped = 'Q: The relay stops with a message like so: "relayd: bind\nfailed: Cannot assign address".'
    assert record_set_off(" ".join(wrapped.split()), wrapped) is None
    prose = "Note: the relay restarts by itself after a crash and\nwrites a core file."
    assert record_set_off(" ".join(prose.split()), prose) is None
    # a lead-in ending with ':' above the records stays the first line
    listed = "The relay source builds these packages:\nrelay-common: Files all packages use\nrelay-server: The relay itself\n"
    assert record_set_off(" ".join(listed.split()), listed) == (
        "The relay source builds these packages:\nrelay-common: Files all packages use\nrelay-server: The relay itself"
    )
    # a long first line that is no lead-in is not set off
    long_first = "The relay source builds these packages for each of the releases\nrelay-common: Files\nrelay-server: It\n"
    assert record_set_off(" ".join(long_first.split()), long_first) is None
