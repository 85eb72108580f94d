"""British spellings mapped to American ones before stemming, at ingestion and at query time alike."""

from __future__ import annotations

import re

# British spellings, mapped to the American ones before stemming so that either finds both (vendor manuals mix
# them: the dev corpus has "synchronisation" 71 times and "synchronization" 24). -ise/-isation/-yse endings
# change only after a stem of four letters or more ("rise", "noise", "raise" stay); -our/-re words are listed,
# because "hour", "tour", "genre" or "acre" must not change. The same mapping runs at ingestion and at query
# time, so a word it changes needlessly ("otherwise" -> "otherwize") still matches itself.
_BRITISH_ENDING_RE = re.compile(r"^([a-z]{4,})(is|ys)(e|ed|es|ing|er|ers|ation|ations)$")
_BRITISH_OUR = frozenset(
    {
        "arbour",
        "armour",
        "behaviour",
        "clamour",
        "colour",
        "endeavour",
        "favour",
        "flavour",
        "harbour",
        "honour",
        "humour",
        "labour",
        "neighbour",
        "odour",
        "parlour",
        "rumour",
        "savour",
        "splendour",
        "vapour",
        "vigour",
    }
)
_BRITISH_WORDS = {
    **{
        f"{w}{end}": f"{w[:-2]}er{us}"
        for w in (
            "centre",
            "fibre",
            "metre",
            "litre",
            "theatre",
            "calibre",
            "lustre",
            "spectre",
            "sombre",
            "meagre",
        )
        for end, us in (("", ""), ("s", "s"), ("d", "ed"))
    },
    **{
        f"{w}{end}": f"{w[:-2]}se{end}"
        for w in ("licence", "defence", "offence", "pretence")
        for end in ("", "s")
    },
    **{f"{w}{end}": f"{w[:-2]}{end}" for w in ("catalogue", "dialogue", "analogue") for end in ("", "s")},
    "grey": "gray",
    "programme": "program",
    "programmes": "programs",
}


def american(word: str) -> str:
    """The American spelling of a lower-case British one ("synchronised" -> "synchronized", "neighbours" ->
    "neighbors"); other words unchanged."""
    mapped = _BRITISH_WORDS.get(word)
    if mapped is not None:
        return mapped
    ending = _BRITISH_ENDING_RE.match(word)
    if ending is not None:
        return f"{ending.group(1)}{ending.group(2)[0]}z{ending.group(3)}"
    if "our" in word:
        for root in _BRITISH_OUR:
            if word.startswith(root):
                return f"{root[:-2]}r{word[len(root) :]}"
    return word
