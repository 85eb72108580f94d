"""PII detection and masking through the guardrails (Presidio with the offline spaCy model, slow to load).

The question gate's other refusals and the output guard: tests/agents/test_guardrails.py.
"""

from __future__ import annotations

import logging
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from agents.guardrails import (
    PII_ENTITIES,
    REFUSED_PII_ENTITIES,
    PiiFinding,
    check_question,
    detect_pii,
    mask_pii,
)

pytestmark = [pytest.mark.slow]

REPO_ROOT = Path(__file__).resolve().parents[2]

SSN = "536-22-1234"
VISA = "4111 1111 1111 1111"
IBAN = "DE89 3704 0044 0532 0130 00"


def _entities(text: str) -> list[str]:
    return [f.entity for f in detect_pii(text)]


def test_pii_entities_exclude_ip_addresses() -> None:
    assert "IP_ADDRESS" not in PII_ENTITIES
    assert {"US_SSN", "CREDIT_CARD", "IBAN_CODE", "US_PASSPORT"} <= REFUSED_PII_ENTITIES
    assert _entities("bgp neighbor 192.168.100.200 remote-as 65001; ping 10.0.0.1 and 2001:db8::1") == []
    # prefixes and address:port pairs in configuration lines are not phone numbers either
    assert _entities("peers. accept 192.168.1.0/24 Each accept line with no given prefix") == []
    assert _entities("target 10.20.30.40:514 over tcp") == []


@pytest.mark.parametrize(
    ("text", "entity"),
    [
        (f"my ssn is {SSN}", "US_SSN"),
        (f"card {VISA} was charged", "CREDIT_CARD"),
        ("amex 3782 822463 10005", "CREDIT_CARD"),
        (f"wire it to {IBAN}", "IBAN_CODE"),
        ("my passport number is 912803456", "US_PASSPORT"),
        ("NHS number 943 476 5919", "UK_NHS"),
        ("mail ops@example.com about the outage", "EMAIL_ADDRESS"),
        ("call the NOC on +44 20 7946 0958", "PHONE_NUMBER"),
    ],
)
def test_detect_pii_finds_entities(text: str, entity: str) -> None:
    findings = detect_pii(text)
    assert [f.entity for f in findings] == [entity]
    finding = findings[0]
    assert isinstance(finding, PiiFinding) and 0 < finding.score <= 1
    assert text[finding.start : finding.end].strip()


@pytest.mark.parametrize(
    "text",
    [
        "open port 4111 on the firewall",
        "serial 4111111111111111 on the chassis label",  # Luhn-valid, but a serial number
        "card 4111 1111 1111 1112 declined",  # fails Luhn
        "the device serial is 1234567812345678",
        "IBAN DE89 3704 0044 0532 0130 01",  # bad checksum
        "version 2.4.6 and RFC 5424 with AS 65000, timestamp 1712345678",
        "uuid 550e8400-e29b-41d4-a716-446655440000",
        "snmp object 1.3.6.1.2.1.1.3.0 and ifIndex 1234567",
        "mac 00:1a:2b:3c:4d:5e on vlan 100-200, mtu 9000",
        "ticket INC0012345678 and pid 1234567",
        "the number 943 476 5919 appears in the log",  # NHS checksum-valid but no health context
        "2024-03-15 10:22:33 kernel: eth0 link down",
    ],
)
def test_detect_pii_ignores_technical_numbers(text: str) -> None:
    refused = [e for e in _entities(text) if e in REFUSED_PII_ENTITIES]
    assert refused == []


def test_check_question_refuses_pii_and_names_the_kind_only() -> None:
    decision = check_question(f"my ssn is {SSN} and card {VISA}, why is my VPN locked?")
    assert not decision.allowed and decision.code == "pii"
    assert set(decision.details) == {"US_SSN", "CREDIT_CARD"}
    assert "Social Security" in decision.message and "card" in decision.message
    assert SSN not in decision.message and "4111" not in decision.message


def test_check_question_allows_email_and_phone() -> None:
    decision = check_question(
        "why do mails from alerts@example.com bounce? the NOC number is +44 20 7946 0958"
    )
    assert decision.allowed and decision.code == "ok"


def test_pii_values_are_never_logged(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.DEBUG):
        check_question(f"my ssn is {SSN}")
        mask_pii(f"contact jane.doe@example.com or card {VISA}")
    assert SSN not in caplog.text and "jane.doe" not in caplog.text and "4111" not in caplog.text


