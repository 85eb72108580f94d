"""Adversarial content cannot hang ingestion or answering: a crafted document (a 100 kB line of one repeated
piece, a ruler of dots) or a crafted question is processed in bounded time, never minutes of one worker.

The checks are structural where they can be (how much text the tokenizer is asked to read) and otherwise a
generous bound on inputs the old code took minutes over, so a slow machine does not make them flaky."""

from __future__ import annotations

import threading
import time
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path

import pytest

from knowledge.chunking import chunk_blocks, make_token_counter
from knowledge.parsing import Block, ParsedDocument, ParseError, parse_file
from knowledge.parsing.registry import MAX_PARSE_SECONDS, MAX_PARSE_SECONDS_BY_TYPE
from knowledge.services import IngestOptions, document_stage
from knowledge.text import locate_sentences, sentences

pytestmark = [pytest.mark.unit]


def _document(*texts: str) -> ParsedDocument:
    blocks = [Block("text", text, (), None, None) for text in texts]
    return ParsedDocument(title="Notes", author="", updated_at=None, metadata={}, blocks=blocks, links=[])


def _reading(count: Callable[[str], int]) -> tuple[Callable[[str], int], list[int]]:
    """`count`, recording how many characters each call asks it to read."""
    read: list[int] = []

    def counting(text: str) -> int:
        read.append(len(text))
        return count(text)

    return counting, read


@pytest.mark.parametrize("piece", ["a{}@", "a{}.", "--a{}", "a{}-"])
def test_a_long_word_of_many_tokens_is_cut_reading_it_a_few_times_only(piece: str) -> None:
    # one "word" (no whitespace) of 40 kB that the word-piece tokenizer reads as 20,000+ tokens: cut into
    # pieces within budget. The old cut searched the whole rest of the word for every piece (the tokenizer
    # read it ~100 times over: 22 s for 100 kB, hours for the 1 MB line an upload may hold). Numbered
    # pieces, so that no two prefixes are the same text (the counter's cache would hide the reading)
    word = "".join(piece.format(i) for i in range(10_000))[:40_000]
    count, read = _reading(make_token_counter())
    chunks = chunk_blocks(_document("A line.", word), count_tokens=count, max_tokens=200)
    assert len(chunks) > 100
    assert all(chunk.token_count <= 200 for chunk in chunks)
    assert word in "".join(chunk.text for chunk in chunks).replace("\n", "")
    assert sum(read) < 20 * len(word), f"the tokenizer read {sum(read) // len(word)} times the word"


def test_cutting_a_word_takes_the_longest_prefix_within_budget() -> None:
    # the pieces are what a search over each whole rest found: each the longest prefix within the budget of
    # a piece (the chunk's, less the 10 % kept for the overlap)
    word = "x1." * 400
    count = make_token_counter()
    chunks = chunk_blocks(_document(word), count_tokens=count, max_tokens=40, overlap_ratio=0.1)
    texts = [chunk.text for chunk in chunks]
    assert "".join(texts) == word
    for text, following in zip(texts, texts[1:], strict=False):
        assert count(text) <= 36 < count(text + following[0])


@pytest.mark.parametrize(
    "text",
    [
        "." * 200_000,  # a ruler of dots: every dot began a match that read the rest of the run (minutes)
        "!?" * 100_000,
        # a period that ends no sentence: the sentence so far was copied at every one (minutes for 3 MB)
        "Mr. " * 800_000,
        "e.g. A " * 480_000,
        "Fig. 1 " * 480_000,
    ],
    ids=["dots", "marks", "abbreviations", "e.g.", "figures"],
)
def test_sentence_splitting_is_linear_on_runs_of_periods(text: str) -> None:
    started = time.perf_counter()
    located = locate_sentences(text)
    elapsed = time.perf_counter() - started
    assert elapsed < 10, f"{elapsed:.1f} s"  # ~2 s here; the old splitter took a minute to many minutes
    assert located and all(span.start < span.end for span in located)


def test_the_splitter_still_cuts_where_it_did() -> None:
    assert sentences("It failed... Restart it. Then see Fig. 3 below. Mr. Smith agreed.") == [
        "It failed...",
        "Restart it.",
        "Then see Fig. 3 below.",
        "Mr. Smith agreed.",
    ]
    assert sentences("Table 7.3. Summary of verbs follows. Done!! Next?) Yes.") == [
        "Table 7.3. Summary of verbs follows.",
        "Done!!",
        "Next?)",
        "Yes.",
    ]


def _markdown(tmp_path: Path, body: str) -> Path:
    path = tmp_path / "crafted.md"
    path.write_text(body)
    return path


# Markdown that takes any Python-Markdown release well past a fraction of a second: about 8 MB of ordinary
# paragraphs (0.55 s per 2 MB on the 2-core test machine). Releases up to 3.11.3 also spent minutes on 40 kB of
# "[" and recursed out on deeply nested list items; 3.11.4 parses both at once, so the time limit is tested on
# size, which no release will make instant.
SLOW_MARKDOWN = (
    "# Notes\n\n"
    + ("The relay restarts when its key is renewed and the standby takes over the traffic. " * 12 + "\n\n")
    * 9_000
)


