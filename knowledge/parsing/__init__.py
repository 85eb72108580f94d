"""Turn one source file into a :class:`ParsedDocument`: metadata plus a flat list of structured blocks.

Pure package (no Django): ingestion services call :func:`parse_file` and store what it returns.

One module per format, each registering its parser for a document type and its extensions
(:mod:`knowledge.parsing.registry`):

* :mod:`~knowledge.parsing.html` — ``.html``, ``.htm``, ``.xhtml``: our own stdlib ``html.parser`` walker;
* :mod:`~knowledge.parsing.markdown` — ``.md``, ``.markdown``: front matter, then rendered and walked as HTML;
* :mod:`~knowledge.parsing.text` — ``.txt``, ``.text``, no extension and unknown extensions that are text,
  walked line by line (:mod:`~knowledge.parsing.lines`); man pages rendered as text are recognised by their
  header line (:mod:`~knowledge.parsing.man`);
* :mod:`~knowledge.parsing.pdf` — ``.pdf``: pdfminer.six layout analysis;
* :mod:`~knowledge.parsing.docx` — ``.docx``: unstructured's DOCX partitioner and python-docx properties.

Shared: :mod:`~knowledge.parsing.common` (result types, :class:`ParseError`, block assembly, dates) and
:mod:`~knowledge.parsing.decoding` (bytes to text). Failures raise :class:`ParseError` with a stable
``code`` the ingestion service records on the document.
"""

# Importing the format modules registers their parsers; the registry is complete once this package is loaded.
from knowledge.parsing import docx, html, markdown, pdf, text  # noqa: F401  (imported to register)
from knowledge.parsing.common import (
    BLOCK_KINDS,
    MAX_PDF_PAGES,
    MAX_UNCOMPRESSED_BYTES,
    Block,
    ParsedDocument,
    ParseError,
)
from knowledge.parsing.docx import MAX_ARCHIVE_MEMBERS, MAX_COMPRESSION_RATIO, archive_limits_check
from knowledge.parsing.pdf import pdf_inflate_check
from knowledge.parsing.registry import parse_file

__all__ = [
    "Block",
    "ParsedDocument",
    "ParseError",
    "parse_file",
    "BLOCK_KINDS",
    "archive_limits_check",
    "pdf_inflate_check",
    "MAX_UNCOMPRESSED_BYTES",
    "MAX_COMPRESSION_RATIO",
    "MAX_ARCHIVE_MEMBERS",
    "MAX_PDF_PAGES",
]
