"""Every guard that runs on document or user text stays linear on adversarial input.

Each guard (and each injection pattern on its own) gets 100 kB strings built to make a backtracking engine
retry: long runs of separators, a marker repeated with the separators the patterns accept, the openings of
the multi-part patterns with no ending. The limit is a complexity bound, not a speed target: a quadratic
or exponential pattern takes seconds to hours on these inputs, a linear one a few milliseconds (up to about
120 ms on two loaded shared cores), so the best of three runs must stay under 500 ms of CPU time.
"""

from __future__ import annotations

import time
from collections.abc import Callable

import pytest

from agents import guardrails
from screening import pii
from screening.injection_patterns import PATTERNS, text_views, trigger_words_present

pytestmark = [pytest.mark.unit]

SIZE = 100_000
LIMIT_SECONDS = 0.500

SEEDS = {
    "marker_dash": "CONFIDENTIAL - ",
    "marker_lower": "confidential - ",
    "marker_bracket": "[ confidential ",
    "marker_slash": "TOP SECRET//",
    "marker_prefixes": "STRICTLY COMPANY PROPRIETARY AND ",
    "decor": "*_=#~|<>[](){}:.-/\\!",
    "spaces": " ",
    "tabs_then_text": " \t",
    "newlines": "\n",
    "letters": "a",
    "ignore": "ignore all the previous ",
    "override": "ignore the previous instructions and ",
    "system_prompt": "system prompt ",
    "html_comment": "<!-- you must ",
    "markdown_comment": '[//]: # "',
    "leet": "1gn0r3 ",
    "spaced": "a b ",
    "base64": "QUJD",
    "hex": "0a ",
    "escaped_hex": "\\x41",
    "url_escape": "%41",
    "entities": "&#65;",
    "digits": "4111 ",
    "digit_run": "1",
    "letter_digit": "a1",
    "phone": "+1 (555) ",
}


def adversarial(seed: str) -> str:
    """`seed` repeated to SIZE characters and an ending no pattern expects."""
    return (seed * (SIZE // len(seed) + 1))[:SIZE] + "\u00a7x"


def best_of_three(guard: Callable[[str], object], text: str) -> float:
    """CPU seconds of the fastest of up to three runs (CPU time, not wall time: other processes on a busy
    machine must not make a linear guard look slow)."""
    best = float("inf")
    for _ in range(3):
        started = time.process_time()
        guard(text)
        best = min(best, time.process_time() - started)
        if best < LIMIT_SECONDS:
            break  # one run under the bound is enough; re-runs only absorb a busy machine
    return best


@pytest.mark.parametrize("seed", sorted(SEEDS))
def test_output_guard_is_linear(seed: str) -> None:
    text = adversarial(SEEDS[seed])
    seconds = best_of_three(guardrails.strip_confidential_markings, text)
    assert seconds < LIMIT_SECONDS, f"strip_confidential_markings took {seconds:.3f}s on {seed!r}"


def test_marker_repeats_are_stripped_completely() -> None:
    # the input that hung a worker (0.8 s at 8 repeats, x4 per repeat) is cleaned, not just survived
    cleaned, changed = guardrails.strip_confidential_markings(
        "CONFIDENTIAL - " * 40 + "the key rotates daily"
    )
    assert changed and cleaned == "the key rotates daily"


@pytest.mark.parametrize("pattern", PATTERNS, ids=[p.name for p in PATTERNS])
def test_each_injection_pattern_is_linear(pattern) -> None:  # type: ignore[no-untyped-def]
    for seed, unit in SEEDS.items():
        text = adversarial(unit)
        seconds = best_of_three(pattern.matches, text)
        assert seconds < LIMIT_SECONDS, f"{pattern.name} took {seconds:.3f}s on {seed!r}"


@pytest.mark.parametrize(
    "name, helper",
    [
        ("trigger_words_present", trigger_words_present),
        ("text_views", text_views),
        ("card_context", pii.CARD_CONTEXT_RE.search),
        ("phone_context", pii.PHONE_CONTEXT_RE.search),
        ("nhs_context", pii.NHS_CONTEXT_RE.search),
        ("serial_context", pii.SERIAL_CONTEXT_RE.search),
        ("phone_blocklist", pii.PHONE_BLOCKLIST_BEFORE_RE.search),
        ("formatted_digits", pii.FORMATTED_DIGITS_RE.search),
    ],
)
def test_guard_helpers_are_linear(name: str, helper: Callable[[str], object]) -> None:
    for seed, unit in SEEDS.items():
        seconds = best_of_three(helper, adversarial(unit))
        assert seconds < LIMIT_SECONDS, f"{name} took {seconds:.3f}s on {seed!r}"


@pytest.mark.parametrize("seed", ["override", "leet", "html_comment", "newlines"])
def test_whole_injection_scan_grows_linearly(seed: str) -> None:
    # The whole scan runs ~120 patterns over up to eight renderings of the text, so 100 kB costs a few
    # hundred milliseconds even when linear (its real inputs are bounded: questions by the 1,000-character
    # limit checked first, chunks by the chunker). What must hold is the growth: x4 input, about x4 time
    # (quadratic would be x16).
    unit = SEEDS[seed]
    small = best_of_three(guardrails.injection_score, (unit * SIZE)[: SIZE // 4])
    large = min(best_of_three(guardrails.injection_score, (unit * SIZE)[:SIZE]) for _ in range(2))
    assert large < 8 * small + 0.05, f"{seed}: {small:.3f}s at 25 kB, {large:.3f}s at 100 kB"
