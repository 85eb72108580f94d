"""A follow-up ("and how do I roll it back?") is rewritten with the conversation's earlier turns; a greeting or
thanks around the question is left out of what is searched, and so is the asker's own context around it (a
ticket number, a numbered host, an environment: agents/steps/context.py)."""

from __future__ import annotations

import re
from dataclasses import dataclass, replace

from agents.steps.state import AnswerState

# What people put around a question in a chat ("hi, ...", "quick q: ...", "... thanks!", "... pls?"). Searched
# with it, "hi", "thanks" and "pls" were terms no evidence holds and moved the question's embedding, and the
# same question was answered bare but abstained on with a greeting (or the other way round).
# A greeting is taken off only with punctuation or a spaced dash after it ("hello," "hi team - "), or, for the
# words that name nothing in a network's documents, a space ("hi what is ..."): "hello" alone opens "Hello
# interval on OSPF?". An aside ("quick q:") needs its punctuation too, and a bare "q" a colon ("Q-in-Q").
_GREETING = r"(?:hi|hey|hello|hiya|howdy|good\s+(?:morning|afternoon|evening))(?:\s+(?:all|there|team|folks|guys|everyone))?"
_BARE_GREETING = r"(?:hi|hey|hiya|howdy)"
_SEPARATOR = r"(?:\s*[,!.:;]+\s*|\s+[-\u2013\u2014]+\s+|\s*[\u2013\u2014]+\s*)"
_ASIDE = r"(?:(?:a\s+)?(?:quick|short|simple|small|dumb|silly|newbie)\s+(?:q|qn|question|one){sep}|(?:q|question)\s*:\s*)"
_OPENING = re.compile(
    rf"^\s*(?:{_GREETING}{_SEPARATOR}|{_BARE_GREETING}\s+)?"
    + _ASIDE.format(sep=_SEPARATOR)
    + r"?(?:(?:please|pls|plz)\s*,?\s+)?",
    re.IGNORECASE,
)
_THANKS = r"(?:thanks|thank\s+you|thx|thnx|ty|tia|cheers|please|pls|plz)"
_CLOSING = re.compile(
    rf"(?:\s*[,!.:;\u2013\u2014-])*\s*\b{_THANKS}(?:\s+(?:a\s+lot|so\s+much|very\s+much|in\s+advance|all|team|guys|everyone))?"
    rf"[\s!.]*(\?*)\s*$",
    re.IGNORECASE,
)
# a reply that says nothing but thanks or a greeting ("ok thanks", "great, thanks!", "cheers", "hi")
_COURTESY_ONLY = re.compile(
    rf"^\s*(?:(?:ok|okay|great|cool|nice|perfect|got\s+it|awesome|{_THANKS}|{_GREETING})[\s,!.:;]*)+$",
    re.IGNORECASE,
)


def without_courtesy(question: str) -> str:
    """`question` without a greeting or an aside before it ("hi, ", "hey team - ", "quick q: ", "please ") and
    without thanks or a "please" after it ("? thanks!", " pls?" keeps its "?"); `question` itself (stripped)
    when that would leave fewer than two words."""
    text = _OPENING.sub("", question.strip(), count=1)
    while True:
        shorter = _CLOSING.sub(r"\1", text, count=1)
        if shorter == text:
            break
        text = shorter
    text = text.strip()
    return text if len(text.split()) >= 2 else question.strip()


def courtesy_only(question: str) -> bool:
    """Whether `question` says nothing but thanks, a greeting or an acknowledgement ("ok thanks", "cheers")."""
    return bool(_COURTESY_ONLY.match(question))


@dataclass(frozen=True)
class RewriteFollowUp:
    name: str = "follow_up_rewrite"

    def run(self, state: AnswerState) -> AnswerState:
        from agents.memory import rewrite_follow_up
        from agents.steps.context import without_own_context, without_pasted_lines

        asked = without_own_context(without_pasted_lines(without_courtesy(state.question)), state.principal)
        if courtesy_only(asked):
            # "thanks!" after an answer asks nothing of the previous question: joined, it was searched as that
            # question again, re-ordered by "thanks", and remembered so for the next follow-up
            return replace(state, asked=asked, follow_up=False, rewritten=asked)
        rewritten, details = rewrite_follow_up(asked, list(state.history))
        return replace(state, asked=asked, follow_up=bool(details.get("follow_up")), rewritten=rewritten)

    def describe(self, state: AnswerState) -> str:
        return "rewritten" if state.follow_up else "standalone"
