"""A multi-hop or comparison question becomes two or three sub-questions, retrieved concurrently."""

from __future__ import annotations

from dataclasses import dataclass, replace

from agents.steps.state import AnswerState

MAX_SUB_QUESTIONS = 3


@dataclass(frozen=True)
class Decompose:
    name: str = "decompose"

    def run(self, state: AnswerState) -> AnswerState:
        from agents import classify

        subs = [state.rewritten]
        if state.classification and (state.hop == "multi_hop" or state.template == "comparison_decision"):
            subs = classify.decompose(state.rewritten, state.classification)
        subs = [s for s in subs if s.strip()][:MAX_SUB_QUESTIONS] or [state.rewritten]
        return replace(state, sub_questions=tuple(subs))

    def describe(self, state: AnswerState) -> str:
        return f"{len(state.sub_questions)} sub-question(s)"
