"""Enumeration detection on abstentions: a user whose questions keep ending abstained (many distinct ones in a
window, ATHENA_ENUMERATION_ABSTENTIONS / ATHENA_ENUMERATION_WINDOW_SECONDS) gets an audited enumeration alert
and is paused. The real answering service, in-process, over a corpus with a restricted document."""

from __future__ import annotations

from pathlib import Path

import pytest

from audit.models import AuditEvent
from knowledge.services import IngestOptions, files_ingest, folder_scan
from tests.api import client_for, make_user
from tests.knowledge.conftest import write_docs

pytestmark = [pytest.mark.integration, pytest.mark.slow, pytest.mark.django_db]

LIMIT = 3


@pytest.fixture()
def corpus(tmp_path: Path, settings):  # type: ignore[no-untyped-def]
    settings.ATHENA_ENUMERATION_ABSTENTIONS = LIMIT
    settings.ATHENA_ENUMERATION_WINDOW_SECONDS = 600
    for name, docs, options in (
        (
            "public",
            {
                "vpn.md": "# VPN access\n\nConnect with the corporate VPN client and approve the push prompt.\n",
                "dns.md": "# DNS failover\n\nPromote the secondary resolver with rndc reload.\n",
            },
            {},
        ),
        (
            "restricted",
            {
                "merger.md": "# Project Quorvex\n\nQuorvex is the codename of the pending acquisition of Zentrika.\n"
            },
            {"access_tier": "restricted", "acl_groups": ("board",)},
        ),
    ):
        root = write_docs(tmp_path / name, docs)
        files = [(rel, str(p)) for rel, p in folder_scan(root)]
        assert files_ingest(root=str(root), files=files, options=IngestOptions(**options)).failed == 0


def _probe(client, questions: list[str]) -> list[int]:  # type: ignore[no-untyped-def]
    codes = []
    for question in questions:
        response = client.post("/api/v1/ask", {"question": question}, format="json")
        codes.append(response.status_code)
        if response.status_code == 200:
            body = response.json()
            assert body["abstained"] and body["verdict"] == "abstained", body
            assert "unreadable" not in response.content.decode()  # the detector's input is never shown
    return codes


def test_many_abstained_questions_raise_an_alert_and_pause_the_user(corpus, mailoutbox) -> None:  # type: ignore[no-untyped-def]
    probes = [
        # longer than a vague question (which gets a clarifying question instead of an abstention)
        "When exactly does the Quorvex acquisition close for the finance team this year?",
        "Who on the board approved the Quorvex acquisition and when was it signed?",
        "What is the total budget of the Quorvex deal including the integration costs?",
        "Is the Zentrika subsidiary part of the Quorvex deal or a separate transaction?",
        "Which engineering team runs the Quorvex integration of the Zentrika network?",
    ]
    mallory = client_for(make_user("mallory", "employees"))
    # the same question asked again is one question
    assert _probe(mallory, [probes[0]] * (LIMIT + 2)) == [200] * (LIMIT + 2)
    assert not AuditEvent.objects.filter(kind="enumeration_alert").exists()

    assert _probe(mallory, probes) == [200] * (LIMIT + 1) + [429]
    (alert,) = AuditEvent.objects.filter(kind="enumeration_alert", actor="mallory")
    assert alert.verdict == "blocked"
    assert alert.payload["distinct_abstained_questions"] == LIMIT + 1
    # compliance learns that the questions named what only restricted documents hold
    assert alert.payload["matched_unreadable_documents"] == LIMIT + 1
    assert len(mailoutbox) == 1 and "mallory" in mailoutbox[0].subject


def test_the_pause_comes_as_soon_for_topics_no_document_holds(corpus) -> None:  # type: ignore[no-untyped-def]
    """A pause that came sooner for probes of restricted topics would itself say they exist."""
    probes = [
        f"What is the Vextranol {word} procedure for the core routers during a change freeze?"
        for word in ("alpha", "bravo", "charlie", "delta", "echo")
    ]
    assert _probe(client_for(make_user("nora", "employees")), probes) == [200] * (LIMIT + 1) + [429]
    (alert,) = AuditEvent.objects.filter(kind="enumeration_alert", actor="nora")
    assert alert.payload["matched_unreadable_documents"] == 0


def test_the_counters_keep_no_hash_of_a_question_that_a_guess_could_confirm(corpus, redis_client) -> None:  # type: ignore[no-untyped-def]
    """The abstention counter keeps a digest of each question in Redis to count distinct ones. A plain SHA-256
    of the question let whoever reads Redis (or its append-only file) confirm a guessed question, and the
    digest's flag says whether it matched only documents the asker may not read: it is keyed now."""
    import hashlib

    from athena.throttling import key_prefix

    question = "When exactly does the Quorvex acquisition close for the finance team this year?"
    user = make_user("oscar", "employees")
    assert _probe(client_for(user), [question]) == [200]
    members = [m.decode() for m in redis_client.zrange(f"{key_prefix()}:abstained:{user.pk}", 0, -1)]
    assert len(members) == 1, members
    guessed = hashlib.sha256(" ".join(question.lower().split()).encode()).hexdigest()[:16]
    assert not members[0].startswith(guessed), members
