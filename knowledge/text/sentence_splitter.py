"""The sentence splitter for technical text (wrapped lines, lists, headings, configuration comments).

The one splitter of the project: :func:`locate_sentences` finds each sentence and its span in the text;
chunking cuts and overlaps chunks at those spans, and answering reads the same sentences (:func:`sentences`),
so a chunk's overlap with the next one splits into the same sentences in both chunks.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from knowledge.text.line_shapes import CAPTION_LABEL, TERM_ITEM
from knowledge.text.stopwords import STOPWORDS, word_set

__all__ = [
    "SentenceSpan",
    "column_names",
    "is_caps_heading",
    "is_table_rule",
    "lines_holding",
    "locate_sentences",
    "opens_list_item",
    "sentences",
    "table_cells",
]

_BLOCK_SPLIT_RE = re.compile(r"\n[ \t\r\f\v]*\n")
# Bullets, "1." / "1)", and "(a)" / "a)" / "(iv)" items. A parenthesised word such as "(via)" is not an item.
_LIST_ITEM_RE = re.compile(
    r"\s*(?:[-*+\u2022\u2023\u25e6\u25aa]|\d{1,3}[.)]|\(?(?:[a-zA-Z]|[ivxIVX]{1,4}|\d{1,3})\))\s+"
)
_HEADING_RE = re.compile(r"\s*#{1,6}\s+")
_RULE_RE = re.compile(r"\s*(?:[-=*_~]\s*){3,}")
# A manual's option term alone on its line, its description on the lines below: "-K, --kill", "-P port",
# "-t, --config-test[=FILE]", "--help [short|recursive]"; up to three spellings. One option is a name, a value
# joined by "=" in capitals or angle brackets, and one argument word; "-o name=value" and "--server=/a/b"
# (settings, not terms) are not options here.
_OPTION_NAME = r"--?[A-Za-z0-9?][\w.?-]*"
_OPTION_VALUE = r"(?:\[?=(?:[A-Z][\w|]*|<[^>\s]+>)\]?)?"  # "=FILE", "[=FILE]", "=<size>"
_OPTION_ARGUMENT = r"(?: (?:[a-z][\w-]*|[A-Z][A-Z_]*|\[[^\]\s]+\]|<[^>\s]+>))?"  # " port", " [a|b]"
_OPTION = _OPTION_NAME + _OPTION_VALUE + _OPTION_ARGUMENT
_OPTION_TERM_RE = re.compile(rf"{_OPTION}(?:,? {_OPTION}){{0,2}}")
# A setting's name and its argument alone on a line, a capitalised description below it: "netmask mask" /
# "Netmask (number of bits)", "accept_ra int". Up to three words in lower case, the first no function word.
# A period only inside a word ("debug.level") or as the "..." of an argument that may be repeated
# ("sourcedir directory..."): "connection." ends a wrapped sentence.
_TERM_WORD = r"[\w-]*(?:\.[\w-]+)*"
# A command's syntax may follow each word: placeholders in capitals and bracketed parts ("isis hello-interval
# (1-600) [level-1 | level-2]", "peer A.B.C.D <name>").
_SYNTAX_PART = r" (?:[A-Z][A-Z0-9_.:|-]*|\[[^\[\]]*\]|\([^()]*\)|<[^<>]*>|\{[^{}]*\})"
_WORD_TERM_RE = re.compile(
    rf"[a-z]{_TERM_WORD}(?:{_SYNTAX_PART})*(?: [a-z]{_TERM_WORD}(?:{_SYNTAX_PART})*){{0,2}}(?:\.\.\.)?"
)
# A manual's tagged entry set on one line: a short tag (a number, an option, a word), three spaces or more, and
# its description ("0      if all went well", "kbit   Kilobits"): groff pads a tag that fits to the
# description's column; a number and a dash before its meaning ("4   - standby", "254 - reset wait") is one too.
# Where a block holds two or more, each starts a sentence, as an option alone on its line does. A line with code's
# marks ("=", ";", braces, angle brackets) is a listing's or a configuration's, and a line whose words are spread
# apart further on ("Wait   until   the   HELLO") is a justified paragraph's: neither is an entry.
_TAG_RE = re.compile(
    r"\d{1,3} +[-\u2013\u2014] (?=[A-Za-z])|(?:\d{1,3}|--?[\w-]+|[A-Za-z][\w.-]*) {3,}(?=[A-Za-z(])"
)
_CODE_MARKS_RE = re.compile(r"[=;{}<>]")
_JUSTIFIED_RE = re.compile(r"(?<![.:]) {2}")  # spaces a justified line spreads between words
# A term in capitals alone on its line, a capitalised description below it: a signal and its spellings ("USR1 or
# SIGFUNC=DUMP", "TERM, INT or SIGFUNC=HALT"), an environment variable ("RELAY_HOME"). Names of two characters
# or more; a line of capitals words only, four characters or more, is a heading already (is_caps_heading).
_CAPS_NAME = r"[A-Z][A-Z0-9_]+(?:=[A-Z][A-Z0-9_]*)?"
_CAPS_TERM_RE = re.compile(rf"{_CAPS_NAME}(?:(?:,| or) {_CAPS_NAME}){{0,3}}")
# a list item of this many words above a line keeps it: a term and its description ("PUSH_BANNER" / "Push a
# short banner out to the client.", "Caution" / "The spool index is rebuilt at boot.")
_ITEM_TERM_WORDS = 1
# words a sentence does not end on: articles, conjunctions, prepositions ("it", "also", "same" may end one)
_GOES_ON_AFTER = word_set(
    "a an the and or but nor of to in into onto on for with without by from at as via per than"
)
# matched only from the first mark of a run: tried from each mark of a long run ("....", a ruler of dots),
# the engine read the rest of the run again for every one (quadratic; a 100 kB line took minutes)
_BOUNDARY_RE = re.compile(r"(?<![.!?])([.!?]+)[\"'\u201d\u2019)\]]*\s+")
# a caption's number ("Table 7.3. Summary of relay control verbs") or a section's ("2.5. Relayd spool
# queue internals") opening a sentence: its period ends no sentence
_LABEL_NUMBER_RE = re.compile(rf"{CAPTION_LABEL}|\d+(?:\.\d+)+")
# Words after which a period never ends a sentence (the next word may well be capitalised: "e.g. Cisco").
# "no" is left out: "set it to no. Then ..." is common in configuration text.
_NO_SPLIT_AFTER = word_set(
    """
    e.g eg i.e ie vs cf viz fig figs eq eqs approx ca resp ref refs sect ch vol pp
    mr mrs ms dr prof jr sr al incl esp
    """
)


_WORD_RE = re.compile(r"\S+")
_LINE_END_RE = re.compile(r"[.!?][\"'\u201d\u2019)\]]*$")


def opens_list_item(line: str) -> bool:
    """Does the line open with a list item's marker ("- ", "* ", "1. ", "a) ") before its text?"""
    item = _LIST_ITEM_RE.match(line)
    return item is not None and item.end() < len(line)


