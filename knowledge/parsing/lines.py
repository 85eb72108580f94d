"""The line walker for hard-wrapped text, shared by plain text (:mod:`knowledge.parsing.text`) and man pages
rendered as text (:mod:`knowledge.parsing.man`): headings, bullet lists, definition terms, code and config
samples (in a man page, an example set deeper than the text above it), tables drawn with box characters or
aligned with spaces, term lists, "Label: value" lines, commands set off under a lead-in and configuration right
under one, recognised from indentation and line shapes. Pure (no Django)."""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import ClassVar

from knowledge.parsing.common import RawBlock
from knowledge.text import LABEL_LINE, PROSE, TWO_WORDS

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
_CELL = re.compile(r"\S+(?: \S+)*")  # a cell of a table aligned with spaces: words one space apart
_HEADER_CELL = re.compile(r"[^\W\d_][^\d/=_|]*")  # a column's name: "Contract number", "Level (hours)"
_TERM_COLUMNS = re.compile(r"^(\S+(?: \S+){0,2}) {2,}(\S.*)$")  # "LOG-DLQ-HIGH   the queue holds ..."
# the rules of a table drawn with box characters (`_box_table`): its top, a rule inside it, its bottom
_BOX_TOP = re.compile(r"┌[─┬]+┐")
_BOX_INNER = re.compile(r"[├╞][─═┼╪]+[┤╡]")
_BOX_BOTTOM = re.compile(r"└[─┴]+┘")
_SECTION_HEADER = re.compile(r"^\[[\w .:/-]+\]$")  # an INI file's "[Service]"
_MAIL_ADDRESS = re.compile(r"<[^\s<>@]+@[^\s<>]+>")  # "<list@example.org>": no XML tag
_COMMENT = re.compile(r"^\s*(?:#|!|//|;)")
_OPENS_SENTENCE = re.compile(r"[A-Z][a-z]+[\s,]")  # "Adds an IPv6 route", not "VXLAN endpoint" or "in [0, 4]"
SHORT_LINE = 60  # a line shorter than this is not a hard-wrapped line of prose
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
    lists, definition terms, code and config samples, tables drawn with box characters, and (not in man pages)
    tables and term lists aligned with spaces and "Label: value" lines. :class:`knowledge.parsing.man.ManWalker`
    applies the man-page conventions instead where :attr:`man` is checked (its examples: `_set_off_example`)."""

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
        self._above: Line | None = None  # the last line of the paragraph before this one, under one heading

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
                self._above = para[-1] if para else self._above
                para = []
                k += 1
                continue
            heading = None if self.config else self.heading(k, line, para)
            if heading is not None:
                level, text, consumed = heading
                yield from self._paragraph(para, k)
                para = []
                self._above = None
                yield RawBlock("title", text, level=level)
                k += consumed
                continue
            para.append(line)
            k += 1
        yield from self._paragraph(para, n)

    def _config_blocks(self) -> Iterator[RawBlock]:
        """Config samples: one code block per top-level stanza; blank lines inside braces do not split, and a
        block of '#' comments stays with the setting below it, which it describes ("# This setting is handy
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
        boxed = _box_table(para)
        if boxed is not None:  # (its caption may sit right above it: "Table 18. Keywords ...")
            before, rows, header_rows, after = boxed
            yield from self._paragraph(before, end)
            yield RawBlock("table", rows, level=header_rows or None)
            yield from self._paragraph(after, end)
            return
        table = None if self.man else _aligned_table(para)
        if table is not None:  # (before code: a short table's lines are short, as a snippet's are)
            yield RawBlock("table", table, level=1)  # its first row is the header
            return
        if self.man and self._set_off_example(para):
            # the page's own mark of an example (groff's no-fill display, set in): code whatever it reads as
            yield RawBlock("code", _dedent_lines(para), marked=True)
            return
        if self._is_code(para):
            yield RawBlock("code", _dedent_lines(para))
            return
        entries = [] if self.man else _aligned_definitions(para)
        if entries:
            yield from (RawBlock("text", _definition_text(term, text)) for term, text in entries)
            return
        # runs of shell-prompt lines ("# systemctl ...", "user@host:~$ nft ...") are code inside prose, as are
        # lines of configuration right under a lead-in ending with ':' ("... to be blank:" / "[Runtime]" /
        # "SpoolQuotaSet=~")
        under = _configuration_under_lead_in(para)
        runs: list[tuple[bool, list[Line]]] = []
        for at, line in enumerate(para):
            prompt = bool(PROMPT.match(line.text)) or at in under
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
            records = [] if self.man or kind != "text" else _label_records(group)
            if records:
                yield from (RawBlock("text", _reflow(record)) for record in records)
                continue
            first_indent = group[0].indent
            marker = _BULLET.match(group[0].text) if kind == "list_item" and not self.man else None
            if marker and len(group) > 1 and group[1].indent > first_indent:
                # the item's text starts after its marker: lines that hang under it there go on with it
                group = [Line(first_indent + marker.end() - 1, group[0].text), *group[1:]]
            text = _reflow(group)
            if kind == "list_item":
                text = _BULLET_MARK.sub("", text)
                depth = 1 if self.man else 1 + first_indent // 4
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
            and sum(1 for line in para if len(line.text) < SHORT_LINE) >= 0.75 * len(para)
        ):
            return True  # an indented block of short lines in a README/FAQ is a literal example
        if (
            not self.man
            and len(para) >= 2
            and all(len(line.text) < SHORT_LINE and not line.text.endswith((".", ",")) for line in para)
            and not any(_BULLET.match(line.text) for line in para)
            and not _is_record(para)
        ):
            # several short unwrapped lines (a config snippet), not hard-wrapped prose or a record
            return True
        prompts = sum(1 for line in para if PROMPT.match(line.text))
        if prompts and prompts >= len(para) / 2:
            return True
        codeish = sum(1 for line in para if CODE_LINE.search(line.text))
        return len(para) >= 2 and codeish >= 0.6 * len(para) and any(ch in "{}=;" for ch in para[0].text)

    def _set_off_example(self, para: list[Line]) -> bool:
        """A man page indents its whole text, so an example is told by its depth: two lines or more indented
        deeper than the line above them (the paragraph before, under the same heading), each a line of its own
        (`_unwrapped`) or continued with a '\\', none ending with '.' or ',' and none a bullet: a configuration
        ("upstream alpha.example.net paused" / "spoolfile /var/lib/tidesync/spool"), commands, a command's forms,
        a program's output. Read as prose, its lines ran into one ("holdfor 12:45 holdfor 12:45:09 ..."). It is
        the page's own mark of code (groff sets a display unfilled and indented), so the block is `marked`."""
        above = self._above
        return (
            above is not None
            and len(para) >= 2
            and min(line.indent for line in para) > above.indent
            and _lines_of_their_own(para)
            and not any(line.text.endswith((".", ",")) or _BULLET.match(line.text) for line in para)
            and not _hanging_definition(para)
        )


