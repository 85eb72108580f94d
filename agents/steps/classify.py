"""The answer template (procedure, concept, comparison, parameter, troubleshooting) and the hop kind."""

from __future__ import annotations

from dataclasses import dataclass, replace

from agents.steps.state import AnswerState


@dataclass(frozen=True)
class Classify:
    name: str = "classify"

    def run(self, state: AnswerState) -> AnswerState:
        from agents import classify

        return replace(state, classification=classify.classify(state.rewritten))

    def describe(self, state: AnswerState) -> str:
        c = state.classification
        return f"{c.template}/{c.hop} ({c.confidence:.2f})" if c else "none"
