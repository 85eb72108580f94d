"""Bytes to text for the text-based formats (HTML, Markdown, plain text): BOMs, UTF-8, a declared HTML
charset, then cp1252/latin-1; binary data is refused by its magic number or NUL bytes. Pure (no Django)."""

from __future__ import annotations

import codecs
import re
from pathlib import Path

from knowledge.parsing.common import ParseError

# Magic numbers of binary formats that must never be read as text.
_MAGIC = (
    (b"%PDF-", "PDF"), (b"PK\x03\x04", "zip/Office"), (b"\x7fELF", "ELF"), (b"\x89PNG", "PNG"),
    (b"\xff\xd8\xff", "JPEG"), (b"GIF8", "GIF"), (b"\x1f\x8b", "gzip"), (b"BZh", "bzip2"),
    (b"\xfd7zXZ", "xz"), (b"7z\xbc\xaf", "7z"), (b"Rar!", "rar"), (b"\xd0\xcf\x11\xe0", "OLE/Office"),
    (b"SQLite format 3", "SQLite"), (b"MZ", "DOS/Windows executable"), (b"\x28\xb5\x2f\xfd", "zstd"),
)  # fmt: skip


_META_CHARSET = re.compile(rb"""<meta[^>]+charset\s*=\s*["']?([A-Za-z0-9_.:-]+)""", re.IGNORECASE)


def decode_text(raw: bytes, path: Path, *, html: bool = False) -> str:
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
