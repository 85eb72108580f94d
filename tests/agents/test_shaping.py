"""Answer shapers: lead first, sources grouped and named once, headings set off, short prose, numbered steps."""

from __future__ import annotations

import pytest

from agents.evidence import Draft, Evidence, passage_sentences
from agents.shaping import MAX_WORDS, Template, shape

pytestmark = [pytest.mark.unit]

EVIDENCE = [
    Evidence(1, "runbooks/bgp.md", "Runbook - BGP session flaps", "Checks > Timers", "x", 1.0),
    Evidence(2, "sops/upgrade.md", "SOP - core router upgrade", "Rollback after commit", "y", 0.9),
    Evidence(3, "runbooks/bgp.md", "Runbook - BGP session flaps", "Checks > Peers", "z", 0.8),
]


def test_the_lead_comes_first_and_each_further_document_is_named_once_where_it_starts():
    draft = Draft(
        "parameter_lookup",
        [
            ("The keepalive timer is 10 seconds.", 0),
            ("Roll back with the previous image.", 1),
            ("Peers use the same hold timer.", 2),
            ("Keep the old image on flash.", 1),
        ],
    )
    shaped = shape(draft, EVIDENCE)
    assert shaped.text == (
        "The keepalive timer is 10 seconds. [1] Peers use the same hold timer. [2] "
        "From SOP - core router upgrade: Roll back with the previous image. [3] Keep the old image on flash. [3]"
    )
    assert shaped.text.count("From ") == 1
    assert shaped.refs == {0: 1, 2: 2, 1: 3}


def test_a_heading_left_at_the_start_of_a_sentence_is_set_off_with_a_colon():
    draft = Draft(
        "troubleshooting", [("Rollback after commit If a problem appears, reload the old image.", 1)]
    )
    assert (
        shape(draft, EVIDENCE).text
        == "Rollback after commit: If a problem appears, reload the old image. [1]"
    )


def test_a_heading_on_its_own_line_is_set_off_before_a_command_too():
    passage = "Creating the monitor\ntmsh create ltm monitor http web interval 5 timeout 16\nThen attach it."
    evidence = [Evidence(1, "configs/lb.md", "Load balancer monitors", "Creating the monitor", passage, 1.0)]
    draft = Draft(
        "procedure_sop", [("Creating the monitor tmsh create ltm monitor http web interval 5 timeout 16", 0)]
    )
    assert (
        shape(draft, evidence).text
        == "Creating the monitor: tmsh create ltm monitor http web interval 5 timeout 16 [1]"
    )
    # a heading that runs on in its own line's text is not a heading line: left as written
    inline = [
        Evidence(
            1,
            "configs/lb.md",
            "Load balancer monitors",
            "Creating",
            "Creating the monitor takes one line.",
            1.0,
        )
    ]
    assert shape(Draft("procedure_sop", [("Creating the monitor takes one line.", 0)]), inline).text == (
        "Creating the monitor takes one line. [1]"
    )
    # a later sentence that starts with the heading's word is not the one under the heading line
    rollback = [
        Evidence(
            1,
            "sop.md",
            "SOP",
            "SOP > Rollback",
            "Rollback\nIf it fails, roll back.\nRollback takes ten minutes per router.",
            1.0,
        )
    ]
    draft = Draft("concept_explanation", [("Rollback takes ten minutes per router.", 0)])
    assert shape(draft, rollback).text == "Rollback takes ten minutes per router. [1]"


def test_prose_stops_at_the_word_budget_but_keeps_the_whole_lead(settings):  # type: ignore[no-untyped-def]
    settings.ATHENA_ANSWER_MAX_WORDS = 80
    long = " ".join(["word"] * 30) + "."
    lead = [(long, 0), (long, 0)]
    draft = Draft("concept_explanation", [*lead, (long, 2), (long, 2)], lead=2)
    shaped = shape(draft, EVIDENCE)
    assert len(shaped.sentences) == 2  # the lead (60 words) stays; a third 30-word sentence would pass 80
    settings.ATHENA_ANSWER_MAX_WORDS = 100
    assert len(shape(draft, EVIDENCE).sentences) == 3
    assert MAX_WORDS == 100  # the default when the setting is absent
    single = Draft("concept_explanation", [(" ".join(["word"] * 150) + ".", 0)])
    assert len(shape(single, EVIDENCE).sentences) == 1


