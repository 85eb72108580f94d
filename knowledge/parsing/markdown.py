"""Markdown (``.md``, ``.markdown``): front matter parsed here, the body rendered with the ``markdown``
package (the same thing unstructured's ``partition_md`` does) and then walked by the HTML walker."""

from __future__ import annotations

import dataclasses
import html
import re
from datetime import date, datetime
from pathlib import Path
from typing import Any

from knowledge.parsing.common import ParsedDocument, ParseError
from knowledge.parsing.decoding import decode_text
from knowledge.parsing.html import html_document
from knowledge.parsing.registry import ParseLimits, parser_register
from knowledge.text.stopwords import word_set

_FRONT_MATTER = re.compile(r"\A\ufeff?---[ \t]*\n(.*?)\n(?:---|\.\.\.)[ \t]*(?:\n|\Z)", re.DOTALL)
_FM_LINE = re.compile(r"^([A-Za-z_][\w.-]*)\s*:\s*(.*)$")

# The element names of HTML (current and obsolete). Markdown passes raw HTML through, so a runbook's placeholder
# ("tunnels are named TUN-BR-<nnn>", "record BG-<year>-<nn>") reaches the HTML walker as a tag and is dropped
# with its name; only names on this list can be markup.
HTML_ELEMENTS = word_set(
    """
    a abbr acronym address area article aside audio b base bdi bdo big blockquote body br button canvas caption
    center cite code col colgroup data datalist dd del details dfn dialog dir div dl dt em embed fieldset
    figcaption figure font footer form frame frameset h1 h2 h3 h4 h5 h6 head header hgroup hr html i iframe img
    input ins kbd label legend li link main map mark menu meta meter nav noscript object ol optgroup option
    output p param picture pre progress q rp rt ruby s samp script search section select small source span
    strike strong style sub summary sup table tbody td template textarea tfoot th thead time title tr track tt
    u ul var video wbr
    """
)
# elements that never have a closing tag
VOID_ELEMENTS = word_set("area base br col embed hr img input link meta param source track wbr")
_TAG = re.compile(r"<(/?)([A-Za-z][\w.:-]*)([^<>]*)>")


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


def placeholders_as_text(rendered: str) -> str:
    """Escape what looks like a tag in rendered Markdown but cannot be one, so the HTML walker keeps it as text.

    A name that is no HTML element ("<nnn>", "<FWR-id>") is a placeholder. So is an element name that the
    document never closes, unless the element has no closing tag: "ping <address>" names an element, but
    nothing ends it. (Markdown's own output, and code spans, are never touched: a code span is escaped already.)
    """
    closed = {m.group(2).lower() for m in _TAG.finditer(rendered) if m.group(1)}

    def shown(match: re.Match[str]) -> str:
        name = match.group(2).lower()
        if name in HTML_ELEMENTS and (name in VOID_ELEMENTS or name in closed):
            return match.group(0)
        return html.escape(match.group(0), quote=False)

    return _TAG.sub(shown, rendered)


def _parse_markdown(text: str, path: Path) -> ParsedDocument:
    import markdown  # installed with unstructured[md]

    meta, body = _front_matter(text)
    if not body.strip():
        raise ParseError("empty", f"{path.name} has no text after its front matter")
    rendered = markdown.markdown(body, extensions=["tables", "fenced_code", "sane_lists"])
    doc = html_document(placeholders_as_text(rendered), path, markdown_meta=meta)
    if not meta.get("title"):
        # Markdown has no <title>: the first H1 names the document.
        h1 = next((b.text for b in doc.blocks if b.kind == "title" and b.level == 1), "")
        doc = dataclasses.replace(doc, title=h1 or doc.title)
    return doc


@parser_register("markdown", extensions=(".md", ".markdown"))
def markdown_parse(path: Path, limits: ParseLimits) -> ParsedDocument:
    return _parse_markdown(decode_text(path.read_bytes(), path), path)
