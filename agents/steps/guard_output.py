"""The output guard: personal data masked, confidential markings removed, a leaked system prompt refused."""

from __future__ import annotations

from dataclasses import dataclass, replace

from agents.steps.state import ABSTAIN_MESSAGE, AnswerState


@dataclass(frozen=True)
class GuardOutput:
    name: str = "guard_output"

    def run(self, state: AnswerState) -> AnswerState:
        from agents import guardrails
        from agents.llm import SYSTEM_PROMPT

        answer, masked = guardrails.mask_pii(state.answer)
        answer, marked = guardrails.strip_confidential_markings(answer)
        guard = {**state.guard, "output_masked": masked, "confidential_marking": marked}
        if guardrails.leaks_system_prompt(answer, SYSTEM_PROMPT):
            return replace(state, guard={**guard, "system_prompt_leak": True}, citations=()).abstained(
                ABSTAIN_MESSAGE
            )
        return replace(state, answer=answer, guard=guard, verdict="answered")

    def describe(self, state: AnswerState) -> str:
        if state.guard.get("system_prompt_leak"):
            return "system prompt leak blocked"
        parts = [
            f"masked {len(state.guard['output_masked'])}" if state.guard.get("output_masked") else "clean"
        ]
        if state.guard.get("confidential_marking"):
            parts.append("confidential marking removed")
        return ", ".join(parts)
