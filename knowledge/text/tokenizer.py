"""Tokenizer: raw tokens of text, their surrounding punctuation stripped, compounds split into pieces.

No stemming and no stopwords here: :mod:`knowledge.text.analyzer` composes this with the stemmer and the
identifier lane."""

from __future__ import annotations

import re
import unicodedata

from knowledge.text.folding import fold_case, fold_text


def _combining_marks() -> str:
    """A regex class body of the combining marks (categories Mn, Mc, Me) of the blocks of scripts written with
    them (Python's ``\\w`` holds no mark: "नमस्ते" or a pointed Hebrew word would fall apart into letters)."""
    blocks = ((0x0300, 0x1DFF), (0x20D0, 0x20FF), (0x2CEF, 0x2DFF), (0x302A, 0x309A), (0xA66F, 0xABFF),
              (0xFB1E, 0xFB1E), (0xFE20, 0xFE2F))  # fmt: skip
    marks = (chr(c) for start, end in blocks for c in range(start, end + 1))
    return "".join(re.escape(m) for m in marks if unicodedata.category(m)[0] == "M")


_MARKS = _combining_marks()
_TOKEN_CHARS = r"\w.\-/:%@'\u2019"
# Raw tokens: runs of word characters plus the punctuation that occurs *inside* identifiers, and the combining
# marks on their letters (a token never starts with a mark).
TOKEN_RE = re.compile(rf"[{_TOKEN_CHARS}][{_TOKEN_CHARS}{_MARKS}]*")
# Alphanumeric runs inside a compound token, with their letters' marks.
_ALNUM_RUN_RE = re.compile(rf"[^\W_](?:[^\W_]|[{_MARKS}])*")
# Split an ASCII alphanumeric run at letter/digit boundaries and at lower->upper (camelCase) boundaries.
# No "acronym boundary" rule: it would cut IPv4 as I|Pv4 and VLANs as VLA|Ns.
_PIECE_RE = re.compile(r"[A-Z]+[a-z]*|[a-z]+|[0-9]+")
CAMEL_RE = re.compile(r"[a-z][A-Z]")
_TRAILING_JUNK = ".,:;@'/%-"
_LEADING_JUNK = ",:;@'"


def raw_tokens(text: str) -> list[str]:
    """Runs of word characters plus the punctuation that occurs inside identifiers, in text order, read from
    the text folded by :func:`knowledge.text.folding.fold_text` (ligatures spelled out, soft hyphens dropped,
    NFC...)."""
    return TOKEN_RE.findall(fold_text(text))


def is_word(tok: str) -> bool:
    """Letters only, the combining marks on them included ("configuration", "straße", "नमस्ते")."""
    if tok.isalpha():
        return True
    return (
        not tok.isascii()
        and tok[:1].isalpha()
        and all(char.isalpha() or unicodedata.category(char)[0] == "M" for char in tok)
    )


def strip_token(tok: str) -> str:
    """Remove punctuation around a raw token while keeping meaningful leaders (``--opt``, ``%SYS``, ``/etc``)."""
    tok = tok.rstrip(_TRAILING_JUNK)
    while tok:
        tok = tok.lstrip(_LEADING_JUNK)
        if not tok:
            break
        first = tok[0]
        nxt = tok[1] if len(tok) > 1 else ""
        if first == "-":
            run = len(tok) - len(tok.lstrip("-"))
            after = tok[run : run + 1]
            if run <= 2 and after.isalpha():  # -v, --check, -XX:MaxHeap
                break
            tok = tok[run:]
        elif first == "%":
            if nxt.isalpha():  # %LINK-3-UPDOWN
                break
            tok = tok[1:]
        elif first == ".":
            if nxt.isalpha() or nxt == "_":  # .bashrc
                break
            tok = tok[1:]
        elif first == "/":
            if nxt.isalnum() or nxt in "_.":  # /etc/passwd, /.ssh
                break
            tok = tok[1:]
        else:
            break
    return tok


def compound_pieces(tok: str) -> list[str]:
    """The lower-cased pieces of a compound token, split at separators, letter/digit and camelCase boundaries
    (a camelCase run is kept whole as well): ``getElementById`` -> ``getelementbyid get element by id``."""
    pieces: list[str] = []
    for run in _ALNUM_RUN_RE.findall(tok):
        if not run.isascii():
            pieces.append(fold_case(run))
            continue
        parts = _PIECE_RE.findall(run)
        if len(parts) > 1 and CAMEL_RE.search(run) and run.isalpha():
            # A lower-case query ("maxheap", "postgresql") must still find a camelCase run.
            pieces.append(run.lower())
        pieces.extend(p.lower() for p in parts)
    return pieces
