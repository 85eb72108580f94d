"""Porter stemming of one lower-case word (after the British-to-American spelling map), by PyStemmer."""

from __future__ import annotations

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


def _stemmer() -> Stemmer.Stemmer:
    stemmer = getattr(_LOCAL, "stemmer", None)
    if stemmer is None:
        stemmer = _LOCAL.stemmer = Stemmer.Stemmer(ALGORITHM, 0)
    return stemmer


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
    result = (
        _stemmer().stemWord(american(word)) if len(word) > 2 and word.isascii() and word.isalpha() else word
    )
    if len(_STEM_CACHE) >= _CACHE_LIMIT:
        _STEM_CACHE.clear()
    _STEM_CACHE[word] = result
    return result