def test_a_procedure_is_numbered_steps_and_a_comparison_one_bullet_per_document():
    steps = Draft(
        "procedure_sop", [("Drain the node.", 0), ("Upgrade it.", 0), ("Undrain it.", 1)], preface="Steps:"
    )
    assert shape(steps, EVIDENCE).text == "1. Drain the node. [1]\n2. Upgrade it. [1]\n3. Undrain it. [2]"
    compare = Draft("comparison_decision", [("A is fast.", 0), ("B is safe.", 1), ("A is old.", 2)])
    assert shape(compare, EVIDENCE).text == (
        "- Runbook - BGP session flaps: A is fast. [1] A is old. [2]\n- SOP - core router upgrade: B is safe. [3]"
    )


def test_an_unknown_template_names_the_valid_ones():
    with pytest.raises(ValueError, match="valid: procedure_sop"):
        Template.from_str("poem")


def test_a_comparison_keeps_to_the_word_budget_too(settings):  # type: ignore[no-untyped-def]
    settings.ATHENA_ANSWER_MAX_WORDS = 70
    long = " ".join(["word"] * 30) + "."
    draft = Draft(
        "comparison_decision", [("A is fast.", 0), ("B is safe.", 1), (long, 0), (long, 1), (long, 2)]
    )
    shaped = shape(draft, EVIDENCE)
    assert len(shaped.sentences) == 4  # 3 + 3 + 30 + 30 words; a third long sentence would pass 70
    assert shaped.text.startswith("- Runbook - BGP session flaps: A is fast. [1]")
    assert shaped.text.count("\n- ") == 1  # still one bullet per document


@pytest.mark.parametrize("template", ["concept_explanation", "procedure_sop", "comparison_decision"])
def test_a_sources_own_footnote_markers_are_not_shown_as_citations(template):  # type: ignore[no-untyped-def]
    # "[4]" in the source is a footnote; on the page "[n]" is a citation link, so it would point elsewhere
    draft = Draft(
        template,
        [("Backups are kept on a write-once volume [4].", 0), ("Keep [2] copies of the key offsite.", 1)],
        preface="Steps:" if template == "procedure_sop" else "",
    )
    text = shape(draft, EVIDENCE).text
    assert "write-once volume . [1]" not in text and "volume [4]" not in text, text
    assert "[4]" not in text and "Keep copies" in text
    assert "[1]" in text and "[2]" in text  # the answer's own citations stay
    # a bracketed index inside a word is no footnote
    kept = shape(Draft("concept_explanation", [("Set ifindex[0] to the uplink.", 0)]), EVIDENCE).text
    assert kept == "Set ifindex[0] to the uplink. [1]"


@pytest.mark.parametrize("template", ["parameter_lookup", "comparison_decision"])
def test_a_labelled_table_row_reads_as_label_and_value(template):  # type: ignore[no-untyped-def]
    # a two-column "name | value" table row, as parsed, would show its cell separator to the reader
    draft = Draft(
        template,
        [("Default: | PeerIdleTimeout 5", 0), ("Context: | relay config, peer block", 1)],
    )
    text = shape(draft, EVIDENCE).text
    assert "Default: PeerIdleTimeout 5 [1]" in text and "Context: relay config, peer block [2]" in text
    # a row of a table whose cells carry no label keeps its separators; so does a pipe inside a command
    row = shape(Draft("parameter_lookup", [("retries | 3 | attempts before giving up", 0)]), EVIDENCE).text
    assert row == "retries | 3 | attempts before giving up [1]"
    piped = shape(Draft("parameter_lookup", [("Count them: ls /run/relay/1/sock | wc -l", 0)]), EVIDENCE).text
    assert piped == "Count them: ls /run/relay/1/sock | wc -l [1]"


