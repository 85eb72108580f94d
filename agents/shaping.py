"""Answer shapers: how a verified draft reads, one shaper per answer template.

A draft is a list of (verbatim evidence sentence, evidence index). Every shaper keeps each sentence's words
with its [n] citation (only how they are set off changes: a source's footnote markers left out, a table row's
label, a heading before its sentence); what they decide is order, grouping and length:

- the lead (the selected answer sentence and what it needs around it) comes first;
- further sentences are grouped by document, and a document other than the lead's is named once, where its
  first sentence starts ("From <title>: ...");
- a section heading that the sentence splitter left at the start of a sentence is set off with a colon
  ("Rollback after commit: If a problem appears ...") instead of running into it; a heading in capitals
  that the splitter made a sentence opens the sentence under it ("SYNOPSIS: ...") or, introducing nothing
  shown, is left out;
- prose and comparisons stop at about MAX_WORDS words (whole sentences; the lead is always kept), spent on
  the selector's most probable sentences before the sentences that follow them (`Draft.priority`); a
  procedure is numbered steps; a comparison is one bullet per document.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from agents.evidence import Draft, Evidence, passage_sentences
from agents.layout import (
    CODE_INDENT,
    command_line,
    laid_out,
    manual_command,
    next_line,
    record_set_off,
    term_set_off,
)
from athena.choices import Choice
from knowledge.text import (
    column_names,
    is_caps_heading,
    is_numbered_heading,
    is_table_rule,
    lines_holding,
    table_cells,
)

# a short answer, about four sentences of a manual (ATHENA_ANSWER_MAX_WORDS). Validation EM by limit: 80 words
# .398, 100 words .435, 120 words .454 (tests/benchmarks/README.md): containment rewards length, readers do not
MAX_WORDS = 100
MAX_HEADING_WORDS = 8
# how many times the words of sentences that introduce nothing shown go to the next sentences (`_kept`)
REFILLS = 2


class Template(str, Choice):
    PROCEDURE = "procedure_sop"
    CONCEPT = "concept_explanation"
    COMPARISON = "comparison_decision"
    PARAMETER = "parameter_lookup"
    TROUBLESHOOTING = "troubleshooting"


@dataclass(frozen=True, slots=True)
class Shaped:
    text: str
    refs: dict[int, int]  # evidence index -> its [n] number, in order of first use
    sentences: tuple[tuple[str, int], ...]  # the draft's sentences kept, in the order shown (a heading that
    # opens the sentence under it counts as kept)


# a source's own footnote marker ("... when breached [4]"): on the page "[n]" is a citation, so left in it would
# read as one, or be linked to another passage's citation number
FOOTNOTE_MARKER = re.compile(r"\s+\[\d{1,3}\](?=[\s.,;:!?)]|$)|^\[\d{1,3}\]\s*")


# the row of a two-column "name: | value" table as parsed ("Default: | PeerIdleTimeout 5")
LABEL_CELL = re.compile(r"^([^|]{1,60}:) \| (?=\S)")


# spaces before a line break ("From <title>: " above a code block)
TRAILING_SPACE = re.compile(r"[ \t]+\n")
# a line ending in a shell's line continuation
LINE_CONTINUED = re.compile(r"\s\\\n")
# a backslash between spaces in a sentence, with the words on either side
BACKSLASH_BETWEEN = re.compile(r"(\S+) \\ (?=(\S+))")


def _continued_lines_joined(sentence: str, item: Evidence) -> str:
    """A command continued over lines ("... timeout 16 \\" then "send ...") without its backslashes: the
    sentence splitter joined the lines, and a backslash before a space would now escape that space and break
    the command a reader copies. Only a backslash that ends a line of the passage between those two words goes
    ("C: \\ then" written on one line stays)."""
    if " \\ " not in sentence or not LINE_CONTINUED.search(item.text):
        return sentence

    def joined(match: re.Match[str]) -> str:
        before, after = match.group(1), match.group(2)
        continued = rf"{re.escape(before)}[ \t]+\\\n\s*{re.escape(after)}"
        return f"{before} " if re.search(continued, item.text) else match.group(0)

    return BACKSLASH_BETWEEN.sub(joined, sentence)


def _without_footnotes(sentence: str) -> str:
    return FOOTNOTE_MARKER.sub("", sentence).strip() or sentence


def _shown(sentence: str, index: int, evidence: Sequence[Evidence]) -> str:
    """A sentence as the answer shows it: its code lines on lines of their own (`agents.layout.laid_out`),
    a command that stands on a line of its own as a one-line code block (`agents.layout.command_line`),
    its heading or definition term set off, the source's footnote markers left out, a labelled table row read
    as "Default: PeerIdleTimeout 5", a row of a table with a header read with its column names ("signal: 1;
    name: SIGHUP")."""
    if 0 <= index < len(evidence):
        item = evidence[index]
        code = laid_out(sentence, item.text, manual_command(item.title), item.code_lines)
        if code is not None:
            code = _set_off_heading(code, item)
            # a code line stays as written ("ports = [22]"); the prose around it loses the source's footnotes
            lines = code.split("\n")
            return "\n".join(
                line if line.startswith(CODE_INDENT) else _without_footnotes(line) for line in lines
            )
        line = command_line(sentence, item.text, manual_command(item.title), item.code_lines)
        if line is not None:
            return (
                f"\n\n{CODE_INDENT}{line}"  # a command on its own line: a one-line block, spaced as written
            )
        sentence = record_set_off(sentence, item.text) or term_set_off(sentence, item.text) or sentence
        sentence = _set_off_heading(sentence, item)
        sentence = _continued_lines_joined(sentence, item)
        if " | " in sentence and not LABEL_CELL.match(sentence):
            sentence = _with_column_names(sentence, evidence[index].text)
    return LABEL_CELL.sub(r"\1 ", _without_footnotes(sentence))


def _names_cells_of(header: str, row: str, passage: str) -> bool:
    """Is `header` the line whose column names `row` is shown with?"""
    return " | " in header and table_cells(header) == column_names(row, passage)


def _with_column_names(row: str, passage: str) -> str:
    """The row with each cell named by its column (see `knowledge.text.column_names`); the row as it is otherwise."""
    names = column_names(row, passage)
    if not names:
        return row
    named = [
        f"{name}: {cell}" if name else cell
        for name, cell in zip(names, table_cells(row), strict=True)
        if cell
    ]
    return "; ".join(named) or row


def _displayed(kept: Sequence[tuple[str, int]], evidence: Sequence[Evidence]) -> list[tuple[str, int]]:
    """The kept sentences as shown, with their evidence index; a heading (`_is_heading`) opens the sentence
    right under it in its passage ("SYNOPSIS: relayd [-f FILE]", "Fix: Clear the stale ...") instead of
    standing as a sentence."""
    shown: list[tuple[str, int]] = []
    heading = ""
    for at, (sentence, index) in enumerate(kept):
        below = kept[at + 1] if at + 1 < len(kept) else None
        if _is_heading(sentence, evidence[index]) and below is not None and below[1] == index:
            if _heads(sentence, below[0], evidence[index]):
                # (a heading that is a sentence already, an FAQ's question, is followed by a space only)
                heading = sentence.strip() + (" " if sentence.strip()[-1] in ".:;?!" else ": ")
                continue
            if _is_heading(below[0], evidence[index]):
                continue  # of two headings in a row, the one right above the text
        if (
            below is not None
            and below[1] == index
            and _names_cells_of(sentence, below[0], evidence[index].text)
        ):
            continue  # a table's header line right above a row shown with its column names
        shown.append((heading + _shown(sentence, index, evidence), index))
        heading = ""
    return shown


def _is_heading(sentence: str, item: Evidence) -> bool:
    """Is `sentence` a heading standing as a sentence of its own: a line in capitals ("DESCRIPTION"), a section's
    number and title ("4.2. Every call fails with code 407"), or the passage's own section heading (a runbook's
    "Fix" above its numbered list)?"""
    return (
        is_caps_heading(sentence)
        or is_numbered_heading(sentence)
        or sentence.strip() == _section_heading(item) != ""
    )


def _section_heading(item: Evidence) -> str:
    """The last heading of the passage's section trail ("" when it has none)."""
    return item.section.rpartition(" > ")[2].strip()


def _set_off_heading(sentence: str, item: Evidence) -> str:
    """ "Rollback after commit If a problem appears" -> "Rollback after commit: If a problem appears" when the
    passage's own section heading opens the sentence without punctuation: before a capital, or before anything
    (a command: "Creating the monitor: tmsh create ...") where the passage has the heading on a line of its own
    and the sentence's next word first on the line below it. A later sentence that merely starts with
    the heading's word ("Rollback takes ten minutes") is left as it is."""
    heading = _section_heading(item)
    if not heading or len(heading.split()) > MAX_HEADING_WORDS or heading[-1:] in ".:;?!":
        return sentence
    rest = sentence[len(heading) :]
    if not (sentence.startswith(heading) and rest[:1].isspace() and rest.strip()):
        return sentence  # (a line break follows a heading above a code block, `agents.layout.laid_out`)
    on_its_line = rf"(?m)^[ \t]*{re.escape(heading)}[ \t]*\n[ \t]*{re.escape(rest.split()[0])}"
    if rest.strip()[:1].isupper() or re.search(on_its_line, item.text):
        return f"{heading}:{rest}"
    return sentence


def _joined(parts: Sequence[str]) -> str:
    """An answer's parts in one text: a space between two, a blank line before a code block (lines indented by
    CODE_INDENT, see `agents.layout`) and a line break after it."""
    text = ""
    for part in parts:
        if not text:
            text = part.lstrip("\n")
        elif part.startswith("\n"):
            text = text.rstrip(" ") + "\n\n" + part.lstrip("\n")  # a blank line before a code block
        elif text.rpartition("\n")[2].startswith(CODE_INDENT):
            text += "\n" + part
        else:
            text += " " + part
    return TRAILING_SPACE.sub("\n", text)


def _cited(parts: list[str], label: str, shown: str, ref: int, item: Evidence | None) -> None:
    """Add a shown sentence and its citation to `parts`; a code block that goes on with the code block that
    ends the last part, on the next line of the same passage (two commands of one listing, each a sentence),
    joins it: one block, cited once after its last line."""
    cite = f" [{ref}]"
    previous = parts[-1] if parts else ""
    body, block = previous[: -len(cite)], shown.lstrip("\n")
    last = body.rpartition("\n")[2]
    if (
        item is not None
        and not label
        and previous.endswith(cite)
        and last.startswith(CODE_INDENT)
        and shown.startswith("\n\n" + CODE_INDENT)
        and next_line(last, block.partition("\n")[0], item.text)
    ):
        parts[-1] = f"{body}\n{block}{cite}"
        return
    parts.append(f"{label}{shown}{cite}")


def _grouped(sentences: Sequence[tuple[str, int]], evidence: Sequence[Evidence]) -> list[tuple[str, int]]:
    """The sentences with each document's together, documents in order of first use (stable inside one)."""
    order: dict[str, int] = {}
    for _sentence, index in sentences:
        order.setdefault(_source(index, evidence), len(order))
    return sorted(sentences, key=lambda pair: order[_source(pair[1], evidence)])


def _source(index: int, evidence: Sequence[Evidence]) -> str:
    return evidence[index].source if 0 <= index < len(evidence) else ""


def _title(index: int, evidence: Sequence[Evidence]) -> str:
    item = evidence[index]
    return item.title or item.source


def _max_words() -> int:
    from django.conf import settings

    return int(getattr(settings, "ATHENA_ANSWER_MAX_WORDS", MAX_WORDS)) if settings.configured else MAX_WORDS


def _capped(
    sentences: Sequence[tuple[str, int]],
    protected: set[tuple[str, int]],
    priority: Sequence[int] = (),
) -> list[tuple[str, int]]:
    """Whole sentences within the word budget, shown in the order given; `protected` ones (the answer's lead
    unit, and each sub-question's best sentence) always stay. The budget is spent by `priority` (lower first;
    the order given when absent)."""
    budget = _max_words()
    words = sum(len(sentence.split()) for sentence, _ in sentences if (sentence, _) in protected)
    claims = list(priority) if len(priority) == len(sentences) else list(range(len(sentences)))
    keep: set[int] = set()
    for at in sorted(range(len(sentences)), key=lambda i: (claims[i], i)):
        pair = sentences[at]
        length = len(pair[0].split())
        if pair in protected:
            keep.add(at)
        elif words + length <= budget:
            keep.add(at)
            words += length
    return [pair for at, pair in enumerate(sentences) if at in keep]


def _kept(draft: Draft, evidence: Sequence[Evidence], lead: int) -> list[tuple[str, int]]:
    """The draft's sentences that fit the word budget (its first `lead` always), grouped by document; a
    heading ("DESCRIPTION", or the passage's own section heading on a line of its own) is kept only right above
    the sentence its passage has under it (it then opens that sentence, see `_displayed`), and a table's header
    line only right above a row of its table (it then names the row's cells), or when the answer opens with
    them: elsewhere they introduce nothing. A lead-in ending in ':' after the lead is kept only right above the
    sentence it introduces. The words of a sentence left out so go to the next sentences the budget had no room
    for (at most REFILLS times)."""
    leading = set(draft.sentences[:lead])
    claims = list(draft.priority) if len(draft.priority) == len(draft.sentences) else []
    candidates = list(zip(draft.sentences, claims or range(len(draft.sentences)), strict=True))

    def fitted(
        pool: list[tuple[tuple[str, int], int]],
    ) -> tuple[list[tuple[str, int]], list[tuple[str, int]]]:
        kept = _capped([pair for pair, _ in pool], leading, [claim for _, claim in pool])
        return kept, _introducing(_grouped(kept, evidence), leading, evidence)

    kept, retained = fitted(candidates)
    for _ in range(REFILLS):
        left_out = set(kept) - set(retained)
        if not left_out:
            break
        candidates = [(pair, claim) for pair, claim in candidates if pair not in left_out]
        kept, retained = fitted(candidates)
    return retained


def _introducing(
    kept: Sequence[tuple[str, int]], leading: set[tuple[str, int]], evidence: Sequence[Evidence]
) -> list[tuple[str, int]]:
    """`kept` without the headings, table header lines and lead-ins that introduce nothing shown (`_kept`)."""
    retained: list[tuple[str, int]] = []
    for at in range(len(kept) - 1, -1, -1):
        sentence, index = kept[at]
        below = retained[-1][0] if retained and retained[-1][1] == index else None
        if at == 0:
            retained.append(kept[at])
        elif _is_heading(sentence, evidence[index]):
            if below is not None and _heads(sentence, below, evidence[index]):
                retained.append(kept[at])
        elif _is_table_header(sentence, evidence[index].text):
            # a table's header line names the cells of a row under it (`_displayed`); alone it says nothing
            if below is not None and _names_cells_of(sentence, below, evidence[index].text):
                retained.append(kept[at])
        elif sentence.rstrip().endswith(":") and kept[at] not in leading:
            # (the lead's sentences by what they are: grouping by document may put a later sentence before one)
            # a lead-in ("... is started like this:") announces the sentence under it; when the word budget
            # left that one out, or it is in the next passage, the lead-in introduces nothing shown
            if below is not None and _heads(sentence, below, evidence[index]):
                retained.append(kept[at])
        else:
            retained.append(kept[at])
    return retained[::-1]


def _is_table_header(sentence: str, passage: str) -> bool:
    """Is `sentence` a table's header line in the passage (the parser's rule line right under it)?"""
    if " | " not in sentence:
        return False
    lines = passage.splitlines()
    return any(at + 1 < len(lines) and is_table_rule(lines[at + 1]) for at in lines_holding(lines, sentence))


def _heads(heading: str, sentence: str, item: Evidence) -> bool:
    """Is `sentence` the one right under `heading` in the passage?"""
    parts = passage_sentences(item)
    return any(part == heading and after == sentence for part, after in zip(parts, parts[1:], strict=False))


def shape(draft: Draft, evidence: Sequence[Evidence]) -> Shaped:
    """Shape a verified draft for its template.

    Args:
        draft: the verified sentences (each citing an evidence index), its template, and `lead`: how many of
            its first sentences form the answer's lead unit (never cut).
        evidence: the passages the draft cites.
    Returns:
        the answer text, the citation numbers and the sentences as shown.
    """
    template = Template.from_str(draft.template) if draft.template else Template.CONCEPT
    return SHAPERS[template](draft, evidence, max(1, draft.lead))


def _prose(draft: Draft, evidence: Sequence[Evidence], lead: int) -> Shaped:
    kept = _kept(draft, evidence, lead)
    refs: dict[int, int] = {}
    parts: list[str] = []
    named = {_source(kept[0][1], evidence)} if kept else set()
    for shown, index in _displayed(kept, evidence):
        ref = refs.setdefault(index, len(refs) + 1)
        label = ""
        if 0 <= index < len(evidence) and _source(index, evidence) not in named:
            named.add(_source(index, evidence))
            label = f"From {_title(index, evidence)}: "
        _cited(parts, label, shown, ref, evidence[index] if 0 <= index < len(evidence) else None)
    return Shaped(_joined(parts), refs, tuple(kept))


def _steps(draft: Draft, evidence: Sequence[Evidence], lead: int) -> Shaped:
    if draft.preface != "Steps:":
        return _prose(draft, evidence, lead)
    refs: dict[int, int] = {}
    lines = []
    for number, (sentence, index) in enumerate(draft.sentences, start=1):
        ref = refs.setdefault(index, len(refs) + 1)
        shown = _continued_lines_joined(sentence, evidence[index]) if 0 <= index < len(evidence) else sentence
        lines.append(f"{number}. {_without_footnotes(shown)} [{ref}]")
    return Shaped("\n".join(lines), refs, tuple(draft.sentences))


def _bullets(draft: Draft, evidence: Sequence[Evidence], lead: int) -> Shaped:
    if len(draft.sentences) < 2:
        return _prose(draft, evidence, lead)
    refs: dict[int, int] = {}
    lines: list[str] = []
    current = None
    kept = _kept(draft, evidence, lead)
    for shown, index in _displayed(kept, evidence):
        ref = refs.setdefault(index, len(refs) + 1)
        source = _source(index, evidence)
        if source != current:
            name = _title(index, evidence) if 0 <= index < len(evidence) else ""
            lines.append(_joined([f"- {name}:", f"{shown} [{ref}]"]))
            current = source
        else:
            parts = [lines[-1]]
            _cited(parts, "", shown, ref, evidence[index] if 0 <= index < len(evidence) else None)
            lines[-1] = _joined(parts)
    return Shaped("\n".join(lines), refs, tuple(kept))


SHAPERS: dict[Template, Callable[[Draft, Sequence[Evidence], int], Shaped]] = {
    Template.PROCEDURE: _steps,
    Template.CONCEPT: _prose,
    Template.COMPARISON: _bullets,
    Template.PARAMETER: _prose,
    Template.TROUBLESHOOTING: _prose,
}