def _hanging_definition(para: list[Line]) -> bool:
    """Is `para` a term above its description, set deeper under it ("local address" / "       Address of the
    local endpoint (IPv4 dotted quad)"), not an example whose first line opens what is set deeper under it (a
    brace, a command continued with '\\')?"""
    return para[1].indent > para[0].indent and not para[0].text.endswith(("\\", "{", "(", "["))


def _configuration_under_lead_in(para: list[Line]) -> set[int]:
    """The positions of lines of configuration right under a line of prose ending with ':' (two words in a row)
    and at its indentation (deeper lines are `_set_off_lines`), up to the first line that is none: a setting
    ("CapabilityBoundingSet=~", "timeout = 16"), a section header ("[Service]"), a statement's ';' or a comment
    (`_configuration_line`), any line inside a brace the run opened, the rest of a line continued with '\\';
    at least one setting, brace or statement among them, not only comments."""
    found: set[int] = set()
    for at in range(1, len(para)):
        lead_in = para[at - 1]
        if not (lead_in.text.endswith(":") and TWO_WORDS.search(lead_in.text)):
            continue
        end, depth = at, 0
        while end < len(para) and (
            depth > 0
            or para[end - 1].text.endswith("\\")
            or (para[end].indent == lead_in.indent and _configuration_line(para[end].text))
        ):
            depth = max(0, depth + para[end].text.count("{") - para[end].text.count("}"))
            end += 1
        if any(CODE_LINE.search(line.text) and not _COMMENT.match(line.text) for line in para[at:end]):
            found.update(range(at, end))
    return found