MAN = [
    Evidence(
        1,
        "man/demo.8.txt",
        "demo - demonstration daemon",
        "SIGNALS",
        "The daemon rereads its files on a signal.\nSIGHUP\nReload the configuration.\nOPTIONS\n"
        "-v is verbose.\nNAME\nSYNOPSIS\ndemo [-f FILE] [-d]",
        1.0,
    ),
    Evidence(2, "man/postqueue.1.txt", "postqueue", "SYNOPSIS", "postqueue [-v] -p\nDESCRIPTION\nNAME", 0.9),
    Evidence(3, "man/qmgr.8.txt", "qmgr", "", "The queue is scanned every 300s.", 0.8),
]


def test_a_heading_in_capitals_that_introduces_nothing_is_left_out():
    # "DESCRIPTION" at the end of a document's part of the answer is a heading and nothing more; "OPTIONS" is
    # followed by a sentence of its passage that is not the one under it; "SIGHUP" before its definition is a
    # term that the next sentence explains, and opens it
    draft = Draft(
        "concept_explanation",
        [
            ("The daemon rereads its files on a signal.", 0),
            ("SIGHUP", 0),
            ("Reload the configuration.", 0),
            ("postqueue [-v] -p", 1),
            ("DESCRIPTION", 1),
            ("NAME", 1),  # two trailing headings: neither introduces anything
            ("OPTIONS", 0),
            ("demo [-f FILE] [-d]", 0),
            ("The queue is scanned every 300s.", 2),
        ],
    )
    shaped = shape(draft, MAN)
    assert "SIGHUP: Reload the configuration. [1]" in shaped.text
    for heading in ("DESCRIPTION", "NAME", "OPTIONS"):
        assert heading not in shaped.text, shaped.text
    # (a synopsis line is a command: a one-line code block, see the test of code blocks below)
    assert (
        "[1]\n\n    demo [-f FILE] [-d] [1]\nFrom postqueue:\n\n    postqueue [-v] -p [2]\nFrom qmgr:"
        in shaped.text
    )
    assert ("SIGHUP", 0) in shaped.sentences and ("OPTIONS", 0) not in shaped.sentences


@pytest.mark.parametrize("template", ["concept_explanation", "comparison_decision"])
def test_a_heading_in_capitals_opens_the_sentence_below_it(template):  # type: ignore[no-untyped-def]
    draft = Draft(template, [("NAME", 0), ("SYNOPSIS", 0), ("demo [-f FILE] [-d]", 0), ("qmgr", 2)])
    text = shape(draft, MAN).text
    assert text.startswith(
        ("SYNOPSIS:\n\n    demo [-f FILE] [-d] [1]", "- demo - demonstration daemon: SYNOPSIS:\n\n    demo")
    )
    assert "NAME" not in text
    # an answer that opens with a heading nothing of its passage follows keeps it: it is all there is
    alone = shape(Draft(template, [("DESCRIPTION", 1)]), MAN).text
    assert "DESCRIPTION [1]" in alone


RUNBOOK = [
    Evidence(
        1,
        "runbooks/vpn.md",
        "Runbook - VPN tunnel down",
        "VPN tunnel down > Fix",
        "Fix\n1. Clear the stale security associations.\n2. Correct the branch side.\nVerify\n"
        "Watch the monitor for 15 minutes.",
        1.0,
    ),
    Evidence(
        2,
        "faq/keys.html",
        "Keys FAQ",
        "How do I check that a lease matches its ticket?",
        "How do I check that a lease matches its ticket?\nCompare their serials.",
        0.9,
    ),
]


