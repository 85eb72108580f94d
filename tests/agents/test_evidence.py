"""Extractive answering as pure functions: sentence scoring, answer units, attribution checks. No database,
no model: the lexical half of the scorer is enough to order these small passages."""

from __future__ import annotations

import pytest

from agents.evidence import (
    Draft,
    Evidence,
    ScoredSentence,
    compose_extractive,
    score_sentences,
    verify,
    verify_sentence,
)

pytestmark = [pytest.mark.unit]


def _evidence(*texts: str) -> list[Evidence]:
    return [Evidence(i + 1, f"doc{i}.md", f"Doc {i}", "", text, 1.0 - i / 10) for i, text in enumerate(texts)]


def _pick(text: str, index: int = 0) -> ScoredSentence:
    return ScoredSentence(text, index, 1.0, 1.0, 0.0, 0, 1.0)


def _answer(draft: Draft) -> list[str]:
    return [sentence for sentence, _ in draft.sentences]


def test_a_sentence_that_refers_back_brings_the_sentence_it_refers_to():
    evidence = _evidence(
        "The pool table can be cleared. By design, dump pool output may be fed back as input to tidectl -r. "
        "Effectively, this is the tidesync-equivalent of pool-export and pool-import."
    )
    best = _pick("Effectively, this is the tidesync-equivalent of pool-export and pool-import.")
    answer = _answer(compose_extractive("concept_explanation", "q", [best], evidence))
    assert answer[:2] == [
        "By design, dump pool output may be fed back as input to tidectl -r.",
        "Effectively, this is the tidesync-equivalent of pool-export and pool-import.",
    ]
    # one step back is enough: that one is not anaphoric
    assert "The pool table can be cleared." not in answer


def test_a_chain_of_references_is_followed_at_most_two_steps_back():
    evidence = _evidence(
        "Burst control is covered in this section.\n\nThese caps are set for each separate peer.\n\n"
        "This directive turns on reply throttling for relay frames. "
        "Its goal is to cut link load caused by broken peers."
    )
    best = _pick("Its goal is to cut link load caused by broken peers.")
    answer = _answer(compose_extractive("concept_explanation", "q", [best], evidence))
    assert answer[:3] == [
        "These caps are set for each separate peer.",
        "This directive turns on reply throttling for relay frames.",
        "Its goal is to cut link load caused by broken peers.",
    ]
    assert "Burst control is covered in this section." not in answer


def test_prose_about_this_option_brings_the_entry_line_that_names_it():
    evidence = _evidence(
        "--farewell-notice n\nIn relay edge mode, send the hub a parting notice if tidesync stops. "
        "In edge mode, on shutdown, this option will ask the hub to drop its peer record at once.\n"
        "syncport port\nThis option sets the TCP port of the TideSync key hub."
    )
    close = "In edge mode, on shutdown, this option will ask the hub to drop its peer record at once."
    answer = _answer(compose_extractive("concept_explanation", "q", [_pick(close)], evidence))
    assert answer[:2] == [
        "--farewell-notice n In relay edge mode, send the hub a parting notice if tidesync stops.",
        close,
    ]
    # an entry line that starts with its own term names what "this option" is
    entry = "syncport port This option sets the TCP port of the TideSync key hub."
    answer = _answer(compose_extractive("concept_explanation", "q", [_pick(entry)], evidence))
    assert answer[0] == entry and close not in answer


def test_the_unit_runs_on_into_a_sentence_that_continues_the_thought():
    evidence = _evidence(
        "Peer history entries can be lost before the cap set by the peerhistmax directive is hit. "
        "This comes from the layout of the index that holds the peer entries in memory. "
        "It is a ring buffer which can keep only up to 16 clashing peers per bucket. "
        "Separate paragraph about something else entirely that should not be part of the answer."
    )
    best = _pick("Peer history entries can be lost before the cap set by the peerhistmax directive is hit.")
    answer = _answer(compose_extractive("troubleshooting", "q", [best], evidence))
    assert "It is a ring buffer which can keep only up to 16 clashing peers per bucket." in answer
    assert not any(s.startswith("Separate paragraph") for s in answer)


def test_a_long_explanation_without_a_continuation_stops_after_one_sentence():
    evidence = _evidence(
        "The server keeps a table of clients which it uses to decide how to answer each request it receives. "
        "Another long sentence follows here which talks about a completely different configuration topic. "
        "A third sentence that is also long enough not to count as a short follow-up to the ones before."
    )
    best = _pick(
        "The server keeps a table of clients which it uses to decide how to answer each request it receives."
    )
    answer = _answer(compose_extractive("concept_explanation", "q", [best], evidence))
    assert len(answer) == 2  # the sentence and the one after it, nothing more


