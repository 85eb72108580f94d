"""Confidential markings ("CONFIDENTIAL", "internal use only") removed from quoted text, and the output guard
for knowledge-base text shown outside an answer. No Django here."""

from __future__ import annotations

from typing import Any

import re2

from screening.pii import mask_pii

_MARKING_WORDS = (
    r"(?:strictly\s+|highly\s+|company\s+|business\s+|commercial(?:\s+in)?\s+|proprietary\s+(?:and\s+|&\s+)?)*"
    r"(?:confidential(?:\s+information)?|internal\s+use\s+only|for\s+internal\s+use\s+only|internal\s+only|"
    r"do\s+not\s+(?:distribute|forward|copy|share)|not\s+for\s+(?:distribution|external\s+(?:use|distribution)|"
    r"public\s+release)|top\s+secret(?:\s*//\s*[a-z/ ]+)?|secret\s*//\s*[a-z/ ]+|classified|restricted|"
    r"proprietary|need\s+to\s+know|eyes\s+only|official[\s-]sensitive|sensitive\s+but\s+unclassified|tlp\s*:\s*(?:red|amber))"
)
_DECOR = r"[\s*_=#~|<>\[\](){}:.\-–—/\\!]*"
# Every pattern of the output guard runs on document text (answers quote evidence verbatim), so it is
# compiled with RE2: matching is linear in the text whatever the input (Python's backtracking engine took
# seconds on a line of "CONFIDENTIAL - " repeated nine times). RE2 has no look-around; where the old
# patterns used it, the check is made on the match in Python (see _inline_marking_cut).
# A line consisting only of markings (any case), possibly several joined by separators and a label.
_MARKING_LINE_RE = re2.compile(
    rf"(?im)^{_DECOR}(?:(?:classification|security\s+classification|marking|label|notice|sensitivity)\s*[:\-]\s*)?"
    rf"{_MARKING_WORDS}(?:{_DECOR}(?:-|–|—|/|\||,|and|&)?{_DECOR}{_MARKING_WORDS})*{_DECOR}$"
)
# Inline markers: upper-case shouting or bracketed labels; prose such as "set the tier to confidential"
# stays because it is neither. `\b` (ASCII word boundary) stands where a letter must not touch the marker;
# a trailing separator is captured and kept when nothing but white space follows it.
_INLINE_MARKING_RE = re2.compile(
    r"(?:[\[(]\s*(?i:" + _MARKING_WORDS + r")\s*[\])]"
    r"|\*{0,3}\b(?:STRICTLY\s+|COMPANY\s+|PROPRIETARY\s+(?:AND\s+|&\s+)?)*"
    r"(?:CONFIDENTIAL|INTERNAL\s+USE\s+ONLY|FOR\s+INTERNAL\s+USE\s+ONLY|DO\s+NOT\s+DISTRIBUTE|DO\s+NOT\s+FORWARD|"
    r"NOT\s+FOR\s+DISTRIBUTION|TOP\s+SECRET(?://[A-Z/ ]+)?|EYES\s+ONLY|NEED\s+TO\s+KNOW)\b\*{0,3}"
    r"(\s*[-:–—]\s*)?)"
)
_MULTI_SPACE_RE = re2.compile(r"[ \t]{2,}")
_SPACE_BEFORE_PUNCT_RE = re2.compile(r"[ \t]+([.,;:!?])")
_MANY_NEWLINES_RE = re2.compile(r"\n{3,}")
# how an answer sets off a code line (agents.layout.CODE_INDENT; screening does not import agents)
CODE_INDENT = "    "


def strip_confidential_markings(text: str) -> tuple[str, bool]:
    """Remove classification banners and markers ("CONFIDENTIAL", "INTERNAL USE ONLY", "TOP SECRET" ...).

    Args:
        text: answer text (or a quoted passage).

    Returns:
        ``(clean_text, changed)``. Whole marking lines are dropped; inline upper-case or bracketed markers
        are cut out; ordinary prose that merely uses the word ("the confidential tier") is kept. Linear time.
    """
    cleaned = _MARKING_LINE_RE.sub("", text)
    end = len(cleaned)

    def _inline_marking_cut(match: Any) -> str:
        # a separator after a marker goes with it only when more text follows ("CONFIDENTIAL - the key")
        separator = match.group(1)
        return separator if separator and match.end() == end else ""

    cleaned = _INLINE_MARKING_RE.sub(_inline_marking_cut, cleaned)
    if cleaned == text:
        return text, False
    cleaned = _MANY_NEWLINES_RE.sub("\n\n", cleaned)
    cleaned = "\n".join(_tidied(line) for line in cleaned.split("\n")).strip("\n")
    return cleaned.strip() if not cleaned.startswith(CODE_INDENT) else cleaned.rstrip(), True


def _tidied(line: str) -> str:
    """A line after a marker was cut from it: runs of spaces made one, no space before punctuation; a code
    line of an answer (indented by four spaces, agents/layout.py) keeps its indentation."""
    body = line.lstrip(" \t")
    indent = line[: len(line) - len(body)] if line.startswith(CODE_INDENT) else ""
    return indent + _SPACE_BEFORE_PUNCT_RE.sub(r"\1", _MULTI_SPACE_RE.sub(" ", body)).rstrip()


def guard_quoted_text(text: str) -> tuple[str, list[str], bool]:
    """The output guard for text quoted from the knowledge base outside the answer (passages, citation
    quotes, the citation viewer): PII masked as in answers, confidential markings removed.

    Args:
        text: a passage or quote.

    Returns:
        ``(guarded_text, masked_entity_types, markings_removed)``.
    """
    masked, kinds = mask_pii(text)
    cleaned, marked = strip_confidential_markings(masked)
    return cleaned, kinds, marked
