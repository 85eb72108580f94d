"""knowledge.chunking: structure-aware, budget-safe chunks (pure; a word counter stands in for the
tokenizer except in the tests marked slow, which load the real all-MiniLM-L6-v2 tokenizer)."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from knowledge.chunking import ChunkDraft, chunk_blocks, make_token_counter
from knowledge.parsing import Block, ParsedDocument, parse_file
from knowledge.text import passage_sentences, sentences

FIXTURES = Path(__file__).parent / "fixtures"

pytestmark = pytest.mark.unit


def words(text: str) -> int:
    return len(text.split())


def doc_of(*blocks: Block, title: str = "Doc") -> ParsedDocument:
    return ParsedDocument(title=title, author="", updated_at=None, metadata={}, blocks=list(blocks), links=[])


def title(text: str, level: int, trail: tuple[str, ...]) -> Block:
    return Block("title", text, (*trail, text), None, level)


def para(text: str, trail: tuple[str, ...], kind: str = "text", page: int | None = None) -> Block:
    return Block(kind, text, trail, page, None)


def sentence(i: int, n: int = 9) -> str:
    return " ".join(f"W{i}x{j}" for j in range(n - 1)) + f" end{i}."


def assert_within(chunks: list[ChunkDraft], limit: int, count=words) -> None:
    assert chunks, "no chunks"
    assert [c.ordinal for c in chunks] == list(range(len(chunks)))
    for chunk in chunks:
        assert count(chunk.text) <= limit, chunk.text
        assert chunk.token_count == count(chunk.text)


def test_long_procedure_never_splits_a_step():
    trail = ("Runbook", "Procedure")
    steps = [f"{i}. " + " ".join(f"s{i}w{j}" for j in range(14)) + "." for i in range(1, 31)]
    doc = doc_of(
        title("Runbook", 1, ()),
        title("Procedure", 2, ("Runbook",)),
        *(para(s, trail, "list_item") for s in steps),
    )
    chunks = chunk_blocks(doc, count_tokens=words, max_tokens=60)
    assert_within(chunks, 60)
    assert len(chunks) > 5
    for step in steps:
        holders = [c for c in chunks if step in c.text]
        assert holders, f"step split: {step[:20]}"
    for chunk in chunks:
        assert chunk.section_path == trail
        for line in chunk.text.splitlines():
            assert line in steps or line in ("Runbook", "Procedure")


def test_table_split_by_rows_with_header_repeated():
    header = "name | value | unit | note"
    rows = [f"param{i} | {i * 10} | ms | row {i} comment here" for i in range(25)]
    table = Block("table", "\n".join([header, *rows]), ("Guide", "Limits"), 3, 1)
    doc = doc_of(title("Limits", 2, ("Guide",)), table)
    chunks = chunk_blocks(doc, count_tokens=words, max_tokens=60)
    assert_within(chunks, 60)
    assert len(chunks) >= 3
    seen = []
    for chunk in chunks:
        lines = chunk.text.splitlines()
        body = [line for line in lines if line.startswith("param")]
        assert header in lines and lines.index(header) == lines.index(body[0]) - 1
        seen.extend(body)
        assert chunk.page == 3 and chunk.section_path == ("Guide", "Limits")
    assert seen == rows  # every row whole, in order, exactly once


def test_table_that_fits_is_moved_whole_to_a_fresh_chunk():
    intro = para(" ".join(["intro"] * 40) + ".", ("S",))
    table = Block("table", "a | b\n1 | 2\n3 | 4", ("S",), None, 1)
    chunks = chunk_blocks(doc_of(intro, table), count_tokens=words, max_tokens=45)
    assert chunks[-1].text == "a | b\n1 | 2\n3 | 4"


def test_heading_trail_and_top_level_sections_start_new_chunks():
    body = " ".join(f"word{i}" for i in range(30)) + "."
    doc = doc_of(
        title("Manual", 1, ()),
        para("Intro " + body, ("Manual",)),
        title("Install", 2, ("Manual",)),
        para("Install " + body, ("Manual", "Install")),
        title("Packages", 3, ("Manual", "Install")),
        para("Packages " + body, ("Manual", "Install", "Packages")),
        title("Configure", 2, ("Manual",)),
        para("Configure " + body, ("Manual", "Configure")),
    )
    chunks = chunk_blocks(doc, count_tokens=words, max_tokens=200)
    assert_within(chunks, 200)
    # H1 occurs once, so H2 sections are the top level: each starts a chunk even with room left
    starts = [c.text.split("\n", 1)[0] for c in chunks]
    assert starts == ["Manual", "Install", "Configure"]
    assert chunks[1].section_path == ("Manual", "Install")  # Install + its small sub-section packed
    assert "Packages" in chunks[1].text
    assert chunks[2].section_path == ("Manual", "Configure")


def test_small_sibling_subsections_pack_and_report_their_common_trail():
    doc = doc_of(
        title("Params", 1, ()),
        title("Target", 2, ("Params",)),
        para("Target host name.", ("Params", "Target")),
        title("Port", 2, ("Params",)),
        para("Port number to use.", ("Params", "Port")),
        title("Other", 1, ()),
        para("Unrelated " + " ".join(["x"] * 30) + ".", ("Other",)),
    )
    chunks = chunk_blocks(doc, count_tokens=words, max_tokens=100)
    assert chunks[0].text == "Params\nTarget\nTarget host name.\nPort\nPort number to use."
    assert chunks[0].section_path == ("Params",)
    assert chunks[1].section_path == ("Other",)


def test_chunk_exactly_at_the_window_limit():
    exact = " ".join(f"t{i}" for i in range(199)) + " end."
    assert words(exact) == 200
    chunks = chunk_blocks(doc_of(para(exact, ("S",))), count_tokens=words, max_tokens=200)
    assert [c.token_count for c in chunks] == [200]
    assert chunks[0].text == exact
    # a heading in front of a full-window paragraph cannot share its chunk; the trail still names it
    with_heading = doc_of(title("S", 1, ()), para(exact, ("S",)))
    chunks = chunk_blocks(with_heading, count_tokens=words, max_tokens=200)
    assert [c.token_count for c in chunks] == [200]
    assert chunks[0].section_path == ("S",)
    over = exact + " more"
    chunks = chunk_blocks(doc_of(para(over, ("S",))), count_tokens=words, max_tokens=200)
    assert len(chunks) == 2
    assert_within(chunks, 200)


def test_oversized_paragraph_splits_at_sentences_with_overlap():
    written = [sentence(i) for i in range(60)]  # 540 words
    doc = doc_of(title("Long", 1, ()), para(" ".join(written), ("Long",)))
    chunks = chunk_blocks(doc, count_tokens=words, max_tokens=100, overlap_ratio=0.10)
    assert_within(chunks, 100)
    assert len(chunks) >= 6
    for chunk in chunks:
        parts = sentences(chunk.text.split("\n", 1)[-1] if chunk.ordinal == 0 else chunk.text)
        assert all(p in written for p in parts), "a sentence was cut"
    for previous, current in zip(chunks, chunks[1:], strict=False):
        first = sentences(current.text)[0]
        assert previous.text.endswith(first), "no overlap sentence carried"
        assert words(first) <= 10  # within 10% of the budget


def test_overlap_ratio_zero_means_no_overlap():
    doc = doc_of(para(" ".join(sentence(i) for i in range(40)), ("S",)))
    chunks = chunk_blocks(doc, count_tokens=words, max_tokens=100, overlap_ratio=0.0)
    texts = [s for c in chunks for s in sentences(c.text)]
    assert len(texts) == len(set(texts)) == 40


def test_unpunctuated_text_splits_at_words_and_giant_tokens_at_characters():
    run_on = " ".join(f"word{i}" for i in range(450))
    chunks = chunk_blocks(doc_of(para(run_on, ("S",))), count_tokens=words, max_tokens=100)
    assert_within(chunks, 100)
    assert " ".join(c.text for c in chunks).split() == run_on.split()

    def chars(text: str) -> int:  # a counter where one long "word" exceeds the budget
        return len(text)

    blob = "A" * 950
    chunks = chunk_blocks(doc_of(para(blob, ("S",))), count_tokens=chars, max_tokens=200)
    assert_within(chunks, 200, count=chars)
    assert "".join(c.text for c in chunks) == blob


def test_oversized_list_item_and_code_split_only_then():
    item = "1. " + " ".join(sentence(i) for i in range(30))
    code = "\n".join(f"option_{i} = value_{i}" for i in range(80))
    doc = doc_of(para(item, ("S",), "list_item"), Block("code", code, ("S",), None, None))
    chunks = chunk_blocks(doc, count_tokens=words, max_tokens=50)
    assert_within(chunks, 50)
    code_lines = [line for c in chunks for line in c.text.splitlines() if line.startswith("option_")]
    assert code_lines == code.splitlines()  # code split at line boundaries, each line whole


def test_a_list_item_without_its_marker_gets_one_and_is_a_sentence_of_its_own():
    # an HTML <li> or a stripped bullet reaches the block without its marker; items without a period ran into
    # one sentence ("Fix spool index rebuild Fix -2/-8 flags in relayctl")
    trail = ("News",)
    doc = doc_of(
        para("Changes in this release:", trail),  # a paragraph: no marker
        para("Fix spool index rebuild with per-peer rotation", trail, "list_item"),
        para("Fix -2/-8 flags in relayctl", trail, "list_item"),
        para("2. Restart the daemon", trail, "list_item"),  # its marker kept: not marked twice
    )
    (chunk,) = chunk_blocks(doc, count_tokens=words, max_tokens=200)
    assert chunk.text.splitlines() == [
        "Changes in this release:",
        "- Fix spool index rebuild with per-peer rotation",
        "- Fix -2/-8 flags in relayctl",
        "2. Restart the daemon",
    ]
    assert sentences(chunk.text) == [
        "Changes in this release:",
        "Fix spool index rebuild with per-peer rotation",
        "Fix -2/-8 flags in relayctl",
        "Restart the daemon",
    ]


def test_a_chunk_records_the_lines_of_code_its_format_marks_as_code():
    marked = Block(
        "code", "router bgp 64510\n timers bgp 30 90\n\n timers bgp 30 90", ("S",), None, None, True
    )
    guessed = Block("code", "relayctl stats", ("S",), None, None)
    doc = doc_of(para("The standard is below.", ("S",)), marked, guessed)
    (chunk,) = chunk_blocks(doc, count_tokens=words, max_tokens=200)
    assert chunk.code_lines == ("router bgp 64510", "timers bgp 30 90")  # stripped, each once
    # a marked block split over chunks: each chunk records its own part
    long = Block(
        "code",
        "\n".join(f"neighbor 10.0.0.{i} remote-as 6450{i}" for i in range(40)),
        ("S",),
        None,
        None,
        True,
    )
    chunks = chunk_blocks(doc_of(long), count_tokens=words, max_tokens=50)
    assert len(chunks) > 1
    for piece in chunks:
        assert piece.code_lines == tuple(line.strip() for line in piece.text.splitlines() if line.strip())


def test_code_splits_between_a_comment_and_the_setting_it_describes_only_when_it_must():
    stanzas = [
        f"# comment {i} describes the setting below it in some detail\nsetting_{i} value one two"
        for i in range(12)
    ]
    doc = doc_of(Block("code", "\n".join(stanzas), ("S",), None, None))
    # 28: a line-by-line packing would fit a stanza and the next comment, but not its setting
    chunks = chunk_blocks(doc, count_tokens=words, max_tokens=28)
    assert_within(chunks, 28)
    for i in range(12):  # every comment is in the chunk that holds its setting
        holder = [c.text for c in chunks if f"setting_{i} value" in c.text]
        assert holder and f"# comment {i} describes" in holder[0]
    # one stanza over the budget still splits at line boundaries
    big = "\n".join(f"# line {i} of a long comment" for i in range(20)) + "\nsetting value"
    chunks = chunk_blocks(doc_of(Block("code", big, ("S",), None, None)), count_tokens=words, max_tokens=25)
    assert_within(chunks, 25)
    assert [line for c in chunks for line in c.text.splitlines()] == big.splitlines()


def test_lead_in_line_stays_with_what_it_introduces():
    doc = doc_of(
        para(" ".join(["filler"] * 30) + ".", ("S",)),
        para(" ".join(["more"] * 10) + ".", ("S",)),
        para("The configuration looks like this:", ("S",)),
        Block("code", "\n".join(f"line {i}" for i in range(20)), ("S",), None, None),
    )
    chunks = chunk_blocks(doc, count_tokens=words, max_tokens=50)
    assert chunks[1].text.startswith("The configuration looks like this:\nline 0")


def test_pages_follow_the_first_body_block():
    doc = doc_of(
        Block("title", "T", ("T",), 1, 1),
        para(" ".join(["a"] * 40) + ".", ("T",), page=1),
        para(" ".join(["b"] * 40) + ".", ("T",), page=2),
    )
    chunks = chunk_blocks(doc, count_tokens=words, max_tokens=50)
    assert [c.page for c in chunks] == [1, 2]


def test_non_additive_counter_is_still_respected():
    def lumpy(text: str) -> int:  # joins cost extra: counting the whole is not the sum of parts
        return len(text) // 3 + text.count("\n") * 2 + 1

    blocks = [para(f"Item number {i} has some words.", ("S",), "list_item") for i in range(60)]
    chunks = chunk_blocks(doc_of(*blocks), count_tokens=lumpy, max_tokens=40)
    assert_within(chunks, 40, count=lumpy)


def test_empty_document_and_argument_checks():
    assert chunk_blocks(doc_of(), count_tokens=words) == []
    with pytest.raises(ValueError):
        chunk_blocks(doc_of(), count_tokens=words, max_tokens=0)
    with pytest.raises(ValueError):
        chunk_blocks(doc_of(), count_tokens=words, overlap_ratio=0.9)


@pytest.mark.slow
def test_real_tokenizer_counts_word_pieces_without_special_tokens():
    count = make_token_counter()
    assert count("hello world") == 2
    assert count("net.ipv4.ip_forward") > 3  # identifiers become several word-pieces
    assert count.batch(["hello world", "ip route add"]) == [2, count("ip route add")]  # type: ignore[attr-defined]
    assert make_token_counter()("hello world") == 2  # tokenizer is loaded once and shared


@pytest.mark.slow
@pytest.mark.parametrize("fixture", ["resolver.html", "sop-dns-failover.md", "runbook.pdf", "ip-demo.8.txt"])
def test_real_tokenizer_chunks_fit_the_embedder_window(fixture):
    count = make_token_counter()
    doc = parse_file(FIXTURES / fixture)
    chunks = chunk_blocks(doc, count_tokens=count, max_tokens=200)
    assert_within(chunks, 200, count=count)
    body = [b for b in doc.blocks if b.kind != "title"]
    assert all(any(b.section_path[: len(c.section_path)] == c.section_path for b in body) for c in chunks)


# --------------------------------------------------------------------------------------------------------
# overlaps read as the same sentences on both sides: answering (agents.evidence) reads a chunk and the next one
# as one text and leaves out the sentences they share, so what a chunk carries over from its predecessor must
# split into the same sentences at the end of the one and at the start of the other

SAMPLE_KB = Path(__file__).resolve().parents[2] / "knowledge" / "sample_kb"

# sentences and lines that two splitters could read differently: abbreviations, lower-case starts, option
# terms, '#' comments, lines without a full stop, list markers, quotes, version numbers. Each use gets its own
# number ({n}), so that an overlap is never confused with a sentence that happens to repeat.
_PROSE = [
    "Restart daemon {n}.",
    "Check log {n} first, e.g. Syslog or the journal.",
    "Set option {n} to no. Then reload the service.",
    "It was fixed on Jan. 5 by vendor {n}.",
    "Wait approx. {n} seconds before the next try.",
    "the value {n} is read at start-up only.",
    "Version 2.{n}. Later releases changed the default.",
    "Why {n}? Nobody knows!",
    'Operator {n} said "stop." Then it stopped.',
    "The timeout defaults to {n} s (min. 1).",
    "Fig. {n} shows the topology.",
    "J. Smith wrote version {n}.",
    "See lb-pool(8) for detail {n}.",
    "Option {n} accepts these values:",
    "(legacy support {n}).",
    "Use 10.0.0.{n} as the resolver.",
]
_LINES = [
    "listen-port port{n}",
    "discard{n} - the packet is dropped silently.",
    "# the comment {n} goes on in lower case",
    "# Configure resolver {n} below this line",
    "-d{n}",
    "RUN_FIRST{n}",
    "1. Step {n} of the procedure.",
    "- a bullet item {n} without a full stop",
    "| key | value {n} |",
    "---",
    "Options {n}",
    "encaplimit ELIM{n}",
    "( only IPv6 tunnels ) set limit {n}.",
]


def _synthetic_doc(seed: int) -> ParsedDocument:
    """A document of sections whose blocks mix the sentences and lines above, in paragraphs, list items and
    code; wrapped over lines or not."""
    rng = random.Random(seed)
    numbers = iter(range(1, 10_000))
    blocks: list[Block] = [title(f"Synthetic {seed}", 1, ())]
    for section in range(rng.randint(1, 4)):
        trail = (f"Synthetic {seed}", f"Section {section}")
        blocks.append(title(trail[-1], 2, trail[:1]))
        for _ in range(rng.randint(2, 9)):
            kind = rng.choices(["text", "list_item", "code"], weights=[6, 3, 1])[0]
            if kind == "code":
                lines = [line.format(n=next(numbers)) for line in rng.sample(_LINES, 3)]
                blocks.append(Block("code", "\n".join(lines), trail, None, None))
                continue
            parts = [
                rng.choice(_PROSE if rng.random() < 0.7 else _LINES).format(n=next(numbers))
                for _ in range(rng.randint(1, 12))
            ]
            joiners = [rng.choice([" ", " ", "\n", "\n\n"]) for _ in parts]
            text = "".join(part + joiner for part, joiner in zip(parts, joiners, strict=True)).strip()
            blocks.append(para(text, trail, kind))
    return doc_of(*blocks, title=f"Synthetic {seed}")


def _carried_overlap(previous: ChunkDraft, current: ChunkDraft) -> str:
    """The overlap `current` opens with: its longest run of leading lines whose words end `previous` ("" when
    it opens with its own section's heading, which answering never reads as a continuation)."""
    first_line = current.text.lstrip("\n").partition("\n")[0].strip()
    if current.section_path and first_line == current.section_path[-1]:
        return ""
    ending = previous.text.split()
    carried = ""
    at = current.text.find("\n")
    while at != -1:
        leading = current.text[:at].split()
        if leading and ending[-len(leading) :] == leading:
            carried = current.text[:at]
        at = current.text.find("\n", at + 1)
    return carried


def _assert_overlaps_read_alike(chunks: list[ChunkDraft], document_title: str) -> int:
    """Checks every overlap between consecutive chunks; returns how many there were."""
    seen = 0
    for previous, current in zip(chunks, chunks[1:], strict=False):
        carried = _carried_overlap(previous, current)
        if not carried:
            continue
        seen += 1
        own = sentences(carried)
        assert own, carried
        at_end = passage_sentences(previous.text, document_title)[-len(own) :]
        at_start = passage_sentences(current.text, document_title)[: len(own)]
        assert list(at_end) == own, (
            f"overlap {carried!r} reads as {at_end} at the end of chunk {previous.ordinal}"
        )
        assert list(at_start) == own, (
            f"overlap {carried!r} reads as {at_start} at the start of {current.ordinal}"
        )
    return seen


def _documents() -> list[Path]:
    fixtures = [p for p in FIXTURES.iterdir() if p.suffix in (".md", ".txt", ".html", ".pdf", ".docx")]
    samples = [p for p in SAMPLE_KB.rglob("*") if p.suffix in (".md", ".txt", ".html")]
    return sorted(p for p in fixtures + samples if p.name != "corrupt.pdf")


@pytest.mark.parametrize("max_tokens", [40, 64, 120])
def test_overlaps_of_the_sample_and_fixture_documents_split_alike_on_both_sides(max_tokens: int) -> None:
    seen = 0
    for path in _documents():
        parsed = parse_file(path)
        chunks = chunk_blocks(parsed, count_tokens=words, max_tokens=max_tokens, overlap_ratio=0.25)
        seen += _assert_overlaps_read_alike(chunks, parsed.title)
    assert seen >= 5  # the documents do carry overlaps at this budget


def test_overlaps_of_synthetic_documents_split_alike_on_both_sides() -> None:
    seen = 0
    for seed in range(300):
        doc = _synthetic_doc(seed)
        for max_tokens in (24, 48):
            chunks = chunk_blocks(doc, count_tokens=words, max_tokens=max_tokens, overlap_ratio=0.3)
            seen += _assert_overlaps_read_alike(chunks, doc.title)
    assert seen >= 200


def test_an_overlap_that_would_run_on_into_the_next_block_is_not_carried() -> None:
    # after the carried sentences, the next chunk goes on with a wrapped line in lower case: the splitter would
    # read "... with the option below. listen-port is the port ..." as one sentence there, and not at the end of
    # the chunk before
    trail = ("S",)
    doc = doc_of(
        para(" ".join(["filler"] * 30) + ".", trail),
        para("The daemon listens on one port. Its port is set with the option below.", trail),
        para("listen-port is the port it listens on and it is read at start-up only", trail),
    )
    chunks = chunk_blocks(doc, count_tokens=words, max_tokens=50, overlap_ratio=0.3)
    assert len(chunks) == 2
    assert chunks[1].text.startswith("listen-port")  # no overlap rather than one read two ways
    # a next block that starts a sentence of its own takes the overlap
    doc = doc_of(
        *doc.blocks[:2], para("The listen-port option is read at start-up only, and it is a number", trail)
    )
    chunks = chunk_blocks(doc, count_tokens=words, max_tokens=50, overlap_ratio=0.3)
    assert chunks[1].text.startswith(
        "The daemon listens on one port. Its port is set with the option below.\n"
    )
    assert _assert_overlaps_read_alike(chunks, "Doc") == 1
