"""PDF (``.pdf``): pdfminer.six layout analysis, which is what unstructured's ``strategy="fast"`` runs
underneath; ``unstructured.partition.pdf`` itself cannot be imported without the ``unstructured[pdf]`` extra
(Pillow, pi-heif, unstructured-inference, ONNX...), which is deliberately not installed. Headings come from
font size (larger than body text) and bold short lines.

A PDF's Flate streams are inflated up to a bound first (:func:`pdf_inflate_check`), and its page count
bounds the pages interpreted.
"""

from __future__ import annotations

import codecs
import re
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from knowledge.parsing.common import (
    MAX_PDF_PAGES,
    MAX_UNCOMPRESSED_BYTES,
    ParsedDocument,
    ParseError,
    RawBlock,
    assemble_blocks,
    first_heading,
    parse_date,
)
from knowledge.parsing.registry import ParseLimits, parser_register

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
    blocks = assemble_blocks(raws)
    if not any(b.kind != "title" for b in blocks):
        raise ParseError("empty", f"{path.name} has no extractable text (scanned images?)")
    meta: dict[str, Any] = {"format": "pdf", "pages": pages}
    title = _pdf_string(info.get("Title"))
    author = _pdf_string(info.get("Author"))
    for key in ("Subject", "Keywords"):
        value = _pdf_string(info.get(key))
        if value:
            meta[key.lower()] = value
    updated = parse_date(_pdf_string(info.get("ModDate"))) or parse_date(
        _pdf_string(info.get("CreationDate"))
    )
    return ParsedDocument(title or first_heading(blocks), author, updated, meta, blocks, [])


def _pdf_raws(boxes: list[_PdfBox], sizes: Counter[float]) -> list[RawBlock]:
    body = sizes.most_common(1)[0][0] if sizes else 10.0
    # drop running headers/footers: identical short lines on many pages, and bare page numbers
    page_count = len({b.page for b in boxes})
    repeats = Counter(" ".join(b.lines) for b in boxes if len(" ".join(b.lines)) <= 80)
    heading_sizes = sorted(
        {b.size for b in boxes if b.size >= body * 1.15 and _heading_like(b)}, reverse=True
    )
    levels = {size: i + 1 for i, size in enumerate(heading_sizes[:5])}
    bold_level = min(len(levels) + 1, 6)
    raws: list[RawBlock] = []
    for box in boxes:
        joined = " ".join(box.lines)
        if _PAGE_NUMBER.match(joined) or (page_count >= 3 and repeats[joined] >= max(3, page_count // 2)):
            continue
        if box.size in levels and _heading_like(box):
            raws.append(RawBlock("title", joined, level=levels[box.size], page=box.page))
            continue
        if box.bold and abs(box.size - body) < 0.5 and _heading_like(box) and len(box.lines) == 1:
            raws.append(RawBlock("title", joined, level=bold_level, page=box.page))
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
                raws.append(RawBlock(kind, _dehyphenate(group), level=1 if bullet else None, page=box.page))
            continue
        raws.append(RawBlock("text", _dehyphenate(box.lines), page=box.page))
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


@parser_register("pdf", extensions=(".pdf",))
def pdf_parse(path: Path, limits: ParseLimits) -> ParsedDocument:
    pdf_inflate_check(path.read_bytes(), name=path.name, max_uncompressed=limits.max_uncompressed)
    return _parse_pdf(path, max_pages=limits.max_pdf_pages)
