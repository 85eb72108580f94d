"""Porter stemming of one lower-case word (after the British-to-American spelling map)."""

from __future__ import annotations

from knowledge.text.spelling import american
from knowledge.text.stopwords import word_set

_CACHE_LIMIT = 400_000
_STEM_CACHE: dict[str, str] = {}

# Porter (1980) stemmer with the two later revisions (bli->ble, logi->log), written from the published
# algorithm description. It only runs on ASCII alphabetic words longer than two letters.


def _consonants(word: str) -> list[bool]:
    """Per letter: True for a consonant (y counts as a consonant at the start or after a vowel)."""
    flags: list[bool] = []
    prev = False
    for i, ch in enumerate(word):
        if ch in "aeiou":
            cons = False
        elif ch == "y":
            cons = i == 0 or not prev
        else:
            cons = True
        flags.append(cons)
        prev = cons
    return flags


def _measure(stem_: str) -> int:
    """Porter's m: the number of vowel->consonant transitions in the stem."""
    flags = _consonants(stem_)
    return sum(1 for i in range(1, len(flags)) if flags[i] and not flags[i - 1])


def _has_vowel(stem_: str) -> bool:
    return not all(_consonants(stem_))


def _ends_double_consonant(word: str) -> bool:
    return len(word) >= 2 and word[-1] == word[-2] and _consonants(word)[-1]


def _ends_cvc(word: str) -> bool:
    if len(word) < 3:
        return False
    flags = _consonants(word)
    return flags[-3] and not flags[-2] and flags[-1] and word[-1] not in "wxy"


_STEP2 = sorted(
    {
        "ational": "ate",
        "tional": "tion",
        "enci": "ence",
        "anci": "ance",
        "izer": "ize",
        "bli": "ble",
        "alli": "al",
        "entli": "ent",
        "eli": "e",
        "ousli": "ous",
        "ization": "ize",
        "ation": "ate",
        "ator": "ate",
        "alism": "al",
        "iveness": "ive",
        "fulness": "ful",
        "ousness": "ous",
        "aliti": "al",
        "iviti": "ive",
        "biliti": "ble",
        "logi": "log",
    }.items(),
    key=lambda kv: -len(kv[0]),
)
_STEP3 = sorted(
    {
        "icate": "ic",
        "ative": "",
        "alize": "al",
        "iciti": "ic",
        "ical": "ic",
        "ful": "",
        "ness": "",
    }.items(),
    key=lambda kv: -len(kv[0]),
)
_STEP4 = sorted(
    word_set("al ance ence er ic able ible ant ement ment ent ion ou ism ate iti ous ive ize"),
    key=lambda s: (-len(s), s),
)


def _step1ab(w: str) -> str:
    if w.endswith("sses") or w.endswith("ies"):
        w = w[:-2]
    elif w.endswith("s") and not w.endswith("ss"):
        w = w[:-1]
    if w.endswith("eed"):
        if _measure(w[:-3]) > 0:
            w = w[:-1]
        return w
    for suffix in ("ed", "ing"):
        if w.endswith(suffix):
            base = w[: -len(suffix)]
            if not _has_vowel(base):
                return w
            if base.endswith(("at", "bl", "iz")):
                return base + "e"
            if _ends_double_consonant(base) and base[-1] not in "lsz":
                return base[:-1]
            if _measure(base) == 1 and _ends_cvc(base):
                return base + "e"
            return base
    return w


def _replace_suffix(w: str, table: list[tuple[str, str]], min_measure: int) -> str:
    # Porter: only the longest matching suffix is considered; if its condition fails, nothing happens.
    for suffix, replacement in table:
        if w.endswith(suffix):
            base = w[: -len(suffix)]
            return base + replacement if _measure(base) > min_measure else w
    return w


def _porter(w: str) -> str:
    w = _step1ab(w)
    if w.endswith("y") and _has_vowel(w[:-1]):  # step 1c
        w = w[:-1] + "i"
    w = _replace_suffix(w, _STEP2, 0)
    w = _replace_suffix(w, _STEP3, 0)
    for suffix in _STEP4:
        if w.endswith(suffix):
            base = w[: -len(suffix)]
            if _measure(base) > 1 and (suffix != "ion" or base.endswith(("s", "t"))):
                w = base
            break
    if w.endswith("e"):  # step 5a
        base = w[:-1]
        m = _measure(base)
        if m > 1 or (m == 1 and not _ends_cvc(base)):
            w = base
    if w.endswith("ll") and _measure(w) > 1:  # step 5b
        w = w[:-1]
    return w


def stem(word: str) -> str:
    """Porter-stem one lower-case word (British spellings are first mapped to American ones).

    Args:
        word: a lower-case token. Words that are not ASCII letters, or have at most two letters, are
            returned unchanged.

    Returns:
        The stem (``"configuration"`` -> ``"configur"``, ``"routers"`` -> ``"router"``).
    """
    cached = _STEM_CACHE.get(word)
    if cached is not None:
        return cached
    result = _porter(american(word)) if len(word) > 2 and word.isascii() and word.isalpha() else word
    if len(_STEM_CACHE) >= _CACHE_LIMIT:
        _STEM_CACHE.clear()
    _STEM_CACHE[word] = result
    return result