def test_numbers_quoted_in_the_question_count_whole_like_identifiers():
    from agents.evidence import quoted_share

    assert quoted_share({"fence_key"}, {"377"}, "A value of 377 for fence_key.") == 1.0
    assert quoted_share({"fence_key"}, {"377"}, "A value of 3770 here, 1377 there.") == 0.0
    assert quoted_share(set(), {"3"}, "Retry 30 times.") == 0.0
    assert quoted_share(set(), set(), "anything") == 0.0


def test_procedure_lists_the_steps_the_best_sentence_introduces():
    evidence = _evidence(
        "To rotate the key, run these commands:\n1. Generate a new key with keygen.\n"
        "2. Copy the key to /etc/app/key.\n3. Restart the service."
    )
    best = _pick("To rotate the key, run these commands:")
    draft = compose_extractive("procedure_sop", "how do I rotate my key", [best], evidence)
    assert draft.preface == "Steps:"
    assert _answer(draft) == [
        "Generate a new key with keygen.",
        "Copy the key to /etc/app/key.",
        "Restart the service.",
    ]


def test_a_bulleted_list_is_not_a_procedures_steps():
    # a table of contents or the commands of several cases, bulleted: a set of things, not steps in order
    evidence = _evidence(
        "Use tidectl to bring up the links. The syntax is:\n- edge profiles:\n- hub profiles:"
        "\n- Examples Say your hub profile is reef0.conf, you launch it like this:"
    )
    best = _pick("Examples Say your hub profile is reef0.conf, you launch it like this:")
    draft = compose_extractive("procedure_sop", "how do I launch the link", [best], evidence)
    assert draft.preface != "Steps:"
    assert _answer(draft)[0] == "Examples Say your hub profile is reef0.conf, you launch it like this:"


def test_procedure_takes_a_list_from_the_best_sentences_document_only():
    """A step of another document's list among the next best sentences does not replace the answer the best
    sentence gives; a step of the best sentence's own document's list does."""
    printer = (
        "Resetting the printer. To reset the badge printer, hold the feed button for 12 seconds. "
        "The printer keeps its templates across a reset."
    )
    policy = (
        "Access rules:\n1. Laptops authenticate with a device certificate.\n"
        "2. Devices that cannot authenticate, such as badge printers, use MAC bypass.\n3. Guests use VLAN 300."
    )
    evidence = [
        Evidence(1, "printer.md", "Printer", "", printer, 1.0),
        Evidence(2, "policy.md", "Policy", "", policy, 0.9),
    ]
    best = _pick("To reset the badge printer, hold the feed button for 12 seconds.", 0)
    step = _pick("Devices that cannot authenticate, such as badge printers, use MAC bypass.", 1)
    draft = compose_extractive(
        "procedure_sop", "how do I reset the badge printer", [best, step], evidence, close_to_best=0.0
    )
    assert draft.preface != "Steps:" and _answer(draft)[0] == best.text
    assert "Laptops authenticate with a device certificate." not in _answer(draft)
    # the same list in the best sentence's own document is its procedure
    own = [Evidence(1, "printer.md", "Printer", "", f"{printer} {policy}", 1.0)]
    step = _pick(step.text, 0)
    draft = compose_extractive(
        "procedure_sop", "how do I reset the badge printer", [best, step], own, close_to_best=0.0
    )
    assert draft.preface == "Steps:" and step.text in _answer(draft)


