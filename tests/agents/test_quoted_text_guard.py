"""The output guard covers every place that quotes the knowledge base, not only the answer text: the
`passages` and `citations[].quote` of an answer (and so what is stored and audited), and the citation viewer
`/api/v1/passages/<id>`."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agents.models import Answer
from agents.services import ask, quoted_text_guard
from audit.models import AuditEvent
from knowledge.models import Chunk
from knowledge.services import IngestOptions, files_ingest, folder_scan
from tests.api import client_for, make_user

pytestmark = [pytest.mark.integration, pytest.mark.slow]

EMAIL = "noc-oncall@example.com"
DOC = (
    "# Core router escalation\n\n"
    "CONFIDENTIAL - INTERNAL USE ONLY\n\n"
    "When the core router rtr-core-9 loses its BGP sessions, page the network on-call engineer at "
    f"{EMAIL} and open a P1 ticket in the incident queue. The on-call rotation changes every Monday.\n"
)


def _leaks(text: str) -> list[str]:
    return [marker for marker in (EMAIL, "CONFIDENTIAL", "INTERNAL USE ONLY") if marker in text]


def test_passages_and_quotes_are_guarded() -> None:
    result = {
        "passages": [DOC, "plain text"],
        "citations": [{"ref": 1, "quote": f"page {EMAIL} now"}, {"ref": 2, "quote": ""}],
        "guard": {"output_masked": []},
    }
    guarded = quoted_text_guard(result)
    assert not _leaks(json.dumps(guarded))
    assert "[REDACTED EMAIL]" in guarded["passages"][0] and guarded["passages"][1] == "plain text"
    assert guarded["citations"][0]["quote"] == "page [REDACTED EMAIL] now"
    assert guarded["guard"]["quoted_text"] == {"masked": ["EMAIL_ADDRESS"], "confidential_marking": True}


@pytest.fixture()
def escalation_doc(tmp_path: Path) -> None:
    root = tmp_path / "kb"
    root.mkdir()
    (root / "escalation.md").write_text(DOC)
    files = [("public/" + rel, str(path)) for rel, path in folder_scan(root)]
    summary = files_ingest(root=str(root), files=files, options=IngestOptions(prefix="public/"))
    assert summary.failed == 0, summary.errors


@pytest.mark.django_db
def test_the_citation_viewer_guards_the_passage(escalation_doc) -> None:  # type: ignore[no-untyped-def]
    chunk = Chunk.objects.filter(document__source="public/escalation.md", text__contains=EMAIL).first()
    assert chunk is not None
    response = client_for(make_user("eng", "employees")).get(f"/api/v1/passages/{chunk.pk}")
    assert response.status_code == 200
    assert not _leaks(response.content.decode())
    assert "[REDACTED EMAIL]" in response.json()["text"]


@pytest.mark.django_db(transaction=True)  # retrieval reads through its own pool connections
def test_an_answer_never_quotes_unmasked_text(escalation_doc) -> None:  # type: ignore[no-untyped-def]
    body = ask(
        user=make_user("eng", "employees"), question="Who do I page when rtr-core-9 loses its BGP sessions?"
    )
    assert body["passages"] and body["citations"], body["answer"]
    assert not _leaks(json.dumps(body["passages"])) and not _leaks(json.dumps(body["citations"]))
    assert not _leaks(json.dumps(body))
    stored = Answer.objects.get(pk=body["answer_id"]).response
    assert not _leaks(json.dumps(stored))
    assert not _leaks(json.dumps(AuditEvent.objects.get(pk=body["audit_event_id"]).payload))
