"""Resolved curation items export as dev-set style questions (`manage.py curation_export`)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from django.core.management import call_command

from agents.feedback import curation_enqueue, curation_resolve
from agents.models import Answer, Conversation
from knowledge.models import Document
from knowledge.services import IngestOptions, files_ingest
from tests.api import make_user

pytestmark = [pytest.mark.django_db, pytest.mark.integration]


def _ingest(tmp_path: Path, name: str, text: str, options: IngestOptions) -> Document:
    folder = tmp_path / name.replace(".", "-")
    folder.mkdir()
    (folder / name).write_text(text)
    summary = files_ingest(root=str(folder), files=[(name, str(folder / name))], options=options)
    assert summary.failed == 0, summary.errors
    return Document.objects.get(source=name)


def _abstained(user, question: str) -> Answer:  # type: ignore[no-untyped-def]
    conversation = Conversation.objects.create(user=user, title="t")
    return Answer.objects.create(conversation=conversation, user=user, question=question, abstained=True)


def test_resolved_items_export_with_answer_gold_document_and_acl(tmp_path: Path) -> None:
    public = _ingest(
        tmp_path,
        "dhcp.md",
        "# DHCP\n\nThe lease time on the office DHCP servers is 8 hours. Renewal starts at half of it.\n",
        IngestOptions(),
    )
    private = _ingest(
        tmp_path,
        "vault.md",
        "# Vault\n\nThe break-glass token is rotated every 30 days by the security team.\n",
        IngestOptions(access_tier="restricted", acl_groups=("sec-admins",)),
    )
    # the admin reads the vault page (a kb-admin points an item only at a document they may read)
    alice, admin = make_user("alice", "employees"), make_user("kbadmin", "kb-admins", "sec-admins")
    first = curation_enqueue(answer=_abstained(alice, "How long is a DHCP lease?"), reason="abstained")
    second = curation_enqueue(answer=_abstained(alice, "How often is the token rotated?"), reason="abstained")
    open_item = curation_enqueue(answer=_abstained(alice, "Still open?"), reason="abstained")
    curation_resolve(item_id=first.pk, actor=admin, resolution="8 hours", document_id=public.pk)
    curation_resolve(
        item_id=second.pk, actor=admin, resolution="added the vault page", document_id=private.pk
    )

    out = tmp_path / "curated.jsonl"
    call_command("curation_export", "--out", str(out))
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert [r["question"] for r in rows] == ["How long is a DHCP lease?", "How often is the token rotated?"]
    assert rows[0]["answer"] == "8 hours" and rows[0]["gold"] == ["dhcp.md"] and rows[0]["acl"] is None
    # a resolution that is not in the document is a note, not an answer: scored on retrieval only
    assert rows[1]["answer"] is None
    assert rows[1]["acl"] == {"restricted_docs": ["vault.md"], "allowed_group": "sec-admins"}
    assert all(r["split"] == "train" for r in rows)
    assert open_item.pk not in {int(r["id"].split("-")[1]) for r in rows}
