"""The answering pipeline as a tuple of typed steps over a frozen state (agents/steps/state.py).

guard input -> follow-up rewrite (memory) -> classify -> clarify -> decompose -> retrieve (sub-questions
concurrently) -> evaluate evidence (neighbour expansion, sentence scoring) -> decide (learned selector and
calibrated abstention, one reformulation) -> generate (LLM or extractive) and verify attribution -> compose
(shaped answer, citations, notes) -> guard output.
"""

from __future__ import annotations

from agents.steps.clarify import Clarify
from agents.steps.classify import Classify
from agents.steps.compose import Compose
from agents.steps.decide import Decide
from agents.steps.decompose import Decompose
from agents.steps.evaluate import EvaluateEvidence
from agents.steps.generate import Generate
from agents.steps.guard_input import GuardInput
from agents.steps.guard_output import GuardOutput
from agents.steps.retrieve import Retrieve
from agents.steps.rewrite import RewriteFollowUp
from agents.steps.state import AnswerState, Step, run_steps

ANSWERING: tuple[Step, ...] = (
    GuardInput(),
    RewriteFollowUp(),
    Classify(),
    Clarify(),
    Decompose(),
    Retrieve(),
    EvaluateEvidence(),
    Decide(),
    Generate(),
    Compose(),
    GuardOutput(),
)

__all__ = ["ANSWERING", "AnswerState", "Step", "run_steps"]
