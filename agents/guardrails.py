"""Input and output guardrails for the answering pipeline: prompt injection, PII, confidential markings.

* ``check_question`` is the single entry point for user input (length, PII, prompt injection).
* ``leaks_system_prompt`` guards generated output.
* The screening itself lives in the :mod:`screening` package, below knowledge, because ingestion screens
  document chunks with the same code; its public names are re-exported here: ``detect_injection`` /
  ``looks_like_injection`` / ``injection_score`` (:mod:`screening.injection`), ``detect_pii`` /
  ``mask_pii`` / ``warm_up`` (:mod:`screening.pii`), ``strip_confidential_markings`` /
  ``guard_quoted_text`` (:mod:`screening.markings`).

No Django imports: this module is a pure library so the web process and the workers can share it, and
it never logs the PII values it finds.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from screening.injection import InjectionVerdict, detect_injection, injection_score, looks_like_injection
from screening.markings import guard_quoted_text, strip_confidential_markings
from screening.pii import (
    PII_ENTITIES,
    REFUSED_PII_ENTITIES,
    SPACY_MODEL,
    PiiFinding,
    describe_pii,
    detect_pii,
    get_analyzer,
    mask_pii,
    warm_up,
)

__all__ = [
    "InjectionVerdict",
    "PiiFinding",
    "GuardDecision",
    "PII_ENTITIES",
    "REFUSED_PII_ENTITIES",
    "SPACY_MODEL",
    "detect_injection",
    "looks_like_injection",
    "injection_score",
    "detect_pii",
    "get_analyzer",
    "warm_up",
    "mask_pii",
    "strip_confidential_markings",
    "guard_quoted_text",
    "leaks_system_prompt",
    "check_question",
]


def _words(text: str) -> list[str]:
    # Python's engine on purpose: Unicode word characters (RE2's \w is ASCII); a lone greedy class cannot
    # backtrack, so this is linear too.
    return _WORD_RE.findall(text.lower())


_WORD_RE = re.compile(r"\w+")


def leaks_system_prompt(text: str, system_prompt: str, *, min_words: int = 10) -> bool:
    """True when ``text`` repeats a long verbatim run of ``system_prompt``.

    Args:
        text: generated output.
        system_prompt: the prompt that must not leak.
        min_words: length of the shared word run that counts as a leak (case and punctuation ignored).

    Returns:
        Whether any ``min_words``-word sequence of the prompt appears in the output; for prompts shorter
        than that, whether the whole prompt (at least 20 characters) appears.
    """
    if not text or not system_prompt:
        return False
    prompt_words = _words(system_prompt)
    text_words = _words(text)
    if len(prompt_words) < min_words:
        joined_prompt = " ".join(prompt_words)
        return len(joined_prompt) >= 20 and joined_prompt in " ".join(text_words)
    shingles = {tuple(prompt_words[i : i + min_words]) for i in range(len(prompt_words) - min_words + 1)}
    return any(
        tuple(text_words[i : i + min_words]) in shingles for i in range(len(text_words) - min_words + 1)
    )


# ---------------------------------------------------------------------------------------------------------
# Question gate
# ---------------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class GuardDecision:
    """Outcome of the input guard: ``code`` is ``ok``, ``empty``, ``too_long``, ``pii`` or ``injection``."""

    allowed: bool
    code: str
    message: str
    details: tuple[str, ...] = ()


def check_question(text: str, *, max_chars: int = 1000) -> GuardDecision:
    """Decide whether a question may enter the pipeline.

    Args:
        text: the question as typed.
        max_chars: length limit (DESIGN §7: 1,000 characters).

    Returns:
        ``GuardDecision``. Refusals say why (the limit, which kind of personal data — never the value —,
        or that an injection attempt was blocked); ``details`` carries entity or pattern names for audit.
    """
    if text is None or not text.strip():
        return GuardDecision(False, "empty", "Please type a question.")
    if len(text) > max_chars:
        return GuardDecision(
            False,
            "too_long",
            f"Questions are limited to {max_chars:,} characters; yours has {len(text):,}. "
            "Please shorten it and ask again.",
            (f"length={len(text)}", f"limit={max_chars}"),
        )
    refused: list[str] = []
    for finding in detect_pii(text):
        if finding.entity in REFUSED_PII_ENTITIES and finding.entity not in refused:
            refused.append(finding.entity)
    if refused:
        return GuardDecision(
            False,
            "pii",
            f"Your question appears to contain {describe_pii(refused)}. Personal data must not be sent "
            "to the assistant; please remove it and ask again.",
            tuple(refused),
        )
    verdict = detect_injection(text)
    if verdict.flagged:
        return GuardDecision(
            False,
            "injection",
            "This question was blocked because it looks like an attempt to override the assistant's "
            "instructions or access controls (prompt injection). The attempt has been recorded. Please ask "
            "a question about the documentation instead.",
            verdict.matches,
        )
    return GuardDecision(True, "ok", "")
