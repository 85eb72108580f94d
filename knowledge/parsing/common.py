"""What every format parser shares: the result types, the typed error, raw blocks and their assembly into
heading trails, and metadata date parsing. Pure (no Django)."""

from __future__ import annotations

import re
import textwrap
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta, timezone
from typing import Any

from knowledge.text import table_cells

BLOCK_KINDS = ("title", "text", "list_item", "table", "code")


@dataclass(frozen=True, slots=True)
class Block:
    """One structural unit of a document.

    ``kind`` is one of :data:`BLOCK_KINDS`. ``section_path`` is the heading trail; for a ``title`` block it
    ends with the heading itself. ``level`` means: heading level (1 = top) for titles, nesting depth for
    list items, number of header rows (repeated when the table is split) for tables, None otherwise.
    Table text is one row per line, cells joined with `` | ``; a table's header rows end with a rule line
    (``--- | ---``), counted in ``level``. ``marked``: a ``code`` block that the format itself marks as code (an
    HTML ``<pre>``, a Markdown code block, a man page's example: unfilled lines set deeper than the paragraph
    above them), not one a plain-text parser took for code by what its lines read as.
    """

    kind: str
    text: str
    section_path: tuple[str, ...]
    page: int | None
    level: int | None
    marked: bool = False


@dataclass(frozen=True, slots=True)
class ParsedDocument:
    """A parsed file. ``metadata`` is JSON-serialisable (front matter, HTML meta, format, pages...)."""

    title: str
    author: str
    updated_at: datetime | None
    metadata: dict[str, Any]
    blocks: list[Block]
    links: list[str] = field(default_factory=list)


class ParseError(Exception):
    """A file that cannot be turned into blocks. ``code`` is one of :attr:`CODES`."""

    CODES = ("empty", "too_large", "binary", "corrupt", "unsupported", "encoding")

    def __init__(self, code: str, message: str) -> None:
        if code not in self.CODES:
            raise ValueError(f"unknown ParseError code {code!r}; valid: {', '.join(self.CODES)}")
        super().__init__(f"{code}: {message}")
        self.code = code
        self.message = message


# Decompression limits: a DOCX is a ZIP whose members may inflate a thousandfold (a "zip bomb"); a PDF's
# content streams are inflated page by page, so its page count bounds that work.
MAX_UNCOMPRESSED_BYTES = 200_000_000
MAX_PDF_PAGES = 2_000


# --------------------------------------------------------------------------------------------------------
# raw blocks -> Blocks with heading trails


@dataclass(slots=True)
class RawBlock:
    """A block as a format parser emits it, before :func:`assemble_blocks` gives it its heading trail."""

    kind: str
    text: str
    level: int | None = None
    page: int | None = None
    term: bool = False  # a definition term (dt, option name); glued onto the block that follows it
    toc: bool = False  # inside a table of contents
    marked: bool = False  # code the format marks as code (Block.marked)


# (not U+200B: a zero-width space inside a word is a line-break hint, dropped by knowledge.text.folding)
WHITESPACE = re.compile(r"[ \t\f\v\u00a0\u2000-\u200a\u202f\u205f\u3000]+")
_MAX_TERM_CHAIN = 4


TABLE_RULE_CELL = "---"

# a document's own catalogue fields, under the names Markdown front matter gives them; a plain text's header
# lines ("Doc-Type: runbook") and an HTML page's <meta> tags (name="doc_type" or "doc-type") give them too, and
# knowledge.services reads them from the metadata under these names
DOCUMENT_FIELDS = (
    "doc_type",
    "department",
    "vendor",
    "review_by",
    "superseded_by",
    "access_tier",
    "allowed_groups",
)


def _rule_under_header(text: str, header_rows: int) -> str:
    """A table's text with a rule line ("--- | ---") under its header rows: the chunk text then says which
    line names the columns (answers show a row's cells with those names), as a Markdown table does."""
    rows = text.split("\n")
    width = len(table_cells(rows[header_rows - 1]))
    return "\n".join([*rows[:header_rows], " | ".join([TABLE_RULE_CELL] * width), *rows[header_rows:]])


