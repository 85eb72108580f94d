"""Character folding before analysis: the spellings of one word that text from PDFs, word processors, other
keyboards and other normalisation forms carries are made one, so that a question finds the document whatever
way either of them was typed or typeset. Targeted maps of named characters, not a blanket NFKC (which would
also rewrite superscripts, fractions, ellipses, units and the like).

Two levels, both run at ingestion and at query time alike (through :func:`knowledge.text.analyze`):

* :func:`fold_text`, on the whole text before it is cut into tokens: canonical composition (NFC: an accented
  letter typed as a letter plus a combining accent is the one precomposed letter), invisible characters inside
  words dropped (soft hyphen, zero-width joiners, word joiner, BOM; a zero-width space inside a word of a
  script written with spaces, elsewhere it separates words), the Latin ligatures of PDF fonts
  spelled out ("ﬁ" -> "fi"), fullwidth ASCII forms as ASCII, halfwidth katakana as katakana, and an option written with a typographic dash
  ("–enable-foo", "—verbose", "‐v": typesetting and word processors turn "--" into a dash) with ASCII ones;
* :func:`fold_accents` and :func:`fold_case`, on one token: accents of Latin and Greek letters dropped
  ("résumé" -> "resume", "İstanbul" -> "Istanbul"), the optional vowel points of Hebrew and Arabic dropped,
  and full Unicode case folding ("Straße" and "STRASSE" -> "strasse", final sigma as sigma).

ASCII text is returned unchanged by every function here (and costs one ``isascii`` check).
"""

from __future__ import annotations

import re
import unicodedata

# Invisible format characters that sit inside words without separating them: soft hyphen (PDF and HTML
# hyphenation points), zero-width space, zero-width non-joiner and joiner, word joiner, zero-width no-break
# space (a BOM that ended up inside the text), Mongolian vowel separator.
_INVISIBLE = "\u00ad\u200c\u200d\u2060\ufeff\u180e"
# The Latin presentation ligatures (U+FB00-U+FB06) that PDF text extraction emits for "fi", "fl", ...
_LIGATURES = {
    "\ufb00": "ff",
    "\ufb01": "fi",
    "\ufb02": "fl",
    "\ufb03": "ffi",
    "\ufb04": "ffl",
    "\ufb05": "st",
    "\ufb06": "st",
}
_TEXT_MAP: dict[int, str | None] = {
    **dict.fromkeys(map(ord, _INVISIBLE)),
    **{ord(lig): letters for lig, letters in _LIGATURES.items()},
    # fullwidth forms of printable ASCII (U+FF01-U+FF5E), as East Asian input methods type Latin letters,
    # digits and punctuation
    **{code: chr(code - 0xFEE0) for code in range(0xFF01, 0xFF5F)},
    # halfwidth katakana (U+FF61-U+FF9F) as the ordinary, fullwidth ones; their voicing marks are combining
    # marks composed with the kana before them by the NFC that follows
    **{code: unicodedata.normalize("NFKC", chr(code)) for code in range(0xFF61, 0xFFA0)},
}
_TRANSLATED = re.compile("[" + _INVISIBLE + "".join(_LIGATURES) + "\uff01-\uff5e\uff61-\uff9f]")

# A zero-width space is a line-break hint inside a word of a script written with spaces ("con\u200bfiguration",
# a long identifier in HTML), but the word separator of scripts written without (Thai, Lao, Khmer, Myanmar,
# Chinese, Japanese).
_ZERO_WIDTH_SPACE = re.compile("\u200b+")
_UNSPACED_SCRIPTS = re.compile(
    "[\u0e00-\u0eff\u1000-\u109f\u1780-\u17ff\u3040-\u30ff\u3400-\u9fff\uf900-\ufaff]"
)


def _zero_width_spaces(text: str, *, separator: str) -> str:
    """``text`` with each zero-width space inside a word of a spaced script (between two characters that are
    not spaces: "max\u200b_wal\u200b_size", "/usr/\u200bshare") dropped, and each other one made ``separator``."""

    def replace(match: re.Match[str]) -> str:
        start, end = match.start(), match.end()
        before = text[start - 1] if start else ""
        after = text[end] if end < len(text) else ""
        inside_word = before and after and not before.isspace() and not after.isspace()
        if inside_word and not _UNSPACED_SCRIPTS.match(before) and not _UNSPACED_SCRIPTS.match(after):
            return ""
        return separator

    return _ZERO_WIDTH_SPACE.sub(replace, text)


# A typographic dash (or two) that opens a word, as an option's dashes come out of a typesetter (Sphinx and
# SmartyPants make "--" an en dash, word processors an en or em dash) or a font's hyphen or minus.
_DASHES = "\u2010\u2011\u2012\u2013\u2014\u2015\u2212\ufe63"
# (what precedes the dash is checked by _option_dashes: a pattern opening with a lookbehind is tried at every
# position of the text, one opening with the class only where a dash is)
_OPTION_DASH = re.compile(rf"([{_DASHES}]{{1,2}})(?=([^\W\d_])([^\W_])?)")
_NOT_AFTER = re.compile(rf"[\w\-{_DASHES}]")
_LONG_DASHES = frozenset("\u2013\u2014\u2015")


