"""HTML (``.html``, ``.htm``, ``.xhtml``): our own stdlib ``html.parser`` walker.

unstructured's HTML partitioner took 30 s for the 333 dev-corpus HTML files (11 docs/s on this 2-core
machine) and keeps Sphinx/DocBook page chrome (navigation bars, sidebars, "Quick search", duplicated tables
of contents) as body text, and flattens reStructuredText option lists (layout tables) into one giant table.
The walker yields the same Block structure an order of magnitude faster and drops the chrome. Markdown
(rendered to HTML) and DOCX tables (unstructured's ``text_as_html``) go through the same walker.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

from knowledge.parsing.common import (
    DOCUMENT_FIELDS,
    WHITESPACE,
    ParsedDocument,
    ParseError,
    RawBlock,
    assemble_blocks,
    dedupe,
    first_heading,
    parse_date,
)
from knowledge.parsing.decoding import decode_text
from knowledge.parsing.lines import CODE_LINE, PROMPT
from knowledge.parsing.man import man_header_strip, man_rejoin_words
from knowledge.parsing.registry import ParseLimits, parser_register

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
# a page's own catalogue fields (`<meta name="doc_type" content="runbook">`)
_META_KEYS.update({name: name for name in DOCUMENT_FIELDS})
_META_KEYS.update({name.replace("_", "-"): name for name in DOCUMENT_FIELDS})
_TERM_MAX_CHARS = 160


@dataclass(slots=True)
class _Cell:
    header: bool
    blocks: list[RawBlock] = field(default_factory=list)
    structured: bool = False  # holds paragraphs/lists/code: the table is page layout, not data


@dataclass(slots=True)
class _Table:
    ctx_base: int  # len(walker._ctx) when the table opened; cells push above it
    classes: frozenset[str] = frozenset()
    rows: list[list[_Cell]] = field(default_factory=list)
    row_is_head: list[bool] = field(default_factory=list)
    in_thead: bool = False
    before: list[RawBlock] = field(default_factory=list)  # caption, stray text outside cells
    cell_open: bool = False


@dataclass(slots=True)
class _List:
    ordered: bool
    number: int
    ctx_base: int
    first_out: int = 0  # where its items start in the walker's output
    items: int = 0  # the text parts of its items read so far
    # is every part of its items (and of the lists inside them) the text of a link into the page itself, as a
    # table of contents is ("Sections on this page:" above links to the page's sections)?
    links_only: bool = True


# one sentence ending with ':' (no sentence end before it): the lead-in of a table of contents
_ANNOUNCES = re.compile(r"(?:[^.!?:]|[.!?:](?!\s))+:")
_BR = "\u2028"  # <br> marker; every other source whitespace is an ordinary space


class HtmlWalker(HTMLParser):
    """Streams an HTML document into :class:`RawBlock` blocks, metadata and links."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.out: list[RawBlock] = []
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
        self._anchors: list[bool] = []  # the open <a> tags: is each a link into this page ("#section")?
        self._text_linked = False  # the text being collected has words inside a link into the page
        self._text_plain = False  # ... and words outside one

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
            self._anchors.append(href.startswith("#") and len(href) > 1)
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
            self._lists.append(
                _List(tag == "ol", int(start) if start.isdigit() else 1, len(self._ctx), len(self.out))
            )
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
        if tag == "a":
            if self._anchors:
                self._anchors.pop()
            return
        if self._pre:
            if tag == "pre":
                text = "".join(self._buf)
                self._buf = []
                self._pre = False
                for raw in _preformatted(text):
                    self._emit(raw)
            return
        table = self._tables[-1] if self._tables else None
        if tag in _HEADING_TAGS:
            if self._heading is not None:
                text = WHITESPACE.sub(" ", "".join(self._buf).replace(_BR, " ").replace("\n", " "))
                self._buf = []
                self._text_linked = self._text_plain = False
                self._heading = None
                self._emit(RawBlock("title", text, level=_HEADING_TAGS[tag]))
        elif tag in ("ul", "ol", "menu"):
            self._flush()
            if self._lists:
                closed = self._lists.pop()
                del self._ctx[closed.ctx_base :]
                self._close_list(closed)
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
        if data.strip() and not self._pre:
            if self._anchors and self._anchors[-1]:
                self._text_linked = True
            else:
                self._text_plain = True
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
        linked, self._text_linked = self._text_linked and not self._text_plain, False
        self._text_plain = False
        lines = (
            WHITESPACE.sub(" ", part.replace("\n", " ").replace("\r", " ")).strip()
            for part in text.split(_BR)
        )
        text = "\n".join(line for line in lines if line)
        if not text:
            return
        inner = self._ctx[-1] if self._ctx else ""
        if inner == "li":
            if self._lists:
                self._lists[-1].items += 1
                self._lists[-1].links_only &= linked
            prefix, self._li_prefix = self._li_prefix, ""
            self._emit(RawBlock("list_item", prefix + text, level=len(self._lists) or 1))
        else:
            term = (inner == "dt" or self._admonition_title) and len(text) <= _TERM_MAX_CHARS
            self._admonition_title = False
            self._emit(RawBlock("text", text, term=term))

    def _close_list(self, closed: _List) -> None:
        """A list whose items are all links into the page (two or more) is a table of contents: its items are
        read as one (`RawBlock.toc`), dropped unless the page holds nothing else, and so is the one sentence
        right above it that only announces it ("Sections on this page:"). A list inside it with other
        text makes the list around it not one either."""
        if closed.items >= 2 and closed.links_only:
            for raw in self.out[closed.first_out :]:
                raw.toc = True
            above = self.out[closed.first_out - 1] if closed.first_out > 0 and not self._lists else None
            if above is not None and above.kind == "text" and _ANNOUNCES.fullmatch(above.text.strip()):
                above.toc = True
        elif self._lists and not closed.links_only:
            self._lists[-1].links_only = False

    def _emit(self, raw: RawBlock) -> None:
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
            target.append(RawBlock("table", "\n".join(lines), level=header_rows))
        for raw in target:
            self._emit(raw)