def _configuration_line(text: str) -> bool:
    """A line of configuration (`_configuration_under_lead_in`): a code line or a section header, with no four
    plain words in a row, no mail address alone and no comma at its end (values listed in a sentence:
    "Unicast=06:00:00:00:00:00/07:00:00:00:00:00,")."""
    if PROSE.search(text) or _MAIL_ADDRESS.fullmatch(text) or text.endswith(","):
        return False
    return bool(CODE_LINE.search(text) or _SECTION_HEADER.match(text))


def _box_table(para: list[Line]) -> tuple[list[Line], str, int, list[Line]] | None:
    """A table drawn with box characters, as groff's tbl draws one in a man page ("┌─────┬─────┐" /
    "│Name │ Keyword │" / "├─────┼─────┤" / ... / "└─────┴─────┘"): the lines above it, its "a | b" rows, how
    many of them are its header (the rows above its first inner rule) and the lines below it. A line whose
    first cell is empty goes on with the row above it (a cell wrapped over lines reads as one; a spacer line
    adds nothing); a rule or a first cell with text starts a row. None when `para` holds no such table."""
    top = next((at for at, line in enumerate(para) if _BOX_TOP.fullmatch(line.text)), None)
    if top is None:
        return None
    bottom = next((at for at in range(top + 1, len(para)) if _BOX_BOTTOM.fullmatch(para[at].text)), None)
    if bottom is None:
        return None
    rows: list[list[list[str]]] = []  # each row's cells, each cell its lines' texts
    header_rows, ruled = 0, True  # (a rule closes the row above it)
    for line in para[top + 1 : bottom]:
        if _BOX_INNER.fullmatch(line.text):
            header_rows = header_rows or sum(1 for row in rows if any(row))
            ruled = True
            continue
        if not line.text.startswith("│"):
            return None
        cells = [cell.strip() for cell in line.text.strip("│").split("│")]
        if ruled or (cells[0] and rows):
            rows.append([[] for _ in cells])
            ruled = False
        for k, cell in enumerate(cells):
            if cell and k < len(rows[-1]):
                rows[-1][k].append(cell)
    texts = [[" ".join(cell) for cell in row] for row in rows if any(row)]
    if len(texts) < 2:
        return None
    header_rows = header_rows if header_rows < len(texts) else 0  # (no row below the first rule: no header)
    return para[:top], "\n".join(" | ".join(row) for row in texts), header_rows, para[bottom + 1 :]


def _aligned_table(para: list[Line]) -> str | None:
    """A table whose columns are aligned with spaces ("Vendor    Contract number    Renewal" above its rows) as
    "a | b" rows, the first of them its header. None unless `para` is one: a header and at least two rows, as
    many cells (three or more, two spaces or more between them) in every row, each column starting at one
    position in every row, and a header of short labels (words, no digits, no option, path or setting)."""
    if len(para) < 3:
        return None
    rows: list[list[str]] = []
    starts: list[list[int]] = []
    for line in para:
        cells = list(_CELL.finditer(line.text))
        rows.append([cell.group() for cell in cells])
        starts.append([line.indent + cell.start() for cell in cells])
    if len(rows[0]) < 3 or any(row_starts != starts[0] for row_starts in starts):
        return None  # (two columns are a list of terms, `_aligned_definitions`)
    if any("|" in cell for row in rows for cell in row):
        return None
    if any(len(cell.split()) > 4 or not _HEADER_CELL.fullmatch(cell) for cell in rows[0]):
        return None
    return "\n".join(" | ".join(row) for row in rows)


