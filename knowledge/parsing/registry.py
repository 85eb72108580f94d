"""The parser registry: one parser per document type, each type claiming its file extensions, and
:func:`parse_file`, the entry point ingestion calls. Pure (no Django).

A format module registers its parser with :func:`parser_register`; ``knowledge/parsing/__init__.py`` imports
every format module, so the registry is complete whenever ``knowledge.parsing`` has been imported.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from knowledge.parsing.common import MAX_PDF_PAGES, MAX_UNCOMPRESSED_BYTES, ParsedDocument, ParseError


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
) -> ParsedDocument:
    """Parse ``path`` into a :class:`ParsedDocument` with the parser registered for its type.

    ``max_uncompressed`` bounds what a DOCX or a PDF's streams may inflate to (see
    :func:`knowledge.parsing.archive_limits_check`, :func:`knowledge.parsing.pdf_inflate_check`);
    ``max_pdf_pages`` bounds how many pages of a PDF are interpreted (a longer PDF is refused as too large).

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
    parser = parser_for(document_type(path))
    doc = parser(path, ParseLimits(max_uncompressed=max_uncompressed, max_pdf_pages=max_pdf_pages))
    if not doc.blocks:
        raise ParseError("empty", f"{path.name} contains no text")
    if doc.updated_at is None:
        doc = dataclasses.replace(doc, updated_at=mtime)
    if not doc.title:
        doc = dataclasses.replace(doc, title=_title_from_name(path))
    return doc


def _title_from_name(path: Path) -> str:
    name = path.name
    for ext in EXTENSIONS:
        # no registered extension is a suffix of another, so at most one matches: their order does not matter
        if ext and name.lower().endswith(ext) and len(name) > len(ext):
            return name[: -len(ext)]
    return name
