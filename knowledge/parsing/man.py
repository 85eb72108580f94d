"""Man pages rendered as text (``man | col -bx``): recognised by content, not by extension, from their
``NAME(N)`` header line; their files are plain text to the registry (``.8.txt``, no extension), so
:mod:`knowledge.parsing.text` hands them to this module. Column-0 lines are section headings, indent 1-4
lines sub-headings, and the NAME section names the document. Pure (no Django)."""

from __future__ import annotations

import re
from dataclasses import dataclass

from knowledge.parsing.common import WHITESPACE, Block
from knowledge.parsing.lines import Line, LineWalker

# "IP-ROUTE(8)   Linux   IP-ROUTE(8)"; the name may contain spaces ("Simple action in tc(8)")
_MAN_HEADER = re.compile(r"^(?P<ref>\S[^()]*?\((?P<sec>[0-9][A-Za-z0-9]*)\))\s{2,}.*\s(?P=ref)\s*$")


@dataclass(frozen=True, slots=True)
class ManHeader:
    ref: str  # "IP-ROUTE(8)"
    section: str  # "8"


def man_header_strip(lines: list[str]) -> ManHeader | None:
    """The man page header when ``lines`` are a man page; its header line and footer line ("package  date
    NAME(N)") are blanked in place. None (and ``lines`` untouched) otherwise."""
    nonblank = [i for i, line in enumerate(lines) if line.strip()]
    if not nonblank or not (match := _MAN_HEADER.match(lines[nonblank[0]].strip())):
        return None
    ref = match.group("ref")
    lines[nonblank[0]] = ""
    if len(nonblank) > 1 and lines[nonblank[-1]].strip().endswith(ref):
        lines[nonblank[-1]] = ""
    return ManHeader(ref=ref, section=match.group("sec"))


def man_title(blocks: list[Block], header: ManHeader) -> str:
    """The NAME section's text ("ip-route - routing table management"), else the page reference."""
    name_block = next((b for b in blocks if b.section_path[:1] == ("NAME",) and b.kind == "text"), None)
    return WHITESPACE.sub(" ", name_block.text.replace("\n", " ")) if name_block else header.ref


class ManWalker(LineWalker):
    """Man-page conventions: sections at column 0, sub-sections at indent 1-4; no config or numbered-heading
    detection; "o" bullets always; flat lists; a term may share its definition's indentation."""

    man = True

    def __init__(self, lines: list[str]) -> None:
        super().__init__(lines, config=False)

    def heading(self, k: int, line: Line, para: list[Line]) -> tuple[int, str, int] | None:
        if line.indent == 0 and len(line.text) <= 80:
            return 1, line.text, 1
        if 1 <= line.indent <= 4 and not para and len(line.text) <= 100:
            return 2, line.text, 1
        return None
