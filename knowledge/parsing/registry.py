"""The parser registry: one parser per document type, each type claiming its file extensions, and
:func:`parse_file`, the entry point ingestion calls. Pure (no Django).

A format module registers its parser with :func:`parser_register`; ``knowledge/parsing/__init__.py`` imports
every format module, so the registry is complete whenever ``knowledge.parsing`` has been imported.
"""

from __future__ import annotations

import ctypes
import dataclasses
import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from knowledge.parsing.common import MAX_PDF_PAGES, MAX_UNCOMPRESSED_BYTES, ParsedDocument, ParseError
from knowledge.text.folding import typesetting_unfold

# How long one file may take to parse, by document type. A crafted file can drive a parser into quadratic work
# (Python-Markdown reads the rest of a paragraph again for every "[" of a run: 20 kB of "[" took minutes); it
# is refused when its time runs out instead of holding a worker, or a web thread parsing an upload, for hours.
# Generous for real files: text formats parse at megabytes a second here; DOCX (unstructured: ~5 ms a
# paragraph, 30,000 paragraphs took 115 s) and PDF (up to MAX_PDF_PAGES pages) get fifteen minutes.
MAX_PARSE_SECONDS = 120.0
MAX_PARSE_SECONDS_BY_TYPE = {"docx": 900.0, "pdf": 900.0}


@dataclass(frozen=True, slots=True)
class ParseLimits:
    """Bounds on the work one file may cause: what a DOCX or a PDF's streams may inflate to, and how many
    pages of a PDF are interpreted."""

    max_uncompressed: int = MAX_UNCOMPRESSED_BYTES
    max_pdf_pages: int = MAX_PDF_PAGES


# A parser reads the file itself (binary formats need the path, text formats decode the bytes) and returns
# the document, or raises ParseError.
Parser = Callable[[Path, ParseLimits], ParsedDocument]

PARSERS: dict[str, Parser] = {}  # document type ("html", "pdf", ...) -> its parser
EXTENSIONS: dict[str, str] = {}  # lower-case extension (".htm", "" for none) -> document type
# Anything with an extension no parser claims and not listed below is sniffed and parsed as text when it is
# text (README.Debian, chrony.conf.example1 ...).
FALLBACK_TYPE = "text"
# Extensions we recognise but cannot parse.
UNSUPPORTED_EXTENSIONS = frozenset({
    ".doc", ".xls", ".xlsx", ".ppt", ".pptx", ".odt", ".ods", ".odp", ".rtf", ".epub", ".msg", ".eml",
    ".png", ".jpg", ".jpeg", ".gif", ".bmp", ".tif", ".tiff", ".webp", ".svg", ".ico",
    ".zip", ".gz", ".tgz", ".bz2", ".xz", ".7z", ".rar", ".tar", ".zst",
    ".exe", ".dll", ".so", ".o", ".a", ".bin", ".iso", ".img", ".deb", ".rpm", ".jar", ".class", ".pyc",
    ".mp3", ".mp4", ".wav", ".avi", ".mov", ".mkv", ".ogg", ".flac", ".sqlite", ".db",
})  # fmt: skip


def parser_register(doc_type: str, *, extensions: Iterable[str]) -> Callable[[Parser], Parser]:
    """Register the decorated function as the parser of ``doc_type`` and of files with ``extensions``.

    Raises ValueError when the type already has a parser, or an extension is claimed twice or is one of
    :data:`UNSUPPORTED_EXTENSIONS`: every type has exactly one parser, every extension one type."""
    claimed = [ext.lower() for ext in extensions]

    def register(parser: Parser) -> Parser:
        if doc_type in PARSERS:
            raise ValueError(f"document type {doc_type!r} already has a parser: {PARSERS[doc_type]!r}")
        for ext in claimed:
            if ext in EXTENSIONS or ext in UNSUPPORTED_EXTENSIONS:
                owner = EXTENSIONS.get(ext, "unsupported")
                raise ValueError(f"extension {ext!r} of {doc_type!r} is already taken by {owner!r}")
        PARSERS[doc_type] = parser
        EXTENSIONS.update(dict.fromkeys(claimed, doc_type))
        return parser

    return register


def document_type(path: Path) -> str:
    """The document type of ``path`` by its extension. Raises :class:`ParseError` ("unsupported") for an
    extension we recognise but cannot parse; an unknown extension is :data:`FALLBACK_TYPE`."""
    ext = path.suffix.lower()
    if ext in UNSUPPORTED_EXTENSIONS:
        raise ParseError("unsupported", f"{ext} files are not supported")
    return EXTENSIONS.get(ext, FALLBACK_TYPE)


def parser_for(doc_type: str) -> Parser:
    """The parser registered for ``doc_type``. Raises :class:`ParseError` ("unsupported") naming the
    supported types when there is none."""
    try:
        return PARSERS[doc_type]
    except KeyError:
        raise ParseError(
            "unsupported",
            f"no parser for document type {doc_type!r}; supported: {', '.join(sorted(PARSERS))}",
        ) from None


