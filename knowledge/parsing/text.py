"""Plain text (``.txt``, ``.text``, no extension, and any unknown extension that decodes as text): leading
"Title: ..." header fields, then our own line walker (:mod:`knowledge.parsing.lines`): setext/numbered
headings, bullet lists, config/code paragraphs. A man page rendered as text is recognised by its header
line and walked with the man-page conventions (:mod:`knowledge.parsing.man`). unstructured's text
partitioner adds nothing for these."""

from __future__ import annotations

import re
from datetime import datetime
from pathlib import Path
from typing import Any

from knowledge.parsing.common import (
    DOCUMENT_FIELDS,
    ParsedDocument,
    ParseError,
    assemble_blocks,
    dedupe,
    parse_date,
)
from knowledge.parsing.decoding import decode_text
from knowledge.parsing.lines import LineWalker
from knowledge.parsing.man import ManWalker, man_header_strip, man_rejoin_words, man_title
from knowledge.parsing.registry import ParseLimits, parser_register

_HEADER_FIELD = re.compile(
    r"^(title|author|authors|updated|last[ -]updated|last[ -]modified|date|revised|version|"
    + "|".join(name.replace("_", "[ _-]") for name in DOCUMENT_FIELDS)
    + r")\s*:\s*(\S.*)$",
    re.IGNORECASE,
)
_CONFIG_NAME = re.compile(r"(?:\.conf\b|\.nft\b|\.cfg\b|\.ini\b|\.ya?ml\b|\.example\d*\b|\.sample\b|conf\.)")
_URL = re.compile(r"\bhttps?://[^\s<>\"'`)\]]+[^\s<>\"'`)\].,;:!?]")


@parser_register("text", extensions=(".txt", ".text", ""))
def text_parse(path: Path, limits: ParseLimits) -> ParsedDocument:
    return text_document(decode_text(path.read_bytes(), path), path)


def text_document(text: str, path: Path) -> ParsedDocument:
    """Parse decoded ``text`` (newlines normalised); ``path`` names the file in errors and hints at config
    samples (``*.conf``, ``*.example``)."""
    lines = [line.expandtabs(8).rstrip() for line in text.split("\n")]
    meta: dict[str, Any] = {"format": "text"}
    title = author = ""
    updated: datetime | None = None

    # leading "Title: ..." style header lines
    first = next((i for i, line in enumerate(lines) if line.strip()), len(lines))
    i = first
    header: dict[str, str] = {}
    while i < len(lines) and (match := _HEADER_FIELD.match(lines[i].strip())):
        header[re.sub(r"[ -]", "_", match.group(1).lower())] = match.group(2).strip()
        i += 1
    if "title" in header:
        lines = lines[:first] + lines[i:]
        title = header.pop("title")
        author = header.pop("author", "") or header.pop("authors", "")
        for key in ("updated", "last_updated", "last_modified", "revised", "date"):
            if key in header and updated is None:
                updated = parse_date(header[key])
        meta.update(header)

    man = man_header_strip(lines)
    walker: LineWalker
    if man is not None:
        meta["man_page"] = man.ref
        meta["man_section"] = man.section
        man_rejoin_words(lines)
        walker = ManWalker(lines)
    else:
        walker = LineWalker(lines, config=bool(_CONFIG_NAME.search(path.name.lower())))
    blocks = assemble_blocks(walker.walk())
    if not blocks:
        raise ParseError("empty", f"{path.name} contains no text")
    if not title and man is not None:
        title = man_title(blocks, man)
    if not title and blocks[0].kind == "title":
        title = blocks[0].text
    return ParsedDocument(title, author, updated, meta, blocks, dedupe(_URL.findall(text)))
