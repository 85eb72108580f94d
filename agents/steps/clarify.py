"""Ask back instead of answering a short, unspecific question the classifier finds ambiguous."""

from __future__ import annotations

from dataclasses import dataclass, replace

from agents.steps.state import AnswerState
from knowledge.text import identifiers

VAGUE_WORDS = 8  # a longer question, or one naming an identifier, is answerable or abstainable on its own


@dataclass(frozen=True)
class Clarify:
    name: str = "clarify"

    def run(self, state: AnswerState) -> AnswerState:
        from agents import classify

        # read without a greeting or thanks around it ("hi, ..."), as the follow-up step read it
        asked = state.asked or state.question
        vague = len(asked.split()) <= VAGUE_WORDS and not identifiers(asked)
        # a follow-up joined to the turn before it (RewriteFollowUp) takes its subject from there; a question
        # asked as it stands in a conversation is as vague as the first one of it
        if state.hop == "ambiguous" and vague and not state.follow_up:
            return replace(state, answer=classify.clarifying_question(state.question), verdict="clarify")
        return state

    def describe(self, state: AnswerState) -> str:
        return "asked a clarifying question" if state.verdict == "clarify" else "not needed"