def _aligned_definitions(para: list[Line]) -> list[tuple[str, str]]:
    """A two-column list of terms and their descriptions aligned with spaces, a description wrapped under
    itself:

        LOG-DLQ-HIGH   the dead-letter queue holds more than 5,000 messages for
                       15 minutes.
        LOG-LAG-HIGH   consumer lag is above 200,000 messages.
        LOG-INGEST-ZERO  no documents indexed for 5 minutes.

    as (term, description) pairs; [] unless every line of `para` is an entry's first line or a wrapped line
    indented deeper, with two entries or more, and at least half of them with their description at the column
    of the first entry's (a list aligned as one, not prose with two spaces after a sentence). An entry's first
    line: a short term, without a sentence's end or a bullet, at the paragraph's indentation; two spaces or
    more; its description, with no three spaces together (as between columns of figures)."""
    indent = para[0].indent
    entries: list[list[str]] = []
    columns: list[int] = []
    for line in para:
        entry = _TERM_COLUMNS.match(line.text) if line.indent == indent else None
        if (
            entry
            and not entry.group(1).endswith((".", "!", "?", ",", ";"))
            and "   " not in entry.group(2)
            and not _BULLET.match(line.text)
        ):
            entries.append([entry.group(1).rstrip(":"), entry.group(2)])
            columns.append(entry.start(2))
        elif line.indent > indent and entries:
            entries[-1][1] += " " + line.text
        else:
            return []
    if len(entries) < 2 or 2 * columns.count(columns[0]) < len(columns):
        return []
    return [(term, description) for term, description in entries]


def _definition_text(term: str, description: str) -> str:
    """An aligned definition as one line: "LOG-DLQ-HIGH: the queue holds ...", but "09:30 Pool full." and
    "CONNECTING -- initial state." where the term has a colon of its own or the description opens with a
    separator of its own."""
    opens_with_words = description[:1].isalnum() or description[:1] in "\"'(<[/"
    return f"{term}: {description}" if ":" not in term and opens_with_words else f"{term} {description}"


def _label_records(group: list[Line]) -> list[list[Line]]:
    """A block of "Label: value" lines ("Phone:  +1-555-0147", "E-mail: noc@example") as one record per label,
    a line without a label going on with the record above it (a wrapped value); before the first label a short
    line is a line of its own (a name above its contact details), wrapped lines one paragraph;
    [] when fewer than two lines, or fewer than half of them, start with a label (hard-wrapped prose)."""
    labelled = [LABEL_LINE.match(line.text) is not None for line in group]
    named = [at for at, line in enumerate(group) if labelled[at] and line.text[:1].islower()]
    if len(named) < 2:  # a name in lower case is a label only in a list of names, not a wrapped sentence that
        for at in named:  # goes on with one ("... like this: "relayd: bind" / "failed: Cannot assign ...")
            labelled[at] = False
    if sum(labelled) < 2 or 2 * sum(labelled) < len(group):
        return []
    first = labelled.index(True)
    above = group[:first]
    # the lines above the first label: each one a line of its own when short ("Quillgate Support Desk"),
    # else one paragraph (the sentence that introduces the details)
    records: list[list[Line]] = [[x] for x in above] if _unwrapped(above) else ([above] if above else [])
    for line, label in zip(group[first:], labelled[first:], strict=True):
        if label:
            records.append([line])
        else:  # a wrapped value, hanging or not, goes on with its words
            records[-1].append(Line(records[-1][0].indent, line.text))
    return records


