"""Markdown (``.md``, ``.markdown``): front matter parsed here, the body rendered with the ``markdown``
package (the same thing unstructured's ``partition_md`` does) and then walked by the HTML walker."""

from __future__ import annotations

import dataclasses
import re
from datetime import date, datetime
from pathlib import Path
from typing import Any

from knowledge.parsing.common import ParsedDocument, ParseError
from knowledge.parsing.decoding import decode_text
from knowledge.parsing.html import html_document
from knowledge.parsing.registry import ParseLimits, parser_register

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
    doc = html_document(rendered, path, markdown_meta=meta)
    if not meta.get("title"):
        # Markdown has no <title>: the first H1 names the document.
        h1 = next((b.text for b in doc.blocks if b.kind == "title" and b.level == 1), "")
        doc = dataclasses.replace(doc, title=h1 or doc.title)
    return doc


@parser_register("markdown", extensions=(".md", ".markdown"))
def markdown_parse(path: Path, limits: ParseLimits) -> ParsedDocument:
    return _parse_markdown(decode_text(path.read_bytes(), path), path)