def _tagged_entry(line: str) -> bool:
    """Is `line` a manual's tagged entry set on one line (see _TAG_RE)?"""
    tag = _TAG_RE.match(line)
    if tag is None:
        return False
    description = line[tag.end() :]
    return _CODE_MARKS_RE.search(description) is None and _JUSTIFIED_RE.search(description) is None


def _breaks_off(line: str) -> bool:
    """Does the line stop in mid-sentence: on a function word ("... written as DDMMYYYY or") or inside a
    bracket or quote it opened ("... the spool hook (since tidesync")?"""
    last = line.rsplit(" ", 1)[-1].lower()
    return (
        last in _GOES_ON_AFTER
        or line.count("(") > line.count(")")
        or line.count("[") > line.count("]")
        or line.count('"') % 2 == 1
        or line.count("\u201c") > line.count("\u201d")
    )


def _is_abbreviation(word: str) -> bool:
    """A word after which a period does not end a sentence: "e.g", "vs", an initial."""
    word = word.lstrip("(\"'`[").lower()
    return word in _NO_SPLIT_AFTER or (len(word) == 1 and word.isalpha())


def _continues_comment(previous: str, text: str) -> bool:
    """Does a '#' line continue the '#' line right above it? It does when it starts in lower case and the line
    above is prose that did not end its sentence (a Markdown heading is neither written in lower case nor
    wrapped; root shell commands such as "# mkdir /dev/net" are short and each stands alone)."""
    above = _HEADING_RE.match(previous)
    if above is None or not _goes_on_with_sentence(text.strip()):
        return False
    prose = previous[above.end() :].strip()
    return len(prose.split()) >= 5 and not _ends_sentence(prose)


