"""Man pages rendered as text (``man | col -bx``): recognised by content, not by extension, from their
``NAME(N)`` header line; their files are plain text to the registry (``.8.txt``, no extension), so
:mod:`knowledge.parsing.text` hands them to this module. Column-0 lines are section headings, indent 1-4
lines sub-headings, and the NAME section names the document. Pure (no Django)."""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass

from knowledge.parsing.common import WHITESPACE, Block
from knowledge.parsing.lines import Line, LineWalker, wrapped_at_hyphen

# "LB-POOL(8)   Linux   LB-POOL(8)"; the name may contain spaces ("Basic filter in fenceport(8)")
_MAN_HEADER = re.compile(r"^(?P<ref>\S[^()]*?\((?P<sec>[0-9][A-Za-z0-9]*)\))\s{2,}.*\s(?P=ref)\s*$")


@dataclass(frozen=True, slots=True)
class ManHeader:
    ref: str  # "LB-POOL(8)"
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
    """The NAME section's text ("lb-pool - backend pool administration"), else the page reference."""
    name_block = next((b for b in blocks if b.section_path[:1] == ("NAME",) and b.kind == "text"), None)
    return WHITESPACE.sub(" ", name_block.text.replace("\n", " ")) if name_block else header.ref


# "rotat-", "--keep-": a line that ends inside a word
_BROKEN_HEAD = re.compile(r"(?<![^\W\d_])([^\W\d_]+)-$")
_BROKEN_TAIL = re.compile(r"^(\s*)([^\W\d_]+)(\S*)\s*")  # the next line's first word, in lower case
_WORD = re.compile(r"[^\W\d_]+(?:-[^\W\d_]+)*")


def man_rejoin_words(lines: list[str]) -> None:
    """Mend the words a typeset man page broke across lines ("rotat-" / "ing the file"), in place.

    groff hyphenates long words at line ends, and also wraps at the hyphens of compounds and option names
    ("receive-" / "only", "--keep-" / "in-foreground"). A break becomes the joined word ("rotating") when the
    page uses that word elsewhere more often than the hyphenated form, else the hyphenated form
    ("receive-only"): in both cases the word is whole again, for readers and for the index. The rest of the
    word moves up to the broken line; a continuation line that held nothing else keeps its place and takes the
    whole word instead, so that no line becomes blank (blank lines end paragraphs). A word alone on both lines
    is left to the paragraph's reflow, which keeps the hyphen; "pre- / and post-" is no break.
    """
    plain: Counter[str] = Counter()
    hyphenated: Counter[str] = Counter()
    for line in lines:
        for word in _WORD.findall(line):
            for part in word.lower().split("-"):
                plain[part] += 1
            if "-" in word:
                hyphenated[word.lower()] += 1
    for k in range(len(lines) - 1):
        head, tail = _BROKEN_HEAD.search(lines[k]), _BROKEN_TAIL.match(lines[k + 1])
        if head is None or tail is None or not wrapped_at_hyphen(lines[k], lines[k + 1].lstrip()):
            continue
        start, rest = head.group(1), tail.group(2)
        joined = start + rest
        hyphen = "" if plain[joined.lower()] > hyphenated[f"{start}-{rest}".lower()] else "-"
        word_rest = rest + tail.group(3)
        after = lines[k + 1][tail.end() :]
        if after:
            lines[k] = lines[k][: head.end(1)] + hyphen + word_rest
            lines[k + 1] = tail.group(1) + after
        else:
            token = lines[k].rfind(" ", 0, head.start(1)) + 1  # where the broken word starts ("--keep-")
            if lines[k][:token].strip():
                moved = lines[k][token : head.end(1)]
                lines[k] = lines[k][:token].rstrip()
                lines[k + 1] = tail.group(1) + moved + hyphen + word_rest


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
