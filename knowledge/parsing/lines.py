"""The line walker for hard-wrapped text, shared by plain text (:mod:`knowledge.parsing.text`) and man pages
rendered as text (:mod:`knowledge.parsing.man`): headings, bullet lists, definition terms, code and config
samples recognised from indentation and line shapes. Pure (no Django)."""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import ClassVar

from knowledge.parsing.common import RawBlock

_SETEXT = re.compile(r"^\s{0,3}(=+|-+|~+|\*+|\^+|#+)\s*$")
_SETEXT_LEVEL = {"=": 1, "#": 1, "*": 1, "-": 2, "~": 3, "^": 3}
_NUMBERED_HEADING = re.compile(r"^(\d+(?:\.\d+)*)\.?\s+\S")
_BULLET = re.compile(
    r"^([-*+\u2022\u25cf\u25aa\u25e6\u2023\u2043\u00b7o]|\d{1,3}[.)]"
    r"|\((?:[a-z]|[ivx]{1,4}|\d{1,2})\)|[a-z][.)])\s+\S"
)
_ITEM_AFTER = (".", ":", ";", "!", "?", ")")
_BULLET_MARK = re.compile(r"^[\u2022\u25cf\u25aa\u25e6\u2023\u2043\u00b7o*+-]\s+")
_CAPS_HEADING = re.compile(r"^[A-Z][A-Z0-9 /&(),'+_-]*[A-Z0-9)]:?$")
PROMPT = re.compile(r"^(?:\$ |# |\w[\w.-]*@[\w.-]+:\S*[$#] |[A-Za-z]:\\.*> |>>> )")
CODE_LINE = re.compile(r"(?:[{};\\]\s*$|^\s*(?:#|!|//|;)|^\s*[\w.-]+\s*=\s*\S*$|^\s*\}|^\s*<[^>]+>\s*$)")
_DECORATION = re.compile(r"([#=*~_-])\1{9,}")
_WRAPPED_AT_HYPHEN = re.compile(r"[^\W_]-$")
# "pre- and post-processing": a hyphen left hanging for a word later in the sentence, not a wrapped compound
_SUSPENDED_BEFORE = re.compile(r"(?:and|or|nor|to)\b")


def wrapped_at_hyphen(line: str, following: str) -> bool:
    """Did `line` wrap after a word's hyphen, the compound going on in `following`?"""
    return (
        _WRAPPED_AT_HYPHEN.search(line[-2:]) is not None
        and following[:1].islower()
        and _SUSPENDED_BEFORE.match(following) is None
    )


@dataclass(slots=True)
class Line:
    indent: int
    text: str


