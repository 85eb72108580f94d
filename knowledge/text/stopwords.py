"""Word lists of the analyser: English stopwords (dropped from the word lane) and interrogatives (dropped
from questions)."""

from __future__ import annotations


def word_set(text: str) -> frozenset[str]:
    """The words of a whitespace-separated list (such lists read better than 150 quoted literals)."""
    return frozenset(text.split())


# Compact English stopword list. Deliberately NOT stopwords because they change the meaning of technical
# text: no/not (``no shutdown``), on/off/up/down (states), all/any/none, before/after/between, only,
# show/set/get (commands), default.
STOPWORDS: frozenset[str] = word_set(
    """
    a an the and or but if then else than so nor of to in into onto for with within without by from at as
    about via per is are was were be been being am it its itself this that these those there here
    do does did doing have has had having i me my myself we our ours us you your yours yourself he him his
    she her hers they them their theirs themselves what which who whom whose when where why how whether
    can could would should will shall may might must also just very too such same own each other both few
    more most some again further once while during until
    s t d ll m re ve eg ie etc vs cf
    dont doesnt didnt isnt arent wasnt werent cant couldnt wouldnt shouldnt wont hasnt havent hadnt
    """
)

# Interrogatives dropped from questions. They are stopwords already; kept as a named set so query_terms
# states its intent and stays correct if the stopword list is ever trimmed.
QUESTION_WORDS: frozenset[str] = word_set("what which who whom whose when where why how whether whats hows")