def _goes_on_with_sentence(text: str) -> bool:
    """Does a wrapped line go on with the sentence above: a lower-case word, a number that is not a list item
    ("5 megabytes, a full flush is forced ..."), or a bracket or quote before a lower-case word ("(especially
    suddenly), so be patient!")?"""
    if _LIST_ITEM_RE.match(text):
        return False
    first = text[:1]
    if first in "([\"'":
        return text[1:2].islower()
    return first.islower() or first.isdigit()


def _ends_sentence(line: str) -> bool:
    """Does this line end with a sentence (not with "e.g." or an initial)?"""
    if not _LINE_END_RE.search(line):
        return False
    last = line.rsplit(" ", 1)[-1].rstrip(".!?\"'\u201d\u2019)]")
    # "etc." before a lower-case word goes on ("1, 2, 3, etc. and so on"), as inside a line
    return not _is_abbreviation(last) and last.lower().lstrip("(\"'`[") != "etc"


@dataclass(frozen=True, slots=True)
class SentenceSpan:
    """One sentence of a text and where it lies in it.

    ``text[start:end]`` is the sentence as written: wrapped lines, the list or heading marker that opens it
    and any marker of a comment line it continues included. ``sentence`` is what answering reads: whitespace
    collapsed to single spaces, those markers left out.
    """

    start: int
    end: int
    sentence: str


@dataclass(slots=True)
class _Segment:
    """A run of words that sentence boundaries are looked for in: a paragraph, list item, heading or table
    row (a comment wrapped over several '#' lines is one segment)."""

    start: int  # where it opens in the text, its list or heading marker included
    words: list[tuple[int, int]]  # the span of each word in the text, markers left out


def _words(text: str, begin: int, end: int) -> list[tuple[int, int]]:
    return [(m.start(), m.end()) for m in _WORD_RE.finditer(text, begin, end)]


# a section's number and its title ("2.5. Relayd spool ...", "4.2 My relay ..."); not a hosts line ("127.0.1.1 host")
_NUMBERED_HEADING_RE = re.compile(r"\d{1,2}(?:\.\d{1,2}){1,3}\.? +[A-Z\"\u201c(].*")
_NUMBERED_HEADING_WORDS = 12  # at most, in its title
# a section heading in capitals ("SYNOPSIS", "EXIT STATUS"): the text below it does not go on with it
_CAPS_HEADING_RE = re.compile(r"(?=(?:\S *){4})[A-Z][A-Z0-9]*(?: +[A-Z][A-Z0-9]*){0,4}")  # 4+ characters
# a table cell separator: a bar between spaces, or at a line's edge ("foo | 1 | " keeps its empty last cell)
_BAR_RE = re.compile(r"(?:^|(?<=\s))\|(?=\s|$)")
# the rule line under a table's header rows ("--- | ---", knowledge.parsing; Markdown's "|:---|---:|")
_TABLE_RULE_RE = re.compile(r"\|? *:?-{3,}:? *(?:\| *:?-{3,}:? *)*\|?")


def is_caps_heading(line: str) -> bool:
    """Is this line one to five words in capitals, four characters or more, as a man page's section headings
    are ("SYNOPSIS", "SEE ALSO")? Such a line is a sentence of its own."""
    return _CAPS_HEADING_RE.fullmatch(line.strip()) is not None


def is_numbered_heading(line: str) -> bool:
    """Is this line a section's heading by its number: a number of two to four parts ("2.5.", "4.2.1") before a
    capitalised title of at most _NUMBERED_HEADING_WORDS words that does not end as a sentence or a lead-in does
    ("2.5. Relayd spool queue internals", "4.2. My relay keeps printing code 409 Slot busy")? Such a
    line is a sentence of its own (an FAQ's question heading may end with '?')."""
    text = line.strip()
    return (
        _NUMBERED_HEADING_RE.fullmatch(text) is not None
        and len(text.split()) <= _NUMBERED_HEADING_WORDS + 1
        and not text.endswith((".", ":", ";", ","))
    )


def table_cells(line: str) -> list[str]:
    """The cells of a table line as parsed tables are written ("a | b", an empty cell kept), stripped."""
    return [cell.strip() for cell in _BAR_RE.split(line.strip())]


def is_table_rule(line: str) -> bool:
    """Is this the rule line under a table's header rows ("--- | ---")? It belongs to no sentence."""
    return _TABLE_RULE_RE.fullmatch(line.strip()) is not None