@pytest.mark.parametrize("line", ["- " * 2_000 + "x", "1. " * 2_000 + "x"], ids=["bullets", "numbers"])
def test_markdown_nested_deeper_than_the_renderer_recurses_is_refused_as_corrupt(
    tmp_path: Path, line: str
) -> None:
    # "- - - - x" is a list item holding a list item ... : Python-Markdown up to 3.11.3 recursed until
    # RecursionError, which reached the ingest log as a traceback ("error: maximum recursion depth exceeded");
    # 3.11.4 renders it. Either way the file is parsed or refused as corrupt, never a traceback.
    try:
        parsed = parse_file(_markdown(tmp_path, f"# Notes\n\n{line}\n"))
    except ParseError as refused:
        assert refused.code == "corrupt"
        assert "nested too deeply" in refused.message
    else:
        assert parsed.blocks[0].text == "Notes" and parsed.blocks[-1].text.endswith("x")


def test_a_file_that_parses_past_the_time_limit_is_refused_and_its_parser_stopped(tmp_path: Path) -> None:
    # Python-Markdown up to 3.11.3 read the rest of the paragraph again for every "[" of a run: 40 kB of "[" took
    # many minutes of one worker (or of the web thread parsing an upload). A parser past its limit is stopped.
    path = _markdown(tmp_path, SLOW_MARKDOWN)
    started = time.perf_counter()
    with pytest.raises(ParseError) as refused:
        parse_file(path, max_seconds=0.2)
    assert time.perf_counter() - started < 10
    assert refused.value.code == "too_large"
    assert "took more than 0.2 s to parse" in refused.value.message
    deadline = time.monotonic() + 10
    while any(t.name == "parse crafted.md" for t in threading.enumerate()) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not any(t.name == "parse crafted.md" for t in threading.enumerate()), "the parser goes on running"


def test_within_the_time_limit_parsing_and_its_errors_are_unchanged(tmp_path: Path) -> None:
    parsed = parse_file(
        _markdown(tmp_path, "# Notes\n\nRestart the [relay](relay.md) first.\n"), max_seconds=30
    )
    assert [block.text for block in parsed.blocks] == ["Notes", "Restart the relay first."]
    assert parsed.links == ["relay.md"]
    binary = tmp_path / "blob.txt"
    binary.write_bytes(b"\x00\x01\x02\xff" * 100)
    with pytest.raises(ParseError) as refused:
        parse_file(binary, max_seconds=30)
    assert refused.value.code == "binary"


@pytest.mark.parametrize("seed", ["<a ", "</", "<!--x>", "<?x"])
def test_html_with_markup_nothing_closes_parses_in_one_pass(tmp_path: Path, seed: str) -> None:
    # html.parser searched the rest of the page for the end of each unclosed "<" when the page ended: 200 kB of
    # "<a " took 7 minutes, 1 MB of "</" or "<!--x>" minutes (quadratic); read as text from the start: one pass
    path = tmp_path / "crafted.html"
    path.write_text(
        "<html><body><h1>Notes</h1><p>Restart the relay first.</p>" + seed * (1_000_000 // len(seed))
    )
    started = time.perf_counter()
    parsed = parse_file(path, max_seconds=60)
    assert time.perf_counter() - started < 10
    assert [block.text for block in parsed.blocks][:2] == ["Notes", "Restart the relay first."]
    assert seed.strip() in parsed.blocks[-1].text  # the unclosed markup is kept as the text it is


def test_html_markup_that_closes_reads_as_before(tmp_path: Path) -> None:
    path = tmp_path / "page.html"
    path.write_text(
        "<html><body><p>a < b and <b>c</b></p><!-- a note --><p>x &amp; y</p>"
        "<pre>if a &lt; b</pre><p>tail <!-- open < end"
    )
    assert [block.text for block in parse_file(path).blocks] == [
        "a < b and c",
        "x & y",
        "if a < b",
        "tail <!-- open < end",
    ]


def test_ingestion_parses_within_the_configured_time_limit(tmp_path: Path, settings) -> None:  # type: ignore[no-untyped-def]
    # the ingest service hands ATHENA_MAX_PARSE_SECONDS to the parser; 0 (the default) leaves each format its
    # own limit: text formats parse at megabytes a second, DOCX and PDF (2,000 pages allowed) take far longer
    assert MAX_PARSE_SECONDS <= 300
    assert MAX_PARSE_SECONDS_BY_TYPE["docx"] >= 600 and MAX_PARSE_SECONDS_BY_TYPE["pdf"] >= 600
    path = _markdown(tmp_path, SLOW_MARKDOWN)
    settings.ATHENA_MAX_PARSE_SECONDS = 0.2
    started = time.perf_counter()
    with pytest.raises(ParseError, match="took more than 0.2 s to parse"):
        document_stage(
            source="crafted.md",
            path=path,
            root=str(tmp_path),
            content_hash="0" * 64,
            options=IngestOptions(),
            gazetteer={},
            timings=defaultdict(float),
        )
    assert time.perf_counter() - started < 10