def test_the_passages_own_section_heading_opens_the_sentence_below_it_or_is_left_out():
    # a runbook's "Fix" above its numbered list is a heading like a man page's "DESCRIPTION": it opens the step
    # under it, and where the sentence under it is not shown it introduces nothing
    draft = Draft(
        "troubleshooting",
        [
            ("Correct the branch side.", 0),
            ("Fix", 0),
            ("Clear the stale security associations.", 0),
            ("How do I check that a lease matches its ticket?", 1),
            ("Compare their serials.", 1),
        ],
    )
    text = shape(draft, RUNBOOK).text
    assert "Fix: Clear the stale security associations. [1]" in text
    assert "Fix [1]" not in text
    # a heading that is a question already is followed by a space, not "?:"
    assert "How do I check that a lease matches its ticket? Compare their serials. [2]" in text
    alone = shape(Draft("troubleshooting", [("Correct the branch side.", 0), ("Fix", 0)]), RUNBOOK).text
    assert alone == "Correct the branch side. [1]"
    for sentence in ("Fix", "Clear the stale security associations.", "Compare their serials."):
        assert sentence in passage_sentences(RUNBOOK[0]) + passage_sentences(RUNBOOK[1])


def test_a_numbered_heading_inside_a_passage_opens_the_sentence_below_it():
    # a section that begins inside a passage keeps its number and title on a line of its own
    faq = Evidence(
        1,
        "faq/relay.txt",
        "Relay FAQ",
        "4. Trouble with relayctl",
        "Check the firewall too.\n4.2. Every call fails with code 407 Not permitted\nThe command went over UDP.",
        1.0,
    )
    assert passage_sentences(faq)[1] == "4.2. Every call fails with code 407 Not permitted"
    draft = Draft("troubleshooting", [(s, 0) for s in passage_sentences(faq)[1:]])
    text = shape(draft, [faq]).text
    assert text == "4.2. Every call fails with code 407 Not permitted: The command went over UDP. [1]"


def test_a_row_of_a_table_with_a_header_reads_with_its_column_names():
    # the parser puts a rule line under a table's header rows; a row below it is shown with the names
    passage = (
        "Signals\n"
        "signal | name | action\n"
        "--- | --- | ---\n"
        "1 | SIGHUP | reload the configuration\n"
        "15 | SIGTERM | \n"
        "Headerless:\n"
        "ssh | secure remote shell\n"
        "dns | name resolution\n"
        "dmesg | tail\n"
        "Description: | Seconds to wait\n"
        "Syntax: | PeerIdleTimeout num"
    )
    evidence = [Evidence(1, "ref/signals.md", "Signals", "Signals", passage, 1.0)]

    def shown(*sentences: str) -> str:
        return shape(Draft("parameter_lookup", [(s, 0) for s in sentences]), evidence).text

    assert shown("1 | SIGHUP | reload the configuration") == (
        "signal: 1; name: SIGHUP; action: reload the configuration [1]"
    )
    assert shown("15 | SIGTERM |") == "signal: 15; name: SIGTERM [1]"  # an empty cell is left out
    # the header line right above a row it names is not shown again; alone it is shown as it is
    assert shown("signal | name | action", "1 | SIGHUP | reload the configuration").startswith("signal: 1;")
    assert shown("signal | name | action") == "signal | name | action [1]"  # it opens the answer
    assert shown("Headerless:", "signal | name | action") == "Headerless: [1]"  # it introduces nothing
    # no header marked: a table's first line may be data, and two pipes in a row are no table
    assert shown("dns | name resolution") == "dns | name resolution [1]"
    assert shown("dmesg | tail") == "dmesg | tail [1]"
    # a labelled row names itself, and the row above it is no header
    assert shown("Description: | Seconds to wait", "Syntax: | PeerIdleTimeout num") == (
        "Description: Seconds to wait [1] Syntax: PeerIdleTimeout num [1]"
    )