def test_procedure_whose_steps_together_outweigh_the_best_sentence_is_the_answer():
    """Each step of a procedure can rank below sentences of the introduction while the steps together are the
    likelier answer: with the selector's probabilities, a list whose steps add up to the best sentence's
    probability makes the answer its steps; a list that adds up to less does not."""
    intro = "Only one router is upgraded per window. The approved release is 17.9."
    procedure = (
        "Procedure\n1. Drain the router.\n2. Add the package with install add.\n"
        "3. Activate it with a rollback timer.\n4. Commit it, or it rolls back by itself.\n"
        "5. Remove the drain.\n6. Clean up old packages."
    )
    evidence = [
        Evidence(1, "sop.md", "SOP", "SOP", intro, 1.0),
        Evidence(2, "sop.md", "SOP", "SOP > Procedure", procedure, 0.8),
        Evidence(3, "other.md", "Other", "Other", procedure.replace("router", "switch"), 0.7),
    ]

    def ranked(*step_scores: float, index: int = 1) -> list[ScoredSentence]:
        picks = [
            ScoredSentence("Only one router is upgraded per window.", 0, 0.3, 1.0, 0.0, 0),
            ScoredSentence("The approved release is 17.9.", 0, 0.25, 1.0, 0.0, 1),
            ScoredSentence("Procedure", 1, 0.2, 1.0, 0.0, 0),
        ]
        steps = [
            "Commit it, or it rolls back by itself.",
            "Drain the router.",
            "Add the package with install add.",
            "Activate it with a rollback timer.",
            "Remove the drain.",
        ]
        texts = [t.replace("router", "switch") if index == 2 else t for t in steps]
        picks += [ScoredSentence(t, index, p, 1.0, 0.0, 1) for t, p in zip(texts, step_scores, strict=False)]
        return picks

    question = "how do I upgrade the router so that it rolls back by itself"
    draft = compose_extractive(
        "procedure_sop", question, ranked(0.15, 0.1, 0.08), evidence, close_to_best=0.0
    )
    assert draft.preface == "Steps:" and _answer(draft)[0] == "Drain the router."
    assert len(_answer(draft)) == 6
    fewer = compose_extractive("procedure_sop", question, ranked(0.15, 0.1), evidence, close_to_best=0.0)
    assert fewer.preface != "Steps:" and _answer(fewer)[0] == "Only one router is upgraded per window."
    # only a list's three most probable steps count: many unlikely steps do not add up to an answer
    many = compose_extractive(
        "procedure_sop", question, ranked(0.09, 0.09, 0.09, 0.09, 0.09), evidence, close_to_best=0.0
    )
    assert many.preface != "Steps:"
    # another document's list never outweighs the best sentence's own document
    other = compose_extractive(
        "procedure_sop", question, ranked(0.15, 0.1, 0.08, index=2), evidence, close_to_best=0.0
    )
    assert other.preface != "Steps:"
    # hand-made scores (close_to_best > 0) are not probabilities: they are not added up
    hand = compose_extractive("procedure_sop", question, ranked(0.15, 0.1, 0.08), evidence)
    assert hand.preface != "Steps:"


def test_a_sentence_with_a_changed_number_is_not_supported():
    source = "The default keepalive interval is 60 seconds and the hold time is 180 seconds."
    assert verify_sentence("The default keepalive interval is 60 seconds.", source).supported
    changed = verify_sentence("The default keepalive interval is 30 seconds.", source)
    assert not changed.supported
    assert changed.missing_tokens == ("30",)


def test_attribution_score_is_the_share_of_supported_sentences_and_gates_at_seventy_percent():
    evidence = _evidence("Port 7460 is the default TideSync key port. The hub listens on all addresses.")
    good = Draft("parameter_lookup", [("Port 7460 is the default TideSync key port.", 0)])
    mixed = Draft(
        "parameter_lookup",
        [
            ("Port 7460 is the default TideSync key port.", 0),
            ("Port 123 is the default TideSync key port.", 0),
        ],
    )
    bad_citation = Draft("parameter_lookup", [("Port 7460 is the default TideSync key port.", 5)])
    assert verify(good, evidence).score == 1.0 and verify(good, evidence).passed
    assert verify(mixed, evidence).score == 0.5 and not verify(mixed, evidence).passed
    assert not verify(bad_citation, evidence).passed


def test_a_lead_in_reached_while_reading_on_brings_what_it_introduces():
    evidence = _evidence(
        "The collector takes its input from a fifo node. The spool directory must exist as well. "
        "When the pipe is missing, make it with the commands below (as root):\n"
        "# mkdir /srv/collector\n# mkfifo /srv/collector/in\n\nUnrelated paragraph about something else."
    )
    best = _pick("The collector takes its input from a fifo node.")
    answer = _answer(compose_extractive("troubleshooting", "q", [best], evidence))
    assert answer[-2:] == ["mkdir /srv/collector", "mkfifo /srv/collector/in"]


def test_a_question_about_a_default_prefers_the_sentence_that_states_one():
    # equal term coverage; without the default cue the first passage's sentence would win on retrieval rank
    evidence = _evidence(
        "The packet limit burst applies per packet.", "The limit holds burst items, by default five."
    )
    ranked = score_sentences("what is the burst of a packet limit by default", evidence)
    assert ranked[0].text == "The limit holds burst items, by default five."
    assert ranked[0].support < ranked[1].support  # the cue shapes the ranking only; adequacy reads support