def assemble_blocks(raws: Iterable[RawBlock]) -> list[Block]:
    """Attach heading trails; glue definition terms onto their definitions."""
    blocks: list[Block] = []
    trail: list[tuple[int, str]] = []
    terms: list[RawBlock] = []

    def path() -> tuple[str, ...]:
        return tuple(text for _, text in trail)

    def flush_terms() -> None:
        for term in terms:
            blocks.append(Block("text", term.text, path(), term.page, None))
        terms.clear()

    for raw in raws:
        text = raw.text.strip("\n") if raw.kind == "code" else raw.text.strip()
        if raw.kind == "code":
            text = textwrap.dedent(text).rstrip()
        if not text.strip():
            continue
        if raw.kind == "title":
            flush_terms()
            level = raw.level if raw.level and raw.level > 0 else 1
            text = WHITESPACE.sub(" ", text).strip().rstrip("¶").strip()
            if not text:
                continue
            while trail and trail[-1][0] >= level:
                trail.pop()
            trail.append((level, text))
            blocks.append(Block("title", text, path(), raw.page, level))
            continue
        if raw.term and raw.kind == "text":
            if len(terms) >= _MAX_TERM_CHAIN:
                flush_terms()
            terms.append(raw)
            continue
        block_level = raw.level
        if raw.kind == "table" and block_level and block_level < text.count("\n") + 1:
            text = _rule_under_header(text, block_level)
            block_level += 1
        page = raw.page
        if terms:
            if raw.kind in ("text", "list_item"):
                page = terms[0].page if terms[0].page is not None else page
                text = "\n".join([*(t.text for t in terms), text])
                terms.clear()
            else:
                flush_terms()
        blocks.append(Block(raw.kind, text, path(), page, block_level, raw.marked and raw.kind == "code"))
    flush_terms()
    return blocks


def first_heading(blocks: list[Block]) -> str:
    titles = [b for b in blocks if b.kind == "title"]
    if not titles:
        return ""
    top = min(b.level or 1 for b in titles)
    return next(b.text for b in titles if (b.level or 1) == top)


def dedupe(items: Iterable[str]) -> list[str]:
    return list(dict.fromkeys(i for i in items if i))


# --------------------------------------------------------------------------------------------------------
# dates

_PDF_DATE = re.compile(r"^D:(\d{4})(\d{2})?(\d{2})?(\d{2})?(\d{2})?(\d{2})?([Zz+-])?(\d{2})?'?(\d{2})?'?")


def parse_date(value: Any) -> datetime | None:
    """Best-effort date parsing for metadata (ISO 8601, RFC 2822, PDF ``D:`` dates). Naive means UTC."""
    if value is None or value == "":
        return None
    if isinstance(value, datetime):
        return value if value.tzinfo else value.replace(tzinfo=UTC)
    if isinstance(value, date):
        return datetime(value.year, value.month, value.day, tzinfo=UTC)
    text = str(value).strip()
    match = _PDF_DATE.match(text)
    if match:
        parts = [int(p) if p else d for p, d in zip(match.groups()[:6], (0, 1, 1, 0, 0, 0), strict=True)]
        try:
            result = datetime(parts[0], parts[1], parts[2], parts[3], parts[4], parts[5], tzinfo=UTC)
        except ValueError:
            return None
        sign, hh, mm = match.group(7), match.group(8), match.group(9)
        if sign in ("+", "-") and hh:
            offset = timedelta(hours=int(hh), minutes=int(mm or 0))
            result = result.replace(tzinfo=timezone(offset if sign == "+" else -offset))
        return result
    try:
        result = datetime.fromisoformat(text.replace("Z", "+00:00"))
        return result if result.tzinfo else result.replace(tzinfo=UTC)
    except ValueError:
        pass
    try:
        from email.utils import parsedate_to_datetime

        result = parsedate_to_datetime(text)
        return result if result.tzinfo else result.replace(tzinfo=UTC)
    except (TypeError, ValueError, IndexError):
        pass
    for fmt in ("%d %b %Y", "%d %B %Y", "%B %d, %Y", "%b %d, %Y", "%Y/%m/%d", "%d.%m.%Y", "%Y-%m"):
        try:
            return datetime.strptime(text, fmt).replace(tzinfo=UTC)
        except ValueError:
            continue
    return None