def _is_record(para: list[Line]) -> bool:
    """Is `para` a record of "Label: value" lines ("Phone:  +1-555-0147" / "E-mail: noc@example", see
    `_label_records`) with no line that reads as code ("failure_template = <<EOF", "# comment"): short lines
    that are not a snippet?"""
    return bool(_label_records(para)) and not any(
        CODE_LINE.search(line.text) or PROMPT.match(line.text) for line in para
    )


def _dedent_lines(lines: list[Line]) -> str:
    base = min(line.indent for line in lines)
    return "\n".join(" " * (line.indent - base) + line.text for line in lines)


def _reflow(group: list[Line]) -> str:
    """Join hard-wrapped lines with spaces; keep a line break where the indentation changes
    (term/definition). A line that breaks after a word's hyphen and goes on in lower case joins without the
    space ("--keep-" / "in-foreground" -> "--keep-in-foreground"): man and fmt wrap at the hyphens of compound
    words and option names, so the hyphen is the author's (typeset hyphenation is undone in PDFs only).

    Lines set off under a lead-in keep their lines too: indented deeper than the line after them, right under
    a line ending with ':' (a command inside a step: "2. Replay the queue:" / "     dlq-replay --rate 2000" /
    "   The rate is per second"), or under such a line at its indentation."""
    set_off = _set_off_lines(group)
    # the first line indented deeper than the lines above it, when they all stand at the first line's
    # indentation and it opens a sentence: a definition under its term, the term wrapped over lines ("ip route
    # add ... segs a,b" / "dev eth0" above "    Adds an IPv6 route ..."; not a wrapped line that goes on in
    # lower case, "... ahead of" / "      any event ...")
    hanging = next((at for at, line in enumerate(group) if line.indent != group[0].indent), 0)
    out = group[0].text
    for at in range(1, len(group)):
        prev, line = group[at - 1], group[at]
        if (
            at in set_off
            or at - 1 in set_off
            or (line.indent != prev.indent and prev is group[0])
            or (at == hanging and line.indent > prev.indent and _OPENS_SENTENCE.match(line.text))
        ):
            out += "\n"
        else:
            out += "" if wrapped_at_hyphen(prev.text, line.text) else " "
        out += line.text
    return out


def _set_off_lines(group: list[Line]) -> set[int]:
    """The positions of the lines of `group` set off under a lead-in (see `_reflow`): a run of lines indented
    deeper than the lead-in and than the line after the run (if any), its first line at the run's least
    indentation; a run of several lines only when they are `_lines_of_their_own` (not a wrapped paragraph)."""
    set_off: set[int] = set()
    at = 1
    while at < len(group):
        line = group[at]
        if not (group[at - 1].text.endswith(":") and line.indent > group[at - 1].indent):
            at += 1
            continue
        end = at
        while end + 1 < len(group) and group[end + 1].indent >= line.indent:
            end += 1
        run = group[at : end + 1]
        if len(run) == 1 or _lines_of_their_own(run):
            set_off.update(range(at, end + 1))
        at = end + 1
    return set_off


def _lines_of_their_own(lines: list[Line]) -> bool:
    """Is each of these lines one of its own, not hard-wrapped prose: `_unwrapped`, or all but the last continued
    with a '\\' (several commands, or one continued)?"""
    return _unwrapped(lines) or all(line.text.endswith("\\") for line in lines[:-1])


def _unwrapped(lines: list[Line]) -> bool:
    """Are these lines each a line of its own: short, and none wrapping into the next (see `_wraps_into`)?"""
    return all(len(x.text) < SHORT_LINE for x in lines) and not any(
        _wraps_into(x, y) for x, y in zip(lines, lines[1:], strict=False)
    )


def _wraps_into(line: Line, following: Line) -> bool:
    """Does `line` read as a line of prose wrapped into `following`: six words or more ending in a word, and
    the next line going on in lower case ("... and the bind-address" / "or relay-port ...")?"""
    return len(line.text.split()) >= 6 and line.text[-1].isalnum() and following.text[:1].islower()