def lines_holding(lines: Sequence[str], sentence: str) -> list[int]:
    """Where in a passage's lines `sentence` stands as a whole line (whitespace aside)."""
    target = " ".join(sentence.split())
    return [at for at, line in enumerate(lines) if " ".join(line.split()) == target]


def column_names(row: str, passage: str) -> list[str]:
    """The names of a table row's columns: the line right above the rule line ("--- | ---") that the parser
    puts under a table's header, when the row is a body row of that table in the passage; [] otherwise (a table
    without a header row, or no table: a headerless table's first line is data, and two shell pipes in a row
    are no table)."""
    lines = passage.splitlines()
    width = len(table_cells(row))
    for at in lines_holding(lines, row):
        above = at - 1
        while above > 0 and len(table_cells(lines[above])) == width and not is_table_rule(lines[above]):
            above -= 1
        if above > 0 and is_table_rule(lines[above]) and len(table_cells(lines[above - 1])) == width:
            return table_cells(lines[above - 1])
    return []


def _table_rows(lines: list[str]) -> set[int]:
    """The lines that are rows of a table written as "cell | cell" (how parsed tables reach a chunk's text):
    two or more neighbouring lines with as many cell separators (a bar between spaces or at the line's edge,
    so that an empty first or last cell counts). One line with a " | " among prose is not a row
    ("tidectl peers | grep -c up")."""
    cells = [len(_BAR_RE.findall(line)) if line else -1 for line in lines]
    rows: set[int] = set()
    for k in range(len(lines) - 1):
        if cells[k] > 0 and cells[k] == cells[k + 1]:
            rows.update((k, k + 1))
    return rows


