"""A follow-up ("and how do I roll it back?") is rewritten with the conversation's earlier turns."""

from __future__ import annotations

from dataclasses import dataclass, replace

from agents.steps.state import AnswerState


@dataclass(frozen=True)
class RewriteFollowUp:
    name: str = "follow_up_rewrite"

    def run(self, state: AnswerState) -> AnswerState:
        from agents.memory import rewrite_follow_up

        rewritten, _details = rewrite_follow_up(state.question, list(state.history))
        return replace(state, rewritten=rewritten)

    def describe(self, state: AnswerState) -> str:
        return "rewritten" if state.rewritten != state.question else "standalone"