def test_a_comment_in_a_configuration_example_is_read_with_the_setting_below_it():
    comment = "Only the leading eight (8) letters are checked."
    above = _evidence(
        f"fencing {{\n    # must match on every fenceport node.\n    # {comment}\n    fence_key 1234\n}}"
    )
    apart = _evidence(
        f"fencing {{\n    # must match on every fenceport node.\n    # {comment}\n\n    fence_key 1234\n}}"
    )
    question = "which fence_key letters does fenceport actually read?"

    def coverage(evidence):
        return next(s.coverage for s in score_sentences(question, evidence) if s.text == comment)

    assert coverage(above) > coverage(apart)
    # a Markdown heading (blank line after it) is not a comment: it gets no look-ahead context
    from agents.evidence import comment_lines

    assert comment in comment_lines(above[0].text)
    assert not comment_lines("# Heading of a section\n\nThe password must match on every router.\n")


def test_a_table_row_is_read_with_its_column_names():
    """A table's body row says what its header names ("Contract number" above "Quillgate | QG-3391"), as the
    answer shows it ("Vendor: Quillgate; Contract number: QG-3391"): the header's words count as the row's
    own, and the header is its context even several rows down."""
    header = "Vendor | Contract number | Level"
    rows = ["Relaywerk | RW-1120 | Gold", "Tessaline | TS-0418 | Silver", "Quillgate | QG-3391 | Premium"]
    table = _evidence("\n".join([header, "--- | --- | ---", *rows]))
    headerless = _evidence("\n".join(rows))  # the same rows without a header: nothing names their columns
    question = "What is our Quillgate support contract number?"

    def scored(evidence):
        return next(s for s in score_sentences(question, evidence) if s.text == rows[-1])

    with_names, without = scored(table), scored(headerless)
    assert with_names.coverage > without.coverage
    assert with_names.support > without.support


def test_a_setting_picked_from_a_configuration_example_brings_the_comment_above_it():
    evidence = _evidence(
        "fencing {\n    fence_mode KEY\n    # Key for joining the fence group.\n"
        "    # Only the leading eight (8) letters are checked.\n    fence_key 1234\n}"
    )
    answer = _answer(compose_extractive("parameter_lookup", "q", [_pick("fence_key 1234 }")], evidence))
    assert answer[:2] == ["Only the leading eight (8) letters are checked.", "fence_key 1234 }"]
    # a prose sentence before a picked prose sentence is not a comment: it is not pulled in
    prose = _evidence("The key is shared. Only the leading eight letters are checked.")
    picked = _pick("Only the leading eight letters are checked.")
    assert _answer(compose_extractive("parameter_lookup", "q", [picked], prose))[0] == picked.text


def test_a_comment_that_calls_its_setting_this_option_brings_the_setting_line_below_it():
    long = [
        f"# Sentence {n} of the comment goes on about details that do not matter for this test at all."
        for n in range(4)
    ]
    evidence = _evidence(
        "### FIRST SYNC ADJUSTMENT\n# This option is handy to rapidly fix the drift at boot.\n"
        + "\n".join(long)
        + "\n! jumpsync 1.0 3\n# A skip tick is an occasional adjustment.\n"
        + "\n".join(long)
        + "\n! skiptickmode smear"
    )
    picked = _pick("This option is handy to rapidly fix the drift at boot.")
    answer = _answer(
        compose_extractive("troubleshooting", "how do I fix the drift quickly?", [picked], evidence)
    )
    assert answer[-1] == "! jumpsync 1.0 3"
    assert len(answer) < 7  # reading on stopped inside the comment; the setting line came with it
    # a comment that does not refer to its setting brings it only when the question asks for a name
    leap = _pick("A skip tick is an occasional adjustment.")
    assert "! skiptickmode smear" not in _answer(
        compose_extractive("troubleshooting", "skip tick?", [leap], evidence)
    )
    named = _answer(
        compose_extractive("troubleshooting", "which setting handles a skip tick?", [leap], evidence)
    )
    assert named[-1] == "! skiptickmode smear"


def test_a_parameter_lookup_puts_the_sentence_with_the_value_first():
    evidence = _evidence(
        "syncport port This option sets the TCP port where the hub accepts TideSync key requests. "
        "The default is 7460."
    )
    best = _pick("syncport port This option sets the TCP port where the hub accepts TideSync key requests.")
    question = "syncport: which port is the default?"
    lookup = _answer(compose_extractive("parameter_lookup", question, [best], evidence))
    assert lookup[:2] == [
        "The default is 7460.",
        "syncport port This option sets the TCP port where the hub accepts TideSync key requests.",
    ]
    # other templates keep reading order
    concept = _answer(compose_extractive("concept_explanation", question, [best], evidence))
    assert concept[0].startswith("syncport port")