def _segments(text: str) -> list[_Segment]:
    """The text's segments, in order (see :func:`locate_sentences` for the rules)."""
    segments: list[_Segment] = []
    block_start = 0
    for separator in [*_BLOCK_SPLIT_RE.finditer(text), None]:
        block_end = separator.start() if separator is not None else len(text)
        # lines of the current paragraph or list item, as stripped strings and as word spans
        paragraph: list[str] = []
        paragraph_words: list[tuple[int, int]] = []
        paragraph_start = 0
        previous = ""  # the line before, as written
        offset = block_start
        raw_lines = text[block_start:block_end].splitlines(keepends=True)
        rows = _table_rows([raw.strip() for raw in raw_lines])
        term_list = False  # has this block shown a term line (see _OPTION_TERM_RE, _WORD_TERM_RE)?
        tagged = {at for at, raw in enumerate(raw_lines) if _tagged_entry(raw.strip())}
        tagged_lines = tagged if len(tagged) >= 2 else set()
        item_line = False  # is the paragraph so far a list item's first line alone?
        for at, raw_line in enumerate(raw_lines):
            line_start, offset = offset, offset + len(raw_line)
            line = raw_line.splitlines()[0]
            stripped = line.strip()
            if not stripped:
                continue
            first = line_start + len(line) - len(line.lstrip())  # the line's first visible character
            after_item, item_line = item_line, False
            heading = _HEADING_RE.match(line)
            if heading and segments and _continues_comment(previous, line[heading.end() :]):
                # a '#' comment wrapped over several lines of a configuration file ("# Note: the ... form
                # for a probe" / "# requires that tidesync is built with sockets."): one sentence, not headings
                segments[-1].words.extend(_words(text, line_start + heading.end(), line_start + len(line)))
                previous = line
                continue
            previous = line
            item = _LIST_ITEM_RE.match(line)
            is_rule = _RULE_RE.fullmatch(line) is not None or is_table_rule(stripped)
            row = stripped.startswith("|") or at in rows
            # a man page's "SYNOPSIS" stands alone, as a row does (a chunk holds a paragraph per line, so a
            # line of nothing but capitals is a heading or a term, not a wrapped piece of a sentence); so does a
            # numbered section's heading ("2.5. Relayd spool queue internals")
            row = row or is_caps_heading(stripped) or is_numbered_heading(stripped)
            starts_segment = is_rule or heading or row or (item and item.end() < len(line))
            if starts_segment and paragraph:
                segments.append(_Segment(paragraph_start, paragraph_words))
                paragraph, paragraph_words = [], []
            if is_rule:
                continue
            if heading:
                segments.append(
                    _Segment(first, _words(text, line_start + heading.end(), line_start + len(line)))
                )
            elif row:
                segments.append(_Segment(first, _words(text, line_start, line_start + len(line))))
            elif item and item.end() < len(line):
                paragraph, paragraph_start = [line[item.end() :].strip()], first
                paragraph_words = _words(text, line_start + item.end(), line_start + len(line))
                item_line = True
            else:
                ended = _ends_sentence(paragraph[-1]) if paragraph else False
                if (
                    paragraph
                    and stripped[0].islower()
                    and (
                        (len(stripped.split()) <= 5 and ended)
                        or (TERM_ITEM.match(stripped) and (ended or paragraph[-1].endswith(":")))
                    )
                ):
                    # a line that ended a sentence, then a short one in lower case: not a wrapped sentence but
                    # the next term of a manual's option list ("... the usual tidesync port)." / "listen-port port");
                    # likewise a "term - description" item after a finished sentence or a lead-in ("... entries of
                    # the following kinds:" / "discard - the frame is thrown away quietly.")
                    segments.append(_Segment(paragraph_start, paragraph_words))
                    paragraph, paragraph_words = [], []
                if (
                    after_item
                    and paragraph
                    and stripped[0].isupper()
                    and len(paragraph[-1].split()) > _ITEM_TERM_WORDS
                    and not paragraph[-1].endswith((":", ","))
                    and not _breaks_off(paragraph[-1])
                ):
                    # the line after a list item that did not end with a period: the next paragraph or heading
                    # ("- Streams, using relay_stream_bridge" / "The Spool rotation policy is ..."),
                    # not a wrapped line of the item (a chunk holds an item on one line, but a man page's hanging
                    # reference may keep its lines: "... written as DDMMYYYY or" / "DDMMYYYYHHMM[SS]."); a term
                    # of one word keeps the description under it ("PUSH_BANNER" / "Push a short banner ...")
                    segments.append(_Segment(paragraph_start, paragraph_words))
                    paragraph, paragraph_words = [], []
                following = raw_lines[at + 1].strip() if at + 1 < len(raw_lines) else ""
                # names in capitals are a term only where the line above does not stop in mid-sentence ("...
                # print the" / "TCP" / "Port in use" is one sentence)
                caps_term = _CAPS_TERM_RE.fullmatch(stripped) is not None and not (
                    paragraph and _breaks_off(paragraph[-1])
                )
                term = _OPTION_TERM_RE.fullmatch(stripped) is not None or (
                    (_WORD_TERM_RE.fullmatch(stripped) is not None or caps_term)
                    and following[:1].isupper()
                    and stripped.split()[0] not in STOPWORDS  # "or WEB_AUTH:url" goes on with a sentence
                )
                if at in tagged_lines and paragraph and not _breaks_off(paragraph[-1]):
                    # the next of a block's tagged entries ("0      if all went well" / "1      if the spool is full"),
                    # or the first under a lead-in ("Exit codes:")
                    segments.append(_Segment(paragraph_start, paragraph_words))
                    paragraph, paragraph_words = [], []
                if (
                    term
                    and term_list
                    and paragraph
                    and not _OPTION_TERM_RE.fullmatch(paragraph[-1])
                    and not _WORD_TERM_RE.fullmatch(paragraph[-1])
                    and not _CAPS_TERM_RE.fullmatch(paragraph[-1])
                    and not paragraph[-1].endswith(("\\", ":"))
                ):
                    # the next term of a list of options or settings whose description did not end with a
                    # period ("-E, --events" / "Continually list relays as they drop" / "-W,
                    # --watch"; "netmask mask" / "Netmask (number of bits) deprecated" / "metric metric"); a
                    # term's second spelling on the line below it, a shell line continued, or the line a lead-in
                    # introduces ("To watch the traffic of host x:" / "relaydump host x") is not one
                    segments.append(_Segment(paragraph_start, paragraph_words))
                    paragraph, paragraph_words = [], []
                term_list = term_list or term
                if not paragraph:
                    paragraph_start = first
                paragraph.append(stripped)
                paragraph_words.extend(_words(text, line_start, line_start + len(line)))
        if paragraph:
            segments.append(_Segment(paragraph_start, paragraph_words))
        if separator is not None:
            block_start = separator.end()
    return segments