def test_a_command_continued_over_lines_keeps_its_lines_in_prose_and_loses_its_backslashes_in_steps():
    passage = "Creating it\ntmsh create monitor web interval 5 timeout 16 \\\n  send GET /healthz\nDone."
    evidence = [Evidence(1, "configs/lb.md", "Load balancer", "Creating it", passage, 1.0)]
    joined = "tmsh create monitor web interval 5 timeout 16 \\ send GET /healthz"
    # in prose the command is a code block of its lines, continuation included: it can be copied as it is
    assert shape(Draft("concept_explanation", [(joined, 0)]), evidence).text == (
        "    tmsh create monitor web interval 5 timeout 16 \\\n      send GET /healthz [1]"
    )
    # a numbered step is one line: there the backslash that joining left inside the command goes
    steps = Draft("procedure_sop", [(joined, 0), ("Done.", 0)], preface="Steps:")
    assert shape(steps, evidence).text.startswith("1. tmsh create monitor web interval 5 timeout 16 send GET")
    mixed = [Evidence(1, "run.md", "Run", "", "Run it\ntmsh create a \\\n  b\nUse C: \\ path here.", 1.0)]
    both = Draft("procedure_sop", [("tmsh create a \\ b", 0), ("Use C: \\ path here.", 0)], preface="Steps:")
    # in a passage with a continuation elsewhere, a backslash written between spaces on one line stays
    assert shape(both, mixed).text == "1. tmsh create a b [1]\n2. Use C: \\ path here. [1]"
    # a backslash between spaces that no line continuation made stays (a Windows path, an escaped character)
    literal = [Evidence(1, "notes.md", "Notes", "", "Type C: \\ then the folder name.", 1.0)]
    assert shape(Draft("concept_explanation", [("Type C: \\ then the folder name.", 0)]), literal).text == (
        "Type C: \\ then the folder name. [1]"
    )


def test_a_lead_in_is_shown_only_above_what_it_introduces():
    passage = (
        "The relay keeps a queue per peer. A peer is started like this:\n\n"
        "Run relayctl start peer7.\n"
        "Each peer has a log of its own."
    )
    evidence = [Evidence(1, "guides/relay.md", "Relay guide", "Peers", passage, 1.0)]
    lead_in = "A peer is started like this:"

    def shown(*sentences: str) -> str:
        return shape(Draft("concept_explanation", [(s, 0) for s in sentences]), evidence).text

    # right above the command it announces it stays; without it (cut by the word budget) it goes
    assert shown("The relay keeps a queue per peer.", lead_in, "Run relayctl start peer7.") == (
        "The relay keeps a queue per peer. [1] A peer is started like this: [1] Run relayctl start peer7. [1]"
    )
    assert shown("The relay keeps a queue per peer.", lead_in, "Each peer has a log of its own.") == (
        "The relay keeps a queue per peer. [1] Each peer has a log of its own. [1]"
    )
    assert shown("The relay keeps a queue per peer.", lead_in) == "The relay keeps a queue per peer. [1]"
    # the answer's lead is never left out
    assert shown(lead_in) == "A peer is started like this: [1]"


def test_a_command_on_a_line_of_its_own_is_a_code_block_and_a_listing_one_block():
    passage = (
        "The relay needs a spool directory. If it is missing, make it by running the lines below (as root):\n"
        "# mkdir /run/relay\n"
        "# chown relay /run/relay\n"
        "Then start it:\n"
        "# relayctl start --all"
    )
    evidence = [
        Evidence(1, "guides/relay.md", "Relay guide", "Spool", passage, 1.0),
        Evidence(2, "guides/other.md", "Other guide", "Spool", "Create it:\n# mkdir /run/relay\nDone.", 0.9),
    ]

    def shown(*pairs: tuple[str, int], template: str = "procedure_sop") -> str:
        for sentence, index in pairs:  # sentences the splitter makes of the passages
            assert sentence in passage_sentences(evidence[index])
        return shape(Draft(template, list(pairs)), evidence).text

    lead_in = "If it is missing, make it by running the lines below (as root):"
    # two commands of one listing: one block, cited once after its last line
    assert shown((lead_in, 0), ("mkdir /run/relay", 0), ("chown relay /run/relay", 0)) == (
        f"{lead_in} [1]\n\n    mkdir /run/relay\n    chown relay /run/relay [1]"
    )
    # a command that opens the answer opens it as a block; lines that do not follow each other stay apart
    assert shown(("mkdir /run/relay", 0), ("relayctl start --all", 0)) == (
        "    mkdir /run/relay [1]\n\n    relayctl start --all [1]"
    )
    # nor do the same lines of two passages join
    assert shown(("mkdir /run/relay", 1), ("chown relay /run/relay", 0)) == (
        "    mkdir /run/relay [1]\nFrom Relay guide:\n\n    chown relay /run/relay [2]"
    )
    # in a comparison, inside the document's bullet
    both = shown(
        ("mkdir /run/relay", 0), ("chown relay /run/relay", 0), ("Done.", 1), template="comparison_decision"
    )
    assert both == (
        "- Relay guide:\n\n    mkdir /run/relay\n    chown relay /run/relay [1]\n- Other guide: Done. [2]"
    )