def test_reading_on_after_the_best_sentence_leaves_room_for_the_next_best():
    evidence = _evidence(
        "These drop modes exist:\n\nDrop with a specific notice code. Drop with peer-gone. "
        "Drop with no-path. Drop using notice6. Drop with link reset. Drop as policy-denied.",
        "The usual default drop mode is path-closed.",
    )
    best = ScoredSentence("These drop modes exist:", 0, 1.0, 1.0, 0.0, 0, 1.0)
    runner = ScoredSentence("The usual default drop mode is path-closed.", 1, 0.9, 0.9, 0.0, 0, 0.9)
    answer = _answer(compose_extractive("troubleshooting", "q", [best, runner], evidence, max_sentences=1))
    assert len(answer) == 5  # the limit for one sentence plus reading on
    assert answer[:2] == ["These drop modes exist:", "Drop with a specific notice code."]
    assert answer[-1] == "The usual default drop mode is path-closed."


def test_each_sub_question_s_best_sentence_is_in_the_answer():
    """A chained question: the whole question matches the bridging fact best; the best sentence for the part
    that asks the actual question (pinned by the pipeline) must be in the answer, right after it."""
    evidence = _evidence(
        "The tutorial sets the retry count to -1. It uses a disk queue. It names the queue file. "
        "It sets the queue size. It enables the spool. It sets the work directory.",
        "In RainerScript the parameter is called action.retryLimitCount.",
    )
    parts = [
        ScoredSentence(text, 0, 1.0 - i / 10, 1.0, 0.0, i, 1.0)
        for i, text in enumerate(
            [
                "The tutorial sets the retry count to -1.",
                "It uses a disk queue.",
                "It names the queue file.",
                "It sets the queue size.",
            ]
        )
    ]
    sub_best = ScoredSentence(
        "In RainerScript the parameter is called action.retryLimitCount.", 1, 0.5, 0.5, 0, 0, 0.5
    )
    without = _answer(compose_extractive("concept_explanation", "q", parts, evidence, hop="multi_hop"))
    assert sub_best.text not in without
    answer = _answer(
        compose_extractive("concept_explanation", "q", parts, evidence, hop="multi_hop", pinned=[sub_best])
    )
    assert answer[0] == "The tutorial sets the retry count to -1."
    assert sub_best.text in answer


def test_an_identifier_the_analyser_normalises_is_found_in_its_source():
    """ "(RFC 5798)" is the identifier rfc5798 in both the sentence and the passage it was copied from."""
    source = "The pair shares 10.20.5.10 using keepalived 2.2. keepalived implements VRRPv3 (RFC 5798)."
    check = verify_sentence("keepalived implements VRRPv3 (RFC 5798).", source)
    assert check.supported and not check.missing_tokens
    assert not verify_sentence("keepalived implements VRRPv3 (RFC 5799).", source).supported


def test_an_option_asked_with_its_value_attached_matches_the_bare_option_in_the_manual():
    """ "tidesyncd -L1" is documented as "-L<level>": the sentence naming the bare option is on topic."""
    evidence = _evidence(
        "Tidesync has support for profile linting. It provides a dedicated command line switch (-L<level>) "
        "that puts it into profile lint mode. Be aware that many packagers split the profile."
    )
    ranked = score_sentences("tidesyncd -L1: what is it for?", evidence)
    assert "profile lint mode" in ranked[0].text
    assert ranked[0].coverage >= 0.5


def test_a_question_asking_which_option_prefers_a_reference_entry_to_a_usage_example():
    evidence = _evidence(
        "portls -t -a List all relay ports and their peers.\n\n"
        "-a, --all Show both bound and non-bound ports.\n\n"
        "-b, --bound Show only bound ports (these are hidden by default).\n\n"
        "jumpsync threshold limit\nThis directive makes tidesyncd jump the local clock."
    )
    asked = score_sentences("which flag lists only the ports that are bound", evidence)
    assert asked[0].text.startswith("-b, --bound")
    # the bonus shapes the ranking only (adequacy reads support), and only when the question asks for a name
    entry = asked[0]
    assert entry.score - entry.support >= 0.15
    example = next(s for s in asked if s.text.startswith("portls -t -a"))
    assert example.score - example.support < 0.15
    plain = score_sentences("do bound ports get listed by default", evidence)
    assert all(s.score - s.support < 0.15 for s in plain)
    # "which kind / type of ..." asks for a name too
    kind = score_sentences("which kind of port listing shows only the ones that are bound", evidence)
    assert kind[0].text.startswith("-b, --bound") and kind[0].score - kind[0].support >= 0.15
    # a description below its short term line is an entry too; a usage example is not
    from agents.evidence import is_entry

    assert is_entry("This directive makes tidesyncd jump the local clock.", "jumpsync threshold limit")
    assert is_entry("sinkhole - the rule tells the relay to quietly discard the frame.", "")
    assert not is_entry("portls -t -a List all relay ports and their peers.", "")
    assert not is_entry("It is stepped at boot.", "The clock is off by minutes.")


