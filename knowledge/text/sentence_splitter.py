"""The sentence splitter for technical text (wrapped lines, lists, headings, configuration comments)."""

from __future__ import annotations

import re

from knowledge.text.stopwords import word_set

_BLOCK_SPLIT_RE = re.compile(r"\n[ \t\r\f\v]*\n")
# Bullets, "1." / "1)", and "(a)" / "a)" / "(iv)" items. A parenthesised word such as "(via)" is not an item.
_LIST_ITEM_RE = re.compile(
    r"\s*(?:[-*+\u2022\u2023\u25e6\u25aa]|\d{1,3}[.)]|\(?(?:[a-zA-Z]|[ivxIVX]{1,4}|\d{1,3})\))\s+"
)
_HEADING_RE = re.compile(r"\s*#{1,6}\s+")
_TERM_ITEM_RE = re.compile(r"[a-z][\w-]* - \S")
_RULE_RE = re.compile(r"\s*(?:[-=*_~]\s*){3,}")
_BOUNDARY_RE = re.compile(r"([.!?]+)[\"'\u201d\u2019)\]]*\s+")
# Words after which a period never ends a sentence (the next word may well be capitalised: "e.g. Cisco").
# "no" is left out: "set it to no. Then ..." is common in configuration text.
_NO_SPLIT_AFTER = word_set(
    """
    e.g eg i.e ie vs cf viz fig figs eq eqs approx ca resp ref refs sect ch vol pp
    mr mrs ms dr prof jr sr al incl esp
    """
)


def _split_segment(segment: str) -> list[str]:
    text = " ".join(segment.split())
    out: list[str] = []
    start = 0
    for m in _BOUNDARY_RE.finditer(text):
        end = m.end()
        if end >= len(text):
            break
        if text[end].islower():  # "etc. and", "foo.c. then": not a sentence start
            continue
        period_only = "." in m.group(1) and "?" not in m.group(1) and "!" not in m.group(1)
        if period_only and _is_abbreviation(text[start : m.start()].rsplit(" ", 1)[-1]):
            continue
        sentence = text[start:end].strip()
        if sentence:
            out.append(sentence)
        start = end
    tail = text[start:].strip()
    if tail:
        out.append(tail)
    return out


_LINE_END_RE = re.compile(r"[.!?][\"'\u201d\u2019)\]]*$")


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
    ("1 second, an immediate time jump ..."), or a bracket or quote before a lower-case word ("(especially
    backwards), so be careful!")?"""
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


def sentences(text: str) -> list[str]:
    """Split technical text into sentences.

    Blank lines, list items (``-``, ``*``, ``1.``, ``a)``), Markdown headings and table rows always start a
    new sentence; wrapped lines inside a paragraph are joined, except a short line starting in lower case
    right after a line that ended a sentence (the next term of a manual's option list: "listen-port port").
    Inside a paragraph a sentence ends at ``.``/``!``/``?`` followed by whitespace and a word that does not
    start in lower case, except after
    abbreviations such as ``e.g.``, ``i.e.``, ``vs.`` or an initial. Periods inside version numbers, IP
    addresses and file names (``2.6.14``, ``ip-route.8.txt``) are never followed by whitespace, so they do
    not split.

    Args:
        text: plain text, possibly with Markdown-style lists and headings.

    Returns:
        Sentences with internal whitespace collapsed to single spaces and list markers removed.
    """
    segments: list[str] = []
    for block in _BLOCK_SPLIT_RE.split(text):
        paragraph: list[str] = []  # lines of the current paragraph or list item, joined when flushed
        previous = ""  # the line before, as written
        for line in block.splitlines():
            stripped = line.strip()
            if not stripped:
                continue
            heading = _HEADING_RE.match(line)
            if heading and segments and _continues_comment(previous, line[heading.end() :]):
                # a '#' comment wrapped over several lines of a configuration file ("# Note: the ... syntax
                # for a script" / "# requires that /bin/sh is Bash."): one sentence, not headings
                segments[-1] = f"{segments[-1]} {line[heading.end() :].strip()}"
                previous = line
                continue
            previous = line
            item = _LIST_ITEM_RE.match(line)
            is_rule = _RULE_RE.fullmatch(line) is not None
            starts_segment = (
                is_rule or heading or stripped.startswith("|") or (item and item.end() < len(line))
            )
            if starts_segment and paragraph:
                segments.append(" ".join(paragraph))
                paragraph = []
            if is_rule:
                continue
            if heading:
                segments.append(line[heading.end() :].strip())
            elif stripped.startswith("|"):
                segments.append(stripped)
            elif item and item.end() < len(line):
                paragraph.append(line[item.end() :].strip())
            else:
                ended = _ends_sentence(paragraph[-1]) if paragraph else False
                if (
                    paragraph
                    and stripped[0].islower()
                    and (
                        (len(stripped.split()) <= 5 and ended)
                        or (_TERM_ITEM_RE.match(stripped) and (ended or paragraph[-1].endswith(":")))
                    )
                ):
                    # a line that ended a sentence, then a short one in lower case: not a wrapped sentence but
                    # the next term of a manual's option list ("... the standard NTP port)." / "listen-port port");
                    # likewise a "term - description" item after a finished sentence or a lead-in ("... rules of
                    # the following types:" / "discard - the packet is dropped silently.")
                    segments.append(" ".join(paragraph))
                    paragraph = []
                paragraph.append(stripped)
        if paragraph:
            segments.append(" ".join(paragraph))
    out: list[str] = []
    for segment in segments:
        out.extend(_split_segment(segment))
    return out