def test_a_lead_in_after_the_lead_is_told_by_what_it_is_not_where_grouping_puts_it():
    # the lead spans two documents; a later sentence of the first, grouped with it, comes before the second
    # document's lead sentence: it is still no part of the lead, and a lead-in with nothing under it goes
    evidence = [
        Evidence(
            1,
            "guides/queue.md",
            "Queue guide",
            "",
            "The queue is scanned every 300s. Since 2.5:\nflush.",
            1.0,
        ),
        Evidence(2, "guides/relay.md", "Relay guide", "", "The relay retries every 60s.", 0.9),
    ]
    draft = Draft(
        "concept_explanation",
        [("The queue is scanned every 300s.", 0), ("The relay retries every 60s.", 1), ("Since 2.5:", 0)],
        lead=2,
    )
    assert shape(draft, evidence).text == (
        "The queue is scanned every 300s. [1] From Relay guide: The relay retries every 60s. [2]"
    )


def test_the_words_of_a_lead_in_left_out_go_to_the_next_sentence(settings):  # type: ignore[no-untyped-def]
    passage = "The relay is up. Start it like this:\n# relayctl start --all\nIt keeps one queue per peer."
    evidence = [Evidence(1, "guides/relay.md", "Relay guide", "", passage, 1.0)]
    draft = Draft(
        "concept_explanation",
        [
            ("The relay is up.", 0),
            ("Start it like this:", 0),
            ("relayctl start --all", 0),
            ("It keeps one queue per peer.", 0),
        ],
        lead=1,
        priority=(0, 10, 30, 20),
    )
    settings.ATHENA_ANSWER_MAX_WORDS = 10
    # the lead-in fits the budget but its command does not: it introduces nothing shown, and its four words go
    # to the next sentence by claim
    assert shape(draft, evidence).text == "The relay is up. [1] It keeps one queue per peer. [1]"
    # with room for all, the lead-in stays above its command
    settings.ATHENA_ANSWER_MAX_WORDS = 20
    assert shape(draft, evidence).text == (
        "The relay is up. [1] Start it like this: [1]\n\n    relayctl start --all [1]\n"
        "It keeps one queue per peer. [1]"
    )


def test_a_table_row_that_opens_with_a_setting_is_a_row_and_not_code():
    passage = "Mail transports\ndomains | transport\n--- | ---\n$relay_domains | $relay_transport\n"
    evidence = [Evidence(1, "guides/mail.md", "Mail guide", "", passage, 1.0)]
    assert "$relay_domains | $relay_transport" in passage_sentences(evidence[0])
    text = shape(Draft("parameter_lookup", [("$relay_domains | $relay_transport", 0)]), evidence).text
    assert text == "domains: $relay_domains; transport: $relay_transport [1]"


def test_a_records_label_lines_are_shown_one_per_line():
    passage = (
        "SUPPORT DESK\nQuillgate Support Desk\nPhone:  +1-555-0147 (24x7)\nE-mail: desk@quillgate.example\n"
    )
    evidence = [Evidence(1, "contacts.txt", "Contacts", "SUPPORT DESK", passage, 1.0)]
    record = "Quillgate Support Desk Phone: +1-555-0147 (24x7) E-mail: desk@quillgate.example"
    assert shape(Draft("parameter_lookup", [(record, 0)]), evidence).text == (
        "Quillgate Support Desk\nPhone: +1-555-0147 (24x7)\nE-mail: desk@quillgate.example [1]"
    )
