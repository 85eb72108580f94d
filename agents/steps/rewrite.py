"""A follow-up ("and how do I roll it back?") is rewritten with the conversation's earlier turns; a greeting or
thanks around the question is left out of what is searched."""

from __future__ import annotations

import re
from dataclasses import dataclass, replace

from agents.steps.state import AnswerState

# What people put around a question in a chat ("hi, ...", "quick q: ...", "... thanks!", "... pls?"). Searched
# with it, "hi", "thanks" and "pls" were terms no evidence holds and moved the question's embedding, and the
# same question was answered bare but abstained on with a greeting (or the other way round).
_GREETING = r"(?:hi|hey|hello|hiya|howdy|good\s+(?:morning|afternoon|evening))(?:\s+(?:all|there|team|folks|guys|everyone))?"
_ASIDE = r"(?:(?:a\s+)?(?:quick|short|simple|small|dumb|silly|newbie)\s+(?:q|qn|question|one)|q|question)"
_PUNCT = r"[,!.:;\u2013\u2014-]"
_OPENING = re.compile(
    rf"^\s*(?:{_GREETING}(?:\s*{_PUNCT}+\s*|\s+))?(?:{_ASIDE}\s*{_PUNCT}+\s*)?(?:(?:please|pls|plz)\s*,?\s+)?",
    re.IGNORECASE,
)
_THANKS = r"(?:thanks|thank\s+you|thx|thnx|ty|tia|cheers|please|pls|plz)"
_CLOSING = re.compile(
    rf"(?:\s*{_PUNCT})*\s*\b{_THANKS}(?:\s+(?:a\s+lot|so\s+much|very\s+much|in\s+advance|all|team|guys|everyone))?"
    rf"[\s!.]*(\?*)\s*$",
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


@dataclass(frozen=True)
class RewriteFollowUp:
    name: str = "follow_up_rewrite"

    def run(self, state: AnswerState) -> AnswerState:
        from agents.memory import rewrite_follow_up

        asked = without_courtesy(state.question)
        rewritten, details = rewrite_follow_up(asked, list(state.history))
        return replace(state, asked=asked, follow_up=bool(details.get("follow_up")), rewritten=rewritten)

    def describe(self, state: AnswerState) -> str:
        return "rewritten" if state.follow_up else "standalone"
