"""Stemming of one lower-case word by PyStemmer: Porter for ASCII words (after the British-to-American spelling
map), Snowball's Russian, Greek and Arabic stemmers for words written wholly in Cyrillic, Greek or Arabic."""

from __future__ import annotations

import re
import threading

import Stemmer

from knowledge.text.spelling import american

# Snowball's "porter" is Porter's original (1980) algorithm, in C. On the dev vocabulary (devcorpus, the sample
# KB and the test fixtures: 24,554 words that pass the guard below) it stems every word as our former
# hand-written stemmer did except the 17 that that one's two later revisions (bli->ble, logi->log) touched:
# "possibly" -> "possibli", "topology" -> "topologi". Snowball's "english" (Porter2) would change 929 of them
# (3.8%), so it is not used: a switch to it would need a retrieval re-measure of its own.
ALGORITHM = "porter"

# PyStemmer's stemmer keeps state while it stems and must not be called from two threads at once (its
# docstring), and searches run stages in threads: one stemmer per thread.
_LOCAL = threading.local()

# The analyser memoises raw tokens, yet one word still reaches stem() from many of them ("Routers", "routers,",
# the pieces of compounds): 143,216 calls for 24,917 words over the dev corpus, which take 79 ms uncached and
# 29 ms behind this dict. PyStemmer's own cache (slower than a dict lookup) is turned off.
_CACHE_LIMIT = 400_000
_STEM_CACHE: dict[str, str] = {}


# Words written wholly in a script that one language's Snowball stemmer serves well enough are stemmed by it, so
# that a Russian question's "маршрутизатора" finds the page's "Маршрутизатор" as "routers" finds "router". The
# script decides, not a language guess: Latin-script words of any language are stemmed as English (as before).
_SCRIPT_ALGORITHMS = (
    (re.compile("[\u0400-\u04ff]+"), "russian"),  # Cyrillic
    (re.compile("[\u0370-\u03ff]+"), "greek"),
    (re.compile("[\u0620-\u064a\u066e-\u06d3]+"), "arabic"),  # the letters of the Arabic block
)


def _stemmer(algorithm: str = ALGORITHM) -> Stemmer.Stemmer:
    stemmers = getattr(_LOCAL, "stemmers", None)
    if stemmers is None:
        stemmers = _LOCAL.stemmers = {}
    stemmer = stemmers.get(algorithm)
    if stemmer is None:
        stemmer = stemmers[algorithm] = Stemmer.Stemmer(algorithm, 0)
    return stemmer


def _stem_uncached(word: str) -> str:
    if len(word) <= 2 or not word.isalpha():
        return word
    if word.isascii():
        return _stemmer().stemWord(american(word))
    for script, algorithm in _SCRIPT_ALGORITHMS:
        if script.fullmatch(word):
            return _stemmer(algorithm).stemWord(word)
    return word


def stem(word: str) -> str:
    """Porter-stem one lower-case word (British spellings are first mapped to American ones); a word wholly in
    Cyrillic, Greek or Arabic letters is stemmed by Snowball's Russian, Greek or Arabic stemmer.

    Args:
        word: a lower-case token. Words of other letters (accented Latin is folded to ASCII before), or of at
            most two letters, are returned unchanged.

    Returns:
        The stem (``"configuration"`` -> ``"configur"``, ``"routers"`` -> ``"router"``).
    """
    cached = _STEM_CACHE.get(word)
    if cached is not None:
        return cached
    result = _stem_uncached(word)
    if len(_STEM_CACHE) >= _CACHE_LIMIT:
        _STEM_CACHE.clear()
    _STEM_CACHE[word] = result
    return result