def test_reading_on_stops_at_a_fragment_without_words():
    evidence = _evidence(
        "2.14. Why are peer history entries lost before reaching peerhistmax? ? "
        "2.15. What became of the adminkey directive?"
    )
    best = _pick("Why are peer history entries lost before reaching peerhistmax?")
    draft = compose_extractive("troubleshooting", "q", [best], evidence)
    assert _answer(draft) == [best.text]
    assert verify(draft, evidence).score == 1.0


def test_an_item_of_a_list_of_entries_is_read_with_the_sentence_that_introduces_the_list():
    states = (
        "These are the daemon states: DIALING -- the starting state.\n"
        "HOLD -- (Edge only) Pausing for the first reply.\n"
        "LOGIN -- (Edge only) Proving identity to the hub.\n"
        "FETCH_PROFILE -- (Edge only) Pulling settings from the hub.\n"
    )
    question = "which daemon state means pulling settings"
    ranked = score_sentences(question, _evidence(states))
    item = next(s for s in ranked if s.text.startswith("FETCH_PROFILE"))
    # the list's lead-in ("daemon states") counts as the item's context; the item before it alone would not
    alone = score_sentences(question, _evidence(states.replace("These are the daemon states: ", "")))
    assert item.coverage > next(s for s in alone if s.text.startswith("FETCH_PROFILE")).coverage
    assert ranked[0].text == item.text


def test_reading_on_goes_on_into_the_chunk_that_continues_the_passage():
    # the best sentence ends its chunk; what it leads to opens the next chunk, which starts with the sentence
    # the two share (consecutive chunks overlap)
    lead = "Old-style keys do not reach TideScript blocks, as this sample shows."
    evidence = _evidence(
        f"It is advised to write TideScript blocks. {lead}",
        "Unrelated text about templates.",
        f"{lead} Hub1's block.retryLimit key is not applied, instead hub2's is! "
        "One aim of the new syntax was to prevent mix-ups.",
    )
    best = _pick(lead)
    alone = compose_extractive("concept_explanation", "q", [best], evidence)
    assert _answer(alone) == [lead]  # without the link the passage ends there
    draft = compose_extractive("concept_explanation", "q", [best], evidence, continued_in={0: 2})
    assert draft.sentences == [
        (lead, 0),  # the shared sentence is read once
        ("Hub1's block.retryLimit key is not applied, instead hub2's is!", 2),
        ("One aim of the new syntax was to prevent mix-ups.", 2),
    ]
    assert verify(draft, evidence).score == 1.0  # each sentence cites the passage it comes from
    # a next chunk that opens a section of its own (its first line is its heading) does not go on with this one
    new_section = Evidence(
        3, "doc2.md", "Doc 2", "Actions > Pre-checks", "Pre-checks\nRun show ip bgp summary.", 0.8
    )
    draft = compose_extractive(
        "concept_explanation", "q", [best], [*evidence, new_section], continued_in={0: 3}
    )
    assert _answer(draft) == [lead]


def test_a_procedure_cut_by_the_chunk_boundary_goes_on_into_the_next_chunk():
    first = (
        "To fail over the DNS primary, run these commands:\n1. Freeze zone transfers on the primary.\n"
        "2. Promote the secondary with rndc."
    )
    evidence = _evidence(
        first,
        "Unrelated text about NTP.",
        # the next chunk repeats the last step (overlap), ends the list and goes on with prose
        "2. Promote the secondary with rndc.\n3. Point the resolvers at the new primary.\n"
        "4. Thaw zone transfers.\nAfterwards, check the serial numbers.",
        # a chunk whose list starts after prose does not continue anything
        "See the runbook index.\n1. Unrelated first step.",
    )
    best = _pick("To fail over the DNS primary, run these commands:")
    draft = compose_extractive(
        "procedure_sop", "steps to fail over the DNS primary", [best], evidence, continued_in={0: 2}
    )
    assert draft.sentences == [
        ("Freeze zone transfers on the primary.", 0),
        ("Promote the secondary with rndc.", 0),
        ("Point the resolvers at the new primary.", 2),
        ("Thaw zone transfers.", 2),
    ]
    assert verify(draft, evidence).score == 1.0
    elsewhere = compose_extractive("procedure_sop", "q", [best], evidence, continued_in={0: 3})
    assert len(elsewhere.sentences) == 2
    # a list that ends before its chunk does is complete: the next chunk's list is another one
    closed = _evidence(
        first + "\nThe secondary now answers queries.", "3. Point the resolvers at the new primary."
    )
    assert len(compose_extractive("procedure_sop", "q", [best], closed, continued_in={0: 1}).sentences) == 2