# what prose in a fixed font does not have: a brace or semicolon, a comment's opening, a log line's level
_CODE_MARK = re.compile(
    r"[{};]|^(?:--|/\*|\*|//|#|\w+:\s*$)|^(?:warning|error|fatal|info|debug):", re.IGNORECASE
)
# a plain word, with the punctuation prose puts after it ("routers,", "day.", "self-aware", "can't")
_PLAIN_WORD = re.compile(r"[A-Za-z]+(?:[-'][A-Za-z]+)*[,.;:!?)\"']*")


def _reads_as_prose(lines: list[str]) -> bool:
    """Is a <pre> block prose set in a fixed font (a mail in a list archive, an RFC, a manual that sets its
    reference text so), not code?

    Never with a prompt, nor with a brace, semicolon, comment or log level in two lines or more (or a fifth of
    them). A line is plain when nine in ten of its words are plain words and the plain-text parsers see no code
    line in it (`knowledge.parsing.lines.CODE_LINE`). A block of one or two lines is prose when all of it is
    plain, six words or more ending as a sentence ends; a longer one when 60 percent of its words stand in
    prose lines: plain lines of eight words or more, and a shorter plain line that ends the sentence of a prose
    line above it (a paragraph's last line). (Of the dev corpus's 3,461 <pre> blocks, two read so: a package's
    description and a module's introduction.)"""

    def plain(line: str) -> bool:
        words = line.split()
        plain = sum(bool(_PLAIN_WORD.fullmatch(word.lstrip("(\"'"))) for word in words)
        return not CODE_LINE.search(line) and plain >= 0.9 * len(words)

    held = [line.strip() for line in lines if line.strip()]
    code_marked = sum(1 for line in held if _CODE_MARK.search(line))
    if any(PROMPT.match(line) for line in held) or code_marked >= max(2, 0.2 * len(held)):
        return False  # a console session, or code with comments in prose
    words = sum(len(line.split()) for line in held)
    if len(held) < 3:
        return words >= 6 and held[-1].endswith((".", "!", "?")) and all(plain(line) for line in held)
    prose = [len(line.split()) >= 8 and plain(line) for line in held]
    for at in range(1, len(held)):  # a paragraph's last line is short
        prose[at] = prose[at] or (prose[at - 1] and held[at].endswith((".", "!", "?")) and plain(held[at]))
    in_prose = sum(len(line.split()) for line, is_prose in zip(held, prose, strict=True) if is_prose)
    return in_prose >= 0.6 * words


