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
    u ul var video wbr svg math nobr xmp listing marquee
    """
)
# elements that never have a closing tag
VOID_ELEMENTS = word_set("area base br col embed hr img input link meta param source track wbr")
# void elements that mean something without attributes ("<br>"); "<source>" or "<input>" alone is a placeholder
BARE_VOID_ELEMENTS = word_set("br hr wbr")
# a comment, or a tag: its name, then attributes whose quoted values may hold '<' and '>'
_MARKUP = re.compile(
    r"<!--.*?-->"
    r"|<(?P<close>/?)(?P<name>[A-Za-z][\w.:-]*)"
    r"(?P<attributes>(?:\s+[^\s\"'<>/=]+(?:\s*=\s*(?:\"[^\"]*\"|'[^']*'|[^\s\"'<>=`]+))?)*)\s*(?P<self>/?)>",
    re.DOTALL,
)


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

    A name that is no HTML element ("<nnn>", "<FWR-id>") is a placeholder. So is an element's tag that no tag of
    the same name closes ("iptables -t <table>", though a table elsewhere closes its own), and a void element
    with no attributes other than a line break or rule ("rsync -a <source> <dest>"). Comments, and '<' inside a
    quoted attribute value, are left alone; Markdown's own output always pairs its tags, and a code span is
    escaped already.
    """
    found = list(_MARKUP.finditer(rendered))
    keep: set[int] = set()
    pending: dict[str, list[int]] = {}
    for at, match in enumerate(found):
        name = (match.group("name") or "").lower()
        if not name:
            keep.add(at)  # a comment
        elif name not in HTML_ELEMENTS:
            continue
        elif name in VOID_ELEMENTS or match.group("self"):
            if name in BARE_VOID_ELEMENTS or match.group("attributes").strip():
                keep.add(at)
        elif not match.group("close"):
            pending.setdefault(name, []).append(at)
        elif pending.get(name):
            keep.update((pending[name].pop(), at))  # the innermost open tag of that name, and its close
    out, last = [], 0
    for at, match in enumerate(found):
        if at not in keep:
            out.append(rendered[last : match.start()])
            out.append(html.escape(match.group(0), quote=False))
            last = match.end()
    return "".join([*out, rendered[last:]])


_CODE_SPAN_LINE = re.compile(r"^[ \t]*(`+)[^`\n]+\1[ \t]*$")
_FENCE = re.compile(r"^[ \t]{0,3}(`{3,}|~{3,})")


def code_span_lines_kept(body: str) -> str:
    """Keep a code span that stands on a line of its own under a lead-in ending with ':' on that line:

        5. Check control-plane policing:
           `show policy-map control-plane`
           The class ... is policed at 2000 packets per second.

    Markdown joins the three lines of such a paragraph or list item into one ("... policing: show policy-map
    control-plane The class ..."); a hard line break (two trailing spaces) after the lead-in and after the span
    keeps the command on its line, as the author set it. Fenced code, and a lead-in indented as code (four
    spaces), are left alone."""
    lines = body.split("\n")
    fence = ""
    for at, line in enumerate(lines):
        opened = _FENCE.match(line)
        if fence:
            if (
                opened is not None
                and opened.group(1)[0] == fence[0]
                and len(opened.group(1)) >= len(fence)
                and not line[opened.end() :].strip()  # a closing fence has no info string
            ):
                fence = ""
            continue
        if opened:
            fence = opened.group(1)
            continue
        lead_in = lines[at - 1] if at else ""
        indented_code = len(lead_in) - len(lead_in.lstrip(" ")) >= 4  # inside an indented code block
        if at and _CODE_SPAN_LINE.match(line) and lead_in.rstrip().endswith(":") and not indented_code:
            lines[at - 1] = lines[at - 1].rstrip() + "  "
            if at + 1 < len(lines) and lines[at + 1].strip():
                lines[at] = line.rstrip() + "  "
    return "\n".join(lines)


def _parse_markdown(text: str, path: Path) -> ParsedDocument:
    import markdown  # installed with unstructured[md]

    meta, body = _front_matter(text)
    if not body.strip():
        raise ParseError("empty", f"{path.name} has no text after its front matter")
    rendered = markdown.markdown(
        code_span_lines_kept(body), extensions=["tables", "fenced_code", "sane_lists"]
    )
    doc = html_document(placeholders_as_text(rendered), path, markdown_meta=meta)
    if not meta.get("title"):
        # Markdown has no <title>: the first H1 names the document.
        h1 = next((b.text for b in doc.blocks if b.kind == "title" and b.level == 1), "")
        doc = dataclasses.replace(doc, title=h1 or doc.title)
    return doc


@parser_register("markdown", extensions=(".md", ".markdown"))
def markdown_parse(path: Path, limits: ParseLimits) -> ParsedDocument:
    return _parse_markdown(decode_text(path.read_bytes(), path), path)