def test_the_title_line_a_document_opens_with_is_not_glued_to_its_first_sentence():
    title = "Runbook - High CPU on core router"
    text = (
        f"{title}\nAlert\nCORE-CPU-HIGH fires when the CPU average is above 85 percent.\n"
        "Diagnosis\n1. Find the busiest processes: show processes cpu sorted 5min"
    )
    runbook = Evidence(1, "runbook.md", title, f"{title} > Alert", text, 1.0)
    ranked = score_sentences("high cpu on a core router: what do I check?", [runbook])
    # a section heading stays with the sentence below it (a reference entry's heading names its subject); a
    # heading alone ("Diagnosis") is too short to be a candidate anyway
    assert {s.text for s in ranked} == {
        "Alert CORE-CPU-HIGH fires when the CPU average is above 85 percent.",
        "Find the busiest processes: show processes cpu sorted 5min",
    }
    # the title still counts, as the passage's context
    assert ranked[0].coverage > 0
    # the same text under another title is read as it is
    other = Evidence(2, "other.md", "Other", "Other", text, 1.0)
    assert any(s.text.startswith(title) for s in score_sentences("core router cpu", [other]))


def test_a_procedure_is_answered_with_its_steps_when_a_close_runner_up_is_one_of_them():
    evidence = _evidence(
        "The approved target release is IOS-XE 17.9.5a.\n"
        "1. Add the package with install add.\n"
        "2. Activate with an automatic rollback timer: install activate auto-abort-timer 45.\n"
        "3. If everything matches, commit. If you do nothing, the router rolls back by itself."
    )
    opening = ScoredSentence("The approved target release is IOS-XE 17.9.5a.", 0, 0.50, 0.5, 0.0, 0, 0.5)
    # the second sentence of step 3: a step may hold several sentences
    step = ScoredSentence("If you do nothing, the router rolls back by itself.", 0, 0.45, 0.5, 0.0, 4, 0.45)
    draft = compose_extractive(
        "procedure_sop", "how do I upgrade so that it rolls back", [opening, step], evidence
    )
    assert draft.preface == "Steps:"
    assert (
        _answer(draft)[1]
        == "Activate with an automatic rollback timer: install activate auto-abort-timer 45."
    )
    # a step far behind the best sentence does not decide the answer's shape
    far = ScoredSentence(step.text, 0, 0.30, 0.5, 0.0, 4, 0.30)
    assert compose_extractive("procedure_sop", "q", [opening, far], evidence).preface != "Steps:"


def test_the_selectors_sentences_become_units_with_what_they_need_around_them():
    from agents.evidence import compose_ranked

    evidence = _evidence(
        "Retry settings. The agent retries failed uploads. It waits 30 seconds between attempts. "
        "Uploads larger than 2 GB are split. Each part is sent on its own connection."
    )
    ranked = score_sentences("How long does the agent wait between upload retries?", evidence)
    waits = next(s for s in ranked if s.text.startswith("It waits"))
    split = next(s for s in ranked if s.text.startswith("Uploads larger"))
    draft = compose_ranked("parameter_lookup", "How long between retries?", [waits, split], evidence)
    texts = [t for t, _ in draft.sentences]
    # "It" refers back: the sentence it names comes first; the value-first rule keeps a referring sentence put
    assert texts[:2] == ["The agent retries failed uploads.", "It waits 30 seconds between attempts."]
    assert draft.lead == 3  # the lead unit: the sentence before, the pick and the sentence after
    # the second pick already came with the lead (the sentence after it): it is not repeated, nor read on from
    assert texts == [*texts[:2], "Uploads larger than 2 GB are split."]


