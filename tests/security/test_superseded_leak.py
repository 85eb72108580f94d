"""A restricted document that supersedes a readable one must not leak to a reader outside its groups: not
its title in the "may be outdated" notes, not even the fact that a superseding document exists."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from django.contrib.auth.models import Group

from agents.services import ask
from athena.principals import Principal
from knowledge.models import Document
from knowledge.selectors import document_freshness, get_document_metadata
from knowledge.services import IngestOptions, files_ingest, folder_scan
from tests.api import client_for, make_user

pytestmark = [pytest.mark.django_db, pytest.mark.integration]

SAMPLE = Path(__file__).resolve().parents[2] / "knowledge" / "sample_kb" / "public"
CANARY = "CANARY-7f3a9c Panorama key exposed"


def _pair() -> tuple[Document, Document]:
    old = Document.objects.create(source="public/readme.md", title="README", status="indexed")
    secret = Document.objects.create(
        source="restricted/sec-0042.md", title=CANARY, status="indexed", access_tier="restricted"
    )
    secret.allowed_groups.add(Group.objects.get_or_create(name="sec-team")[0])
    old.superseded_by = secret
    old.save(update_fields=["superseded_by"])
    return old, secret


def test_freshness_names_a_superseding_document_only_to_its_readers() -> None:
    old, _ = _pair()
    outsider = Principal.from_user(make_user("out", "employees"))
    insider = Principal.from_user(make_user("in", "employees", "sec-team"))
    (outside,) = document_freshness(principal=outsider, document_ids={old.pk})
    assert outside.superseded_by_title is None
    assert CANARY not in repr(outside)
    (unknown,) = document_freshness(principal=None, document_ids={old.pk})
    assert unknown.superseded_by_title is None
    (inside,) = document_freshness(principal=insider, document_ids={old.pk})
    assert inside.superseded_by_title == CANARY


def test_superseded_flag_is_scoped_to_the_reader() -> None:
    old, _ = _pair()
    outsider = make_user("out", "employees")
    insider = make_user("in", "employees", "sec-team")
    assert (
        get_document_metadata(principal=Principal.from_user(outsider), document_id=old.pk)["superseded"]
        is False
    )
    assert (
        get_document_metadata(principal=Principal.from_user(insider), document_id=old.pk)["superseded"]
        is True
    )
    for path in (f"/api/v1/documents/{old.pk}/metadata", f"/api/v1/documents/lookup?source={old.source}"):
        response = client_for(outsider).get(path)
        assert response.status_code == 200
        assert response.json()["superseded"] is False
        assert CANARY not in response.content.decode()
        assert client_for(insider).get(path).json()["superseded"] is True


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)  # retrieval reads through its own pool connections
def test_an_answer_citing_a_superseded_document_never_shows_the_restricted_title() -> None:
    files = [("public/" + rel, str(path)) for rel, path in folder_scan(SAMPLE)]
    summary = files_ingest(root=str(SAMPLE), files=files, options=IngestOptions(prefix="public/"))
    assert summary.failed == 0, summary.errors
    secret = Document.objects.create(
        source="restricted/sec-0042.md", title=CANARY, status="indexed", access_tier="restricted"
    )
    secret.allowed_groups.add(Group.objects.get_or_create(name="sec-team")[0])
    # every readable document is superseded by the restricted one, so whatever the answer cites is
    Document.objects.filter(source__startswith="public/").update(superseded_by=secret)

    question = "What BGP keepalive and hold timers do we configure on IOS-XE routers?"
    outsider = ask(user=make_user("out", "employees"), question=question)
    assert not outsider["abstained"], outsider["answer"]
    assert CANARY not in json.dumps(outsider, default=str)

    # a reader of the newer document is told of it; once they leave its group, their history no longer names it
    reader = make_user("in", "employees", "sec-team")
    insider = ask(user=reader, question=question)
    assert any(CANARY in note for note in insider["notes"]), insider["notes"]
    history = f"/api/v1/conversations/{insider['conversation_id']}"
    assert CANARY in client_for(reader).get(history).content.decode()
    reader.groups.remove(Group.objects.get(name="sec-team"))
    shown = client_for(reader).get(history)
    assert shown.status_code == 200 and CANARY not in shown.content.decode()
    assert shown.json()["turns"][0]["response"]["withheld"] is True