class LineWalker:
    """Walks hard-wrapped text line by line into raw blocks: setext, all-caps and numbered headings, bullet
    lists, definition terms, code and config samples. :class:`knowledge.parsing.man.ManWalker` applies the
    man-page conventions instead where :attr:`man` is checked."""

    man: ClassVar[bool] = False  # man page rendered as text (`man | col -bx`)

    def __init__(self, lines: list[str], *, config: bool) -> None:
        self.lines = [Line(len(x) - len(x.lstrip(" ")), x.strip()) if x.strip() else None for x in lines]
        self.config = not self.man and (config or self._looks_like_config())
        # FAQ-style "2.4. Question" headings only when multi-level numbers occur at column 0; otherwise
        # "1. Stop the service" lines are procedure steps.
        multi = 0
        for k, line in enumerate(self.lines):
            if line and line.indent == 0 and self._blank(k - 1) and re.match(r"^\d+\.\d+\.?\s", line.text):
                multi += 1
        self.numbered = not self.man and multi >= 2

    def _looks_like_config(self) -> bool:
        present = [line for line in self.lines if line]
        if len(present) < 3:
            return False
        codeish = sum(1 for line in present if CODE_LINE.search(line.text))
        return codeish >= 0.6 * len(present)

    def _blank(self, k: int) -> bool:
        return k < 0 or k >= len(self.lines) or self.lines[k] is None

    def walk(self) -> Iterator[RawBlock]:
        if self.config:
            yield from self._config_blocks()
            return
        para: list[Line] = []
        k = 0
        n = len(self.lines)
        while k < n:
            line = self.lines[k]
            if line is None:
                yield from self._paragraph(para, k)
                para = []
                k += 1
                continue
            heading = None if self.config else self.heading(k, line, para)
            if heading is not None:
                level, text, consumed = heading
                yield from self._paragraph(para, k)
                para = []
                yield RawBlock("title", text, level=level)
                k += consumed
                continue
            para.append(line)
            k += 1
        yield from self._paragraph(para, n)

    def _config_blocks(self) -> Iterator[RawBlock]:
        """Config samples: one code block per top-level stanza; blank lines inside braces do not split, and a
        block of '#' comments stays with the setting below it, which it describes ("# This option is useful
        to bound the retry delay ..." / blank line / "! retry_delay 5 30"). Rule lines ("#######") are
        decoration and are left out."""
        block: list[str] = []
        depth = 0
        for line in self.lines:
            if line is None:
                if depth <= 0 and block and not all(b.lstrip().startswith("#") for b in block):
                    yield RawBlock("code", "\n".join(block))
                    block = []
                elif block and depth > 0:
                    block.append("")
                continue
            if _DECORATION.fullmatch(line.text):
                continue
            block.append(" " * line.indent + line.text)
            code = line.text.split("#", 1)[0] if not line.text.startswith("#") else ""
            depth += code.count("{") - code.count("}")
        if block:
            yield RawBlock("code", "\n".join(block))

    def heading(self, k: int, line: Line, para: list[Line]) -> tuple[int, str, int] | None:
        """(level, text, lines consumed) when line ``k`` starts a heading, else None."""
        nxt = self.lines[k + 1] if k + 1 < len(self.lines) else None
        if para:
            return None
        if (
            nxt is not None
            and line.indent <= 3
            and len(line.text) <= 100
            and _SETEXT.match(" " * nxt.indent + nxt.text)
            and len(nxt.text) >= 3
            and not _SETEXT.match(line.text)
        ):
            return _SETEXT_LEVEL.get(nxt.text[0], 2), line.text, 2
        if (
            line.indent == 0
            and _CAPS_HEADING.match(line.text)
            and sum(ch.isalpha() for ch in line.text) >= 3
            and len(line.text) <= 60
            and len(line.text.split()) <= 8
        ):
            return 1, line.text.rstrip(":"), 1
        if self.numbered and line.indent == 0 and (match := _NUMBERED_HEADING.match(line.text)):
            text, consumed = line.text, 1
            if (
                nxt is not None
                and nxt.indent == 0
                and self._blank(k + 2)
                and len(line.text) + len(nxt.text) < 160
            ):
                text, consumed = f"{line.text} {nxt.text}", 2
            if len(text) <= 160:
                return match.group(1).count(".") + 1, text, consumed
        return None

    def _paragraph(self, para: list[Line], end: int) -> Iterator[RawBlock]:
        if not para:
            return
        if self._is_code(para):
            yield RawBlock("code", _dedent_lines(para))
            return
        # runs of shell-prompt lines ("# systemctl ...", "user@host:~$ nft ...") are code inside prose
        runs: list[tuple[bool, list[Line]]] = []
        for line in para:
            prompt = bool(PROMPT.match(line.text))
            if runs and runs[-1][0] == prompt:
                runs[-1][1].append(line)
            else:
                runs.append((prompt, [line]))
        for index, (prompt, lines) in enumerate(runs):
            if prompt:
                yield RawBlock("code", _dedent_lines(lines))
            else:
                yield from self._prose(lines, end if index == len(runs) - 1 else None)

    def _prose(self, lines: list[Line], end: int | None) -> Iterator[RawBlock]:
        groups: list[tuple[str, list[Line]]] = []
        o_bullets = self.man or sum(1 for line in lines if line.text.startswith("o ")) >= 2
        previous = ""
        for line in lines:
            bullet = _BULLET.match(line.text) and (o_bullets or not line.text.startswith("o "))
            # a bullet-like start in mid-sentence ("(BFD) protocol", "2. something") is not an item
            if bullet and (not groups or groups[-1][0] == "list_item" or previous.endswith(_ITEM_AFTER)):
                groups.append(("list_item", [line]))
            elif groups and (groups[-1][0] == "text" or line.indent >= groups[-1][1][0].indent):
                # hanging or lazy continuation of the item above
                groups[-1][1].append(line)
            else:
                groups.append(("text", [line]))
            previous = line.text
        for index, (kind, group) in enumerate(groups):
            text = _reflow(group)
            if kind == "list_item":
                text = _BULLET_MARK.sub("", text)
                depth = 1 if self.man else 1 + group[0].indent // 4
                yield RawBlock("list_item", text, level=min(depth, 6))
                continue
            # a lone short line followed by indented text (man: "tos TOS" before "dsfield TOS ...") names
            # what follows: keep it with its definition
            nxt = self._next_line(end) if end is not None and index == len(groups) - 1 else None
            term = (
                len(group) == 1
                and len(group[0].text) <= 100
                and not group[0].text.endswith((".", "!", "?", ":", ","))
                and nxt is not None
                and (nxt.indent > group[0].indent or (self.man and nxt.indent == group[0].indent))
            )
            yield RawBlock("text", text, term=term)

    def _next_line(self, k: int) -> Line | None:
        while k < len(self.lines):
            if self.lines[k] is not None:
                return self.lines[k]
            k += 1
        return None

    def _is_code(self, para: list[Line]) -> bool:
        if (
            not self.man
            and min(line.indent for line in para) >= 4
            and not _BULLET.match(para[0].text)
            and sum(1 for line in para if len(line.text) < 60) >= 0.75 * len(para)
        ):
            return True  # an indented block of short lines in a README/FAQ is a literal example
        if (
            not self.man
            and len(para) >= 2
            and all(len(line.text) < 60 and not line.text.endswith((".", ",")) for line in para)
            and not any(_BULLET.match(line.text) for line in para)
        ):
            return True  # several short unwrapped lines (a config snippet), not hard-wrapped prose
        prompts = sum(1 for line in para if PROMPT.match(line.text))
        if prompts and prompts >= len(para) / 2:
            return True
        codeish = sum(1 for line in para if CODE_LINE.search(line.text))
        return len(para) >= 2 and codeish >= 0.6 * len(para) and any(ch in "{}=;" for ch in para[0].text)


def _dedent_lines(lines: list[Line]) -> str:
    base = min(line.indent for line in lines)
    return "\n".join(" " * (line.indent - base) + line.text for line in lines)


def _reflow(group: list[Line]) -> str:
    """Join hard-wrapped lines with spaces; keep a line break where the indentation changes
    (term/definition). A line that breaks after a word's hyphen and goes on in lower case joins without the
    space ("--keep-" / "in-foreground" -> "--keep-in-foreground"): man and fmt wrap at the hyphens of compound
    words and option names, so the hyphen is the author's (typeset hyphenation is undone in PDFs only)."""
    out = group[0].text
    for prev, line in zip(group, group[1:], strict=False):
        if line.indent == prev.indent or prev is not group[0]:
            out += "" if wrapped_at_hyphen(prev.text, line.text) else " "
        else:
            out += "\n"
        out += line.text
    return out
