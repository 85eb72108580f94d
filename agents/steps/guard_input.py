"""Refuse a question that is too long, carries personal data or tries to instruct the model."""

from __future__ import annotations

from dataclasses import dataclass, replace

from agents.steps.state import AnswerState


@dataclass(frozen=True)
class GuardInput:
    name: str = "guard_input"

    def run(self, state: AnswerState) -> AnswerState:
        from django.conf import settings

        from agents import guardrails

        decision = guardrails.check_question(state.question, max_chars=settings.ATHENA_MAX_QUESTION_CHARS)
        if decision.allowed:
            return state
        return replace(
            state,
            answer=decision.message,
            verdict="blocked",
            guard={"code": decision.code, "details": list(decision.details)},
        )

    def describe(self, state: AnswerState) -> str:
        return str(state.guard.get("code", "ok"))