def _segment_sentences(text: str, segment: _Segment) -> list[SentenceSpan]:
    """Split one segment at sentence ends: ``.``/``!``/``?`` (and closing quotes or brackets), whitespace, and a
    word that does not start in lower case, unless the period follows an abbreviation or the number of a caption
    or a section."""
    if not segment.words:
        return []
    words = [text[start:end] for start, end in segment.words]
    joined = " ".join(words)
    word_at: dict[int, int] = {}  # offset in `joined` -> index of the word that starts there
    position = 0
    for index, word in enumerate(words):
        word_at[position] = index
        position += len(word) + 1
    cuts = [0]  # indices of the words that start sentences
    start = 0
    for m in _BOUNDARY_RE.finditer(joined):
        end = m.end()
        if end >= len(joined):
            break
        if joined[end].islower() or joined[end] == "|":
            # "etc. and", "foo.c. then": not a sentence start; nor is a table's next cell ("... not answering.
            # | server, query"): a sentence that ends a cell goes on to the end of its row
            continue
        period_only = "." in m.group(1) and "?" not in m.group(1) and "!" not in m.group(1)
        # the word before the period, and the sentence so far, read in place: slicing the sentence so far at
        # every period that ends none ("Mr. Mr. Mr. ...", a long line of initials) copied it each time (quadratic)
        word_start = joined.rfind(" ", start, m.start()) + 1 or start
        if period_only and (
            _is_abbreviation(joined[word_start : m.start()])
            or _LABEL_NUMBER_RE.fullmatch(joined, start, m.start())
        ):
            continue
        cuts.append(word_at[end])  # the boundary's whitespace is one space between two words
        start = end
    cuts.append(len(words))
    return [
        SentenceSpan(
            segment.start if first == 0 else segment.words[first][0],
            segment.words[last - 1][1],
            " ".join(words[first:last]),
        )
        for first, last in zip(cuts, cuts[1:], strict=False)
    ]


def locate_sentences(text: str) -> list[SentenceSpan]:
    """Split technical text into sentences, each with its span in the text.

    Blank lines, list items (``-``, ``*``, ``1.``, ``a)``), Markdown headings, table rows (``| a | b |``, or
    neighbouring ``a | b`` lines with as many cells), a line of one to five words in capitals (a man page's
    ``SYNOPSIS``) and a numbered section's heading (``2.5. Relayd spool queue internals``) always start
    a new sentence, and the last three end theirs; wrapped lines inside a
    paragraph are joined, except a short line starting in lower case right after a line that ended a sentence
    (the next term of a manual's option list: "listen-port port"), and a term alone on its line, an option
    ("-W, --watch"), a setting ("netmask mask") or names in capitals ("USR1 or SIGFUNC=DUMP") above a
    capitalised description, once its block (up to a blank line) has shown one, whatever the line above ended
    with (a description without a period) unless it is a lead-in (':') or the term's other spelling. In a block
    of two or more entries set on one line each, a tag padded to its description ("0      if all went well"),
    each entry starts a sentence unless the line above stops in mid-sentence. A list item of more than one word
    that did not end its sentence ends at a capitalised line under it (a chunk holds an item on one line: that is the next paragraph
    or heading), unless it ends with ':' or ',' or stops in mid-sentence (on an article, conjunction or
    preposition, or inside a bracket or quote it opened).
    A '#' comment line in lower case that goes on with the unfinished sentence of the '#' line above belongs to
    that sentence. Inside a paragraph a sentence ends at ``.``/``!``/``?`` followed by whitespace and a word
    that does not start in lower case or with a table's cell separator (a sentence that ends a cell goes on to
    the end of its row), except after abbreviations such as ``e.g.``, ``i.e.``, ``vs.`` or an initial, and after
    the number that opens a caption or a section's heading (``Table 7.3.``, ``2.5.``). Periods
    inside version numbers, IP addresses and file names (``2.6.14``, ``lb-pool.8.txt``) are
    never followed by whitespace, so they do not split. Rule lines (``---``, a table's ``--- | ---``) belong
    to no sentence.

    Args:
        text: plain text, possibly with Markdown-style lists and headings.

    Returns:
        The sentences in text order; their spans do not overlap. A span starts at the sentence's first
        character as written (a list or heading marker included) and ends after its last one.
    """
    return [span for segment in _segments(text) for span in _segment_sentences(text, segment)]


def sentences(text: str) -> list[str]:
    """Split technical text into sentences (the rules are those of :func:`locate_sentences`).

    Args:
        text: plain text, possibly with Markdown-style lists and headings.

    Returns:
        Sentences with internal whitespace collapsed to single spaces and list and heading markers removed.
    """
    return [span.sentence for span in locate_sentences(text)]
