"""Prompt-injection detection, the same library for user questions (``detect_injection``) and for
document chunks at ingestion (``looks_like_injection``, the stricter ingest-time variant). Patterns and text
views: :mod:`screening.injection_patterns`. No Django here."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from screening.injection_patterns import (
    PATTERNS,
    invisible_char_counts,
    mixed_script_words,
    text_views,
    trigger_words_present,
)

# A question is blocked, and a chunk flagged, when the summed weight of distinct matches reaches this.
_FLAG_THRESHOLD = 1.0
# Extra weight when a pattern only matched after de-obfuscation: hiding an instruction is itself a signal.
_OBFUSCATION_BONUS = 0.5


# ---------------------------------------------------------------------------------------------------------
# Prompt injection
# ---------------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class InjectionVerdict:
    """Result of an injection scan: ``flagged`` and the names of every pattern or heuristic that matched."""

    flagged: bool
    matches: tuple[str, ...]
    score: float = 0.0


@dataclass(frozen=True, slots=True)
class _Hit:
    name: str
    weight: float
    ingest_weight: float
    obfuscated: bool


_CLEAR_VIEWS = frozenset({"plain", "confusables"})


def _scan(text: str) -> list[_Hit]:
    """Match every pattern against every view of ``text``; one hit per pattern name (clear view preferred)."""
    hits: dict[str, _Hit] = {}
    for view in text_views(text):
        obfuscated = view.via not in _CLEAR_VIEWS
        present = trigger_words_present(view.text)
        for pattern in PATTERNS:
            known = hits.get(pattern.name)
            if known is not None and (obfuscated or not known.obfuscated):
                continue
            if pattern.may_match(present) and pattern.matches(view.text):
                hits[pattern.name] = _Hit(pattern.name, pattern.weight, pattern.ingest_weight, obfuscated)
    result = list(hits.values())
    result.extend(_heuristic_hits(text))
    return result


def _heuristic_hits(text: str) -> list[_Hit]:
    """Hidden-text signals that are about characters rather than words."""
    hits: list[_Hit] = []
    zero_width, bidi, tags = invisible_char_counts(text)
    if zero_width >= 1:
        # ZWJ/ZWNJ are legitimate in Indic and Persian scripts and ZWSP appears in scraped HTML, so at
        # ingest this only counts when dense; in a typed question there is no reason for them.
        hits.append(_Hit("hidden.zero_width_chars", 0.5, 0.25 if zero_width >= 3 else 0.0, False))
    if bidi:
        hits.append(_Hit("hidden.bidi_controls", 0.5, 0.0, False))
    # Emoji subdivision flags use 5-7 tag characters; a longer run carries smuggled ASCII.
    if tags >= 8:
        hits.append(_Hit("hidden.unicode_tag_chars", 1.0, 1.0, False))
    mixed = mixed_script_words(text)
    if mixed >= 2:
        # In mostly Cyrillic/Greek prose, mixed words are usually formatting debris or keyboard slips.
        latin = sum(1 for ch in text if "a" <= ch.lower() <= "z")
        native = sum(1 for ch in text if "\u0370" <= ch <= "\u04ff")
        hits.append(_Hit("hidden.homoglyph_mixed_script", 1.0, 0.25 if native > latin else 0.5, False))
    elif mixed == 1:
        hits.append(_Hit("hidden.homoglyph_mixed_script", 0.5, 0.0, False))
    return hits


def _score(hits: Iterable[_Hit], *, ingest: bool) -> float:
    total = 0.0
    obfuscated = False
    for hit in hits:
        weight = hit.ingest_weight if ingest else hit.weight
        total += weight
        obfuscated = obfuscated or (hit.obfuscated and weight > 0)
    return total + (_OBFUSCATION_BONUS if obfuscated else 0.0)


def _names(hits: Iterable[_Hit]) -> tuple[str, ...]:
    names: list[str] = []
    for hit in hits:
        names.append(f"{hit.name}[obfuscated]" if hit.obfuscated else hit.name)
    return tuple(sorted(names))


def injection_score(text: str, *, ingest: bool = False) -> float:
    """Summed weight of the injection patterns matching ``text``.

    Args:
        text: question or chunk text.
        ingest: use the document-chunk weights (stricter about what counts) instead of question weights.

    Returns:
        A score; ``>= 1.0`` means flagged.
    """
    return _score(_scan(text), ingest=ingest) if text else 0.0


def detect_injection(text: str) -> InjectionVerdict:
    """Scan a user question for prompt injection.

    Args:
        text: the question as typed (any language, possibly obfuscated or encoded).

    Returns:
        ``InjectionVerdict``: ``flagged`` when the matches add up to a block; ``matches`` lists the pattern
        and heuristic names that fired (suffixed ``[obfuscated]`` when found only after decoding), even
        when the total stays below the threshold, so traces can show near misses.
    """
    if not text or not text.strip():
        return InjectionVerdict(False, (), 0.0)
    hits = _scan(text)
    score = _score(hits, ingest=False)
    return InjectionVerdict(score >= _FLAG_THRESHOLD, _names(hits), round(score, 3))


def looks_like_injection(text: str) -> bool:
    """Ingest-time check: does a document chunk look like instructions aimed at a language model?

    Uses the ingest weights: phrases that documentation uses for humans ("ignore the previous line",
    "act as a relay", "override the default instructions in /etc/...") never count, and an override
    phrase alone ("disregard the above instructions") needs a second, model-directed cue to flag.

    Args:
        text: chunk text.

    Returns:
        True when the chunk should be flagged (kept, but never treated as instructions).
    """
    if not text or not text.strip():
        return False
    return _score(_scan(text), ingest=True) >= _FLAG_THRESHOLD