def test_mask_pii() -> None:
    masked, kinds = mask_pii(
        f"Contact ops@example.com or +44 20 7946 0958. Card {VISA}, SSN {SSN}, IBAN {IBAN}. Router 10.0.0.1 port 514."
    )
    assert masked == (
        "Contact [REDACTED EMAIL] or [REDACTED PHONE]. Card [REDACTED CARD], SSN [REDACTED SSN], "
        "IBAN [REDACTED IBAN]. Router 10.0.0.1 port 514."
    )
    assert kinds == ["EMAIL_ADDRESS", "PHONE_NUMBER", "CREDIT_CARD", "US_SSN", "IBAN_CODE"]
    assert mask_pii("no personal data here, just ntp on udp/123") == (
        "no personal data here, just ntp on udp/123",
        [],
    )


def test_pii_analyzer_builds_and_runs_without_network() -> None:
    # A fresh interpreter with every socket connection refused: building the analyzer and validating an
    # e-mail address (tldextract's public-suffix lookup) must work from local data and must not hang.
    script = textwrap.dedent(
        """
        import socket

        def refuse(*args, **kwargs):
            raise OSError("network disabled in test")

        socket.socket.connect = refuse
        socket.socket.connect_ex = refuse
        socket.create_connection = refuse
        socket.getaddrinfo = refuse

        from screening.pii import detect_pii, warm_up
        warm_up()
        print(sorted({f.entity for f in detect_pii("mail ops@example.co.uk, ssn 536-22-1234")}))
        """
    )
    result = subprocess.run(
        [sys.executable, "-c", script],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        env={"PYTHONPATH": str(REPO_ROOT), "HF_HUB_OFFLINE": "1", "PATH": "/usr/bin:/bin"},
    )
    assert result.returncode == 0, result.stderr[-2000:]
    assert "['EMAIL_ADDRESS', 'US_SSN']" in result.stdout


def test_the_screening_runs_no_spacy_pipe_that_no_recogniser_reads():
    """The recognisers match patterns and read the lemmas around a match: the named-entity and parser pipes
    cost two thirds of a passage's screening and feed nothing, so they are off; what is masked stays the same."""
    from screening.pii import UNUSED_SPACY_PIPES, get_analyzer

    for model in get_analyzer().nlp_engine.nlp.values():
        assert not set(UNUSED_SPACY_PIPES) & set(model.pipe_names)
        assert {"tagger", "lemmatizer"} <= set(model.pipe_names)
    assert "CREDIT_CARD" in mask_pii(f"Charge the corporate card {VISA} for the renewal.")[1]
    assert mask_pii(f"Phone the desk on +1 415 555 0132 or mail ops@example.com; SSN {SSN}.")[1] == [
        "PHONE_NUMBER",
        "EMAIL_ADDRESS",
        "US_SSN",
    ]
    assert mask_pii("Upgrade to version 4.12.1-3 on port 8443 before 2026-12-01.")[1] == []


def test_text_that_no_recogniser_pattern_matches_skips_the_analyzer_with_the_same_findings(monkeypatch):
    """`may_hold_pii` lets text with digits but no recogniser match (versions, ports, dates, addresses) skip
    the spaCy pass. The skip must never lose a finding: on each text below the guard finds exactly what the
    full analyzer finds, and the analyzer is not called where the pre-check says no."""
    import screening.pii as pii

    texts = [
        f"my ssn is {SSN}",
        f"card {VISA} was charged",
        f"wire it to {IBAN}",
        "my passport number is 912803456",
        "NHS number 943 476 5919",
        "mail ops@example.com about the outage",
        "call the NOC on +44 20 7946 0958",
        "Phone the desk on (415) 555-0132 after 18:00.",
        "Upgrade to version 4.12.1-3 on port 8443 before 2026-12-01.",
        "bgp neighbor 192.168.100.200 remote-as 65001; keepalive 30, hold time 90",
        "ListenAddress 0.0.0.0:2222 and MaxStartups 12:40:90 in sshd_config",
        "lbctl shaper put dev port0 root jitter delay 100ms 10ms 25% loss 0.3%",
        "the number 943 476 5919 appears in the log",
        "tidesync stepclock 1.0 3 and maxlag 16.0",
    ]
    for text in texts:
        assert pii.detect_pii(text) == pii.analyze_pii(text), text

    calls = []
    monkeypatch.setattr(pii, "analyze_pii", lambda text: calls.append(text) or [])
    for text in texts[8:12]:
        assert not pii.may_hold_pii(text), text
        assert pii.detect_pii(text) == []
    assert calls == []
    for text in texts[:8]:
        assert pii.may_hold_pii(text), text