def test_a_caption_is_no_answer_sentence():
    """A table's caption ("Table 3. Queue limits") names what is below it: it is no candidate, and it does not
    come after a pick as the sentence that follows it (the table it announces is not shown)."""
    from agents.evidence import compose_ranked

    evidence = _evidence(
        "A queue holds at most 500 messages by default.\nTable 3. Queue limits\nName | Default\n--- | ---\n"
        "bulk | 500",
        "Each queue is flushed every minute. The flush interval is not configurable.",
    )
    draft = compose_ranked(
        "parameter_lookup", "q", [_pick("A queue holds at most 500 messages by default.")], evidence
    )
    assert _answer(draft) == ["A queue holds at most 500 messages by default."]
    draft = compose_ranked(
        "parameter_lookup", "q", [_pick("Each queue is flushed every minute.", 1)], evidence
    )
    assert _answer(draft) == [
        "Each queue is flushed every minute.",
        "The flush interval is not configurable.",
    ]
    ranked = score_sentences("What are the queue limits?", evidence)
    assert ranked and not any(s.text.startswith("Table 3.") for s in ranked)


def test_the_word_budget_goes_to_the_probable_sentences_before_the_ones_that_follow_them(settings):
    """Each pick brings the sentence after it, but a later pick has the stronger claim on the budget."""
    from agents.evidence import compose_ranked
    from agents.shaping import shape

    filler = "Then " + " ".join(["padding"] * 24)
    evidence = _evidence(
        f"The agent retries failed uploads. It waits 30 seconds between attempts. {filler} one.",
        f"Uploads larger than 2 GB are split. {filler} two.",
        "Each part is sent on its own connection. The limit is eight parts at a time.",
    )
    ranked = score_sentences("How long does the agent wait between upload retries?", evidence)
    picks = [
        next(s for s in ranked if s.text.startswith(prefix))
        for prefix in ("It waits", "Uploads larger", "The limit is")
    ]
    draft = compose_ranked("parameter_lookup", "How long between retries?", picks, evidence, units=3)
    following = f"{filler} two."
    assert following in [t for t, _ in draft.sentences]  # the second pick's next sentence is in the draft
    settings.ATHENA_ANSWER_MAX_WORDS = 75
    shown = [t for t, _ in shape(draft, evidence).sentences]
    # the lead unit (37 words) stays whole; then the picks (7 + 8 words); the second pick's 26-word follower
    # would fit before the third pick in reading order, but not after it
    assert shown[:3] == [
        "The agent retries failed uploads.",
        "It waits 30 seconds between attempts.",
        f"{filler} one.",
    ]
    assert "The limit is eight parts at a time." in shown and following not in shown
    assert "Uploads larger than 2 GB are split." in shown


def test_a_command_on_a_line_of_its_own_brings_the_lead_in_that_announces_it():
    from agents.evidence import compose_ranked

    evidence = _evidence(
        "The relay needs a spool directory. If it is missing, create it by running these lines (as root):\n"
        "# mkdir /run/relay\n"
        "# chown relay /run/relay\n"
        "The relay fills it on its next start.",
        "# relayctl status --all\nIt lists every peer.",
    )
    lead_in = "If it is missing, create it by running these lines (as root):"
    draft = compose_ranked("procedure_sop", "q", [_pick("chown relay /run/relay")], evidence)
    # the command before the pick is what it needs (a short unpunctuated line), and the lead-in above both
    assert _answer(draft)[:3] == [lead_in, "mkdir /run/relay", "chown relay /run/relay"]
    assert draft.lead == 4  # with the sentence after the pick
    draft = compose_ranked("procedure_sop", "q", [_pick("mkdir /run/relay")], evidence)
    assert _answer(draft)[:2] == [lead_in, "mkdir /run/relay"]
    # a sentence of prose under a lead-in brings nothing; nor does a command that opens its passage's sentences
    draft = compose_ranked("procedure_sop", "q", [_pick("The relay fills it on its next start.")], evidence)
    assert lead_in not in _answer(draft)
    draft = compose_ranked("procedure_sop", "q", [_pick("relayctl status --all", 1)], evidence)
    assert _answer(draft) == ["relayctl status --all", "It lists every peer."]


def test_a_value_moved_first_in_a_lookup_takes_the_lead_in_above_it_along():
    from agents.evidence import compose_ranked

    evidence = _evidence(
        "The relay keeps UTF-8 off by default. To make the setting permanent in relay.conf:\n"
        "# relayctl set utf8_enable=yes\n"
        "# relayctl reload\n"
        "Then test it."
    )
    pick = _pick("relayctl set utf8_enable=yes")
    draft = compose_ranked(
        "parameter_lookup", "How do I enable UTF-8 in the relay for good?", [pick], evidence
    )
    lead_in = "To make the setting permanent in relay.conf:"
    assert _answer(draft)[:3] == [lead_in, "relayctl set utf8_enable=yes", "relayctl reload"]