def _option_dashes(match: re.Match[str]) -> str:
    """ASCII dashes for a typographic dash before a letter at the start of a word: a long dash (en, em) stands
    for the two hyphens of a long option ("–enable-foo" -> "--enable-foo") unless one letter follows alone
    ("–v" -> "-v"); a hyphen or minus sign for one; two dashes for two. A dash inside a word or a range
    ("well—known", "10–20") stays."""
    start = match.start()
    if start and _NOT_AFTER.match(match.string, start - 1):
        return match.group(0)
    dashes = match.group(1)
    if len(dashes) == 2:
        return "--"
    if dashes in _LONG_DASHES and match.group(3) is not None:
        return "--"
    return "-"


def fold_text(text: str) -> str:
    """The text with the spellings that differ only in typesetting made one (see the module docstring).

    Args:
        text: any text, a chunk's or a question's.

    Returns:
        The folded text; ``text`` itself when it is ASCII or holds nothing to fold.
    """
    if text.isascii():
        return text
    if not unicodedata.is_normalized("NFC", text):
        text = unicodedata.normalize("NFC", text)
    text = _OPTION_DASH.sub(_option_dashes, text)
    if "\u200b" in text:
        text = _zero_width_spaces(text, separator=" ")
    if _TRANSLATED.search(text) is None:
        return text
    text = text.translate(_TEXT_MAP)
    return text if unicodedata.is_normalized("NFC", text) else unicodedata.normalize("NFC", text)


# Letters without a decomposition that unaccent and ASCII folding filters also fold to plain letters.
_LETTER_MAP = {
    ord("ø"): "o",
    ord("Ø"): "O",
    ord("æ"): "ae",
    ord("Æ"): "AE",
    ord("œ"): "oe",
    ord("Œ"): "OE",
    ord("ł"): "l",
    ord("Ł"): "L",
    ord("đ"): "d",
    ord("Đ"): "D",
    ord("ħ"): "h",
    ord("Ħ"): "H",
    ord("ı"): "i",
    ord("ŀ"): "l",
    ord("Ŀ"): "L",
}


def _is_latin_or_greek(char: str) -> bool:
    code = ord(char)
    return code < 0x0250 or 0x0370 <= code < 0x0400 or 0x1E00 <= code < 0x2000


def _is_optional_point(mark: str) -> bool:
    """A Hebrew point or cantillation mark, or an Arabic short vowel (harakat): written in some texts only."""
    code = ord(mark)
    return 0x0591 <= code <= 0x05C7 or 0x064B <= code <= 0x065F or code == 0x0670


def fold_accents(token: str) -> str:
    """``token`` without the accents of its Latin and Greek letters and without Hebrew and Arabic vowel points,
    in its case (``"Bézier"`` -> ``"Bezier"``, ``"İ"`` -> ``"I"``). Marks on letters of other scripts stay:
    there they make other letters (Devanagari vowel signs, Cyrillic "й"). A mark on no letter (at the start,
    as PDF extraction or a CJK character pair leaves one) is dropped."""
    if token.isascii():
        return token
    decomposed = unicodedata.normalize("NFD", token.translate(_LETTER_MAP))
    kept: list[str] = []
    base = ""
    for char in decomposed:
        if unicodedata.combining(char) or unicodedata.category(char) == "Mn":
            if not base or _is_latin_or_greek(base) or _is_optional_point(char):
                continue
        else:
            base = char
        kept.append(char)
    folded = "".join(kept).replace("\u0640", "")  # and the Arabic tatweel, a stretch of the line
    return unicodedata.normalize("NFC", folded)


def fold_case(token: str) -> str:
    """Lower case for matching: ``str.lower`` for ASCII, full Unicode case folding otherwise (``"Straße"`` ->
    ``"strasse"``, ``"ΟΔΟΣ"`` and ``"οδος"`` -> ``"οδοσ"``)."""
    return token.lower() if token.isascii() else token.casefold()


def match_form(text: str) -> str:
    """``text`` folded as the analyser folds its tokens (:func:`fold_text`, :func:`fold_accents`,
    :func:`fold_case`): the form in which an identifier of :func:`knowledge.text.identifiers` can be looked for
    verbatim (``"./configure –with-Größe"`` -> ``"./configure --with-grosse"``); ``text.lower()`` for ASCII."""
    if text.isascii():
        return text.lower()
    return fold_case(fold_accents(fold_text(text)))


# What a parsed document's text loses for good (knowledge.parsing.parse_file): the characters that only a
# typesetter put there, each standing for letters or for nothing. Zero-width joiners stay (an emoji sequence,
# a Persian word need them), and so do accents, case and the dashes: the text shown in citations is the text
# as written; the analyser folds those for matching.
_TYPESET = re.compile("[\u00ad\u2060\ufeff" + "".join(_LIGATURES) + "]")
_TYPESET_MAP: dict[int, str | None] = {
    **dict.fromkeys(map(ord, "\u00ad\u2060\ufeff")),
    **{ord(lig): letters for lig, letters in _LIGATURES.items()},
}


def typesetting_unfold(text: str) -> str:
    """``text`` without soft hyphens, word joiners, stray BOMs and zero-width spaces inside a word of a spaced
    script, and with the Latin ligatures spelled out ("conﬁg­uration" -> "configuration"): as a reader sees it,
    and as an embedding model can read it (a ligature is a word piece its vocabulary lacks)."""
    if text.isascii():
        return text
    if "\u200b" in text:
        text = _zero_width_spaces(text, separator="\u200b")
    if _TYPESET.search(text) is None:
        return text
    return text.translate(_TYPESET_MAP)