def parse_file(
    path: Path,
    *,
    max_bytes: int = 50_000_000,
    max_uncompressed: int = MAX_UNCOMPRESSED_BYTES,
    max_pdf_pages: int = MAX_PDF_PAGES,
    max_seconds: float | None = None,
) -> ParsedDocument:
    """Parse ``path`` into a :class:`ParsedDocument` with the parser registered for its type.

    ``max_uncompressed`` bounds what a DOCX or a PDF's streams may inflate to (see
    :func:`knowledge.parsing.archive_limits_check`, :func:`knowledge.parsing.pdf_inflate_check`);
    ``max_pdf_pages`` bounds how many pages of a PDF are interpreted (a longer PDF is refused as too large);
    ``max_seconds`` how long the parser may run (a file it has not parsed by then is refused as too large; None:
    :data:`MAX_PARSE_SECONDS_BY_TYPE`, else :data:`MAX_PARSE_SECONDS`), and
    a file nested deeper than the parser's recursion can follow (a Markdown list item holding a list item ...
    on one line) is refused as corrupt.

    Raises :class:`ParseError` (codes: empty, too_large, binary, corrupt, unsupported, encoding).
    OSError (missing/unreadable file) propagates unchanged: it is not a property of the content.
    """
    path = Path(path)
    if path.is_dir():
        raise ParseError("unsupported", f"{path.name} is a directory")
    stat = path.stat()
    if stat.st_size > max_bytes:
        raise ParseError("too_large", f"{path.name} is {stat.st_size} bytes (limit {max_bytes})")
    if stat.st_size == 0:
        raise ParseError("empty", f"{path.name} is empty")
    mtime = datetime.fromtimestamp(stat.st_mtime, tz=UTC)
    doc_type = document_type(path)
    parser = parser_for(doc_type)
    if max_seconds is None:
        max_seconds = MAX_PARSE_SECONDS_BY_TYPE.get(doc_type, MAX_PARSE_SECONDS)
    limits = ParseLimits(max_uncompressed=max_uncompressed, max_pdf_pages=max_pdf_pages)
    doc = _parse_within(parser, path, limits, max_seconds)
    doc = _typesetting_unfolded(doc)
    if not doc.blocks:
        raise ParseError("empty", f"{path.name} contains no text")
    doc = dataclasses.replace(doc, updated_at=_instant_in_utc(doc.updated_at) or mtime)
    if not doc.title:
        doc = dataclasses.replace(doc, title=_title_from_name(path))
    return doc


def _instant_in_utc(value: datetime | None) -> datetime | None:
    """A document's own date as the same instant in UTC, or None (unknown) when that instant is outside the
    years 1 to 9999: .NET writes its DateTime.MinValue with the local offset (0001-01-01T00:00:00+01:00), an
    instant in 1 BC that PostgreSQL stores but Python cannot read back, so every query loading the row failed."""
    if value is None:
        return None
    if value.tzinfo is None:
        return value.replace(tzinfo=UTC)  # naive means UTC (astimezone would read it in the server's zone)
    try:
        return value.astimezone(UTC)
    except OverflowError:
        return None


def _typesetting_unfolded(doc: ParsedDocument) -> ParsedDocument:
    """The document with the typesetter's characters (ligatures, soft hyphens, zero-width spaces) turned into
    what they stand for in its title, blocks and heading trails, whatever the format (PDF text extraction emits
    "ﬁ"; HTML, DOCX and text carry soft hyphens): see :func:`knowledge.text.folding.typesetting_unfold`."""
    blocks = []
    for block in doc.blocks:
        text = typesetting_unfold(block.text)
        path = tuple(typesetting_unfold(part) for part in block.section_path)
        if text != block.text or path != block.section_path:
            if not text.strip():
                continue  # a block of soft hyphens only
            block = dataclasses.replace(block, text=text, section_path=path)
        blocks.append(block)
    return dataclasses.replace(doc, title=typesetting_unfold(doc.title), blocks=blocks)


class _ParseAbandoned(BaseException):
    """Raised inside a parser's thread once its caller has given up waiting for it (BaseException: a parser's
    own `except Exception` does not swallow it)."""


def _parse_within(parser: Parser, path: Path, limits: ParseLimits, max_seconds: float) -> ParsedDocument:
    """Run ``parser`` in a thread of its own and wait at most ``max_seconds`` for it. A thread, not a signal:
    uploads are parsed in web threads too, where no alarm can interrupt. A parser that runs out of time is
    stopped by an exception raised in its thread at the next Python instruction it runs (parsers are Python
    loops; a C call in progress finishes first), and the file is refused."""
    outcome: list[ParsedDocument] = []
    failure: list[BaseException] = []

    def run() -> None:
        try:
            outcome.append(parser(path, limits))
        except _ParseAbandoned:
            pass
        except BaseException as exc:  # handed to the caller, re-raised there
            failure.append(exc)

    worker = threading.Thread(target=run, name=f"parse {path.name}", daemon=True)
    worker.start()
    worker.join(max_seconds)
    if worker.is_alive():
        ident = worker.ident
        if ident is not None:
            ctypes.pythonapi.PyThreadState_SetAsyncExc(
                ctypes.c_ulong(ident), ctypes.py_object(_ParseAbandoned)
            )
        raise ParseError("too_large", f"{path.name} took more than {max_seconds:g} s to parse; refused")
    if failure:
        exc = failure[0]
        if isinstance(exc, RecursionError):
            raise ParseError("corrupt", f"{path.name} is nested too deeply to parse") from None
        raise exc
    return outcome[0]


def _title_from_name(path: Path) -> str:
    name = path.name
    for ext in EXTENSIONS:
        # no registered extension is a suffix of another, so at most one matches: their order does not matter
        if ext and name.lower().endswith(ext) and len(name) > len(ext):
            return name[: -len(ext)]
    return name