def _preformatted(text: str) -> list[RawBlock]:
    """A <pre> block: code, marked as such (an answer shows its lines as code) unless it reads as prose. One
    that holds a whole man page rendered as text (some manuals ship their man pages as HTML that way) is not
    marked; it loses its running header and footer and has the words groff broke across lines mended ("con-"
    / "tact"). Walking it as a man page instead (sections, paragraphs) was measured: the answers' sentence
    choice lost three of 22 questions on such pages (tests/benchmarks/README.md)."""
    lines = [line.expandtabs(8).rstrip() for line in text.split("\n")]
    if man_header_strip(lines) is None:
        return [RawBlock("code", text, marked=not _reads_as_prose(lines))]
    man_rejoin_words(lines)
    return [RawBlock("code", "\n".join(lines).strip("\n"))]


# what closes a comment for html.parser ("--", spaces, ">")
_COMMENT_CLOSE = re.compile(r"--\s*>")


def unclosed_markup_escaped(text: str) -> str:
    """``text`` with the '<' of markup that nothing closes written as ``&lt;``: every '<' after the last '>'
    (a tag, end tag, declaration or processing instruction there has no '>' to end it) and each "<!--" that
    no "-->" follows.

    html.parser (before Python 3.12.11/3.13.4) reads such markup as text when the document ends, but only
    after searching the whole rest of the document for its end, once for every '<': 200 kB of "<a " took 7
    minutes, "</" and "<!--x>" runs were quadratic too. As text from the start they cost one pass and read the
    same; a tag between an unclosed "<!--" and the next '>' is now read as a tag instead of as that text."""
    last_gt = text.rfind(">")
    comment_close = -1
    for match in _COMMENT_CLOSE.finditer(text):
        comment_close = match.start()
    # a "<!--" at i is closed only by a "--\s*>" starting at i + 4 or later
    first_unclosed = max(comment_close - 3, 0) if comment_close >= 0 else 0
    head, body, tail = text[:first_unclosed], text[first_unclosed : last_gt + 1], text[last_gt + 1 :]
    if first_unclosed > last_gt:
        head, body, tail = text[: last_gt + 1], "", text[last_gt + 1 :]
    return head + body.replace("<!--", "&lt;!--") + tail.replace("<", "&lt;")


def html_document(text: str, path: Path, *, markdown_meta: dict[str, Any] | None = None) -> ParsedDocument:
    walker = HtmlWalker()
    try:
        walker.feed(unclosed_markup_escaped(text))
        walker.close()
    except AssertionError as exc:  # html.parser's only failure mode on garbage markup
        raise ParseError("corrupt", f"{path.name}: unparseable HTML ({exc})") from exc
    raws = [r for r in walker.out if not r.toc]
    links = walker.links
    if not any(r.kind != "title" for r in raws):
        raws = walker.out  # the page is only a table of contents (an index page): keep it
        links = walker.links + walker.toc_links
    blocks = assemble_blocks(raws)
    if not blocks:
        raise ParseError("empty", f"{path.name} contains no text")
    meta: dict[str, Any] = {"format": "markdown" if markdown_meta is not None else "html"}
    for key in ("description", "keywords", *DOCUMENT_FIELDS):
        if key in walker.meta:
            meta[key] = walker.meta[key]
    if markdown_meta:
        meta.update(markdown_meta)
    title = WHITESPACE.sub(" ", " ".join(walker.title_parts)).strip()
    title = str(meta.pop("title", "") or title).strip() if markdown_meta is not None else title
    if not title:
        title = first_heading(blocks)
    author = str((markdown_meta or {}).get("author") or walker.meta.get("author") or "").strip()
    updated = None
    for candidate in (
        (markdown_meta or {}).get("updated"),
        (markdown_meta or {}).get("last_updated"),
        (markdown_meta or {}).get("date"),
        walker.meta.get("updated"),
        walker.meta.get("date"),
    ):
        updated = parse_date(candidate)
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
    return dedupe(out)


@parser_register("html", extensions=(".html", ".htm", ".xhtml"))
def html_parse(path: Path, limits: ParseLimits) -> ParsedDocument:
    return html_document(decode_text(path.read_bytes(), path, html=True), path)
