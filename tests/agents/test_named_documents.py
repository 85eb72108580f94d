"""A question that names a readable document by its file name is not about a topic the knowledge base lacks,
even where the document's text never repeats its own name; a document the asker cannot read still looks like
nothing at all (real DB, ingestion and ACLs)."""

from __future__ import annotations

from pathlib import Path

import pytest
from django.contrib.auth.models import Group, User

from agents.steps.retrieve import distinctive_unknown_terms
from athena.principals import Principal
from knowledge.models import Chunk, Document
from knowledge.services import document_set_acl
from knowledge.text import analyze
from tests.agents.fixture_corpus import corpus_ingested

pytestmark = [pytest.mark.integration, pytest.mark.django_db]
FIXTURE = Path(__file__).resolve().parent / "fixtures" / "named_kb"


@pytest.fixture(scope="module")
def named_kb(django_db_setup, django_db_blocker):  # type: ignore[no-untyped-def]
    """Two scripts whose texts never say their own names; one is restricted to `netadmins`."""
    with corpus_ingested(FIXTURE, django_db_blocker):
        with django_db_blocker.unblock():
            Group.objects.get_or_create(name="netadmins")
            restricted = Document.objects.get(source__endswith="linkaudit.txt")
            document_set_acl(document=restricted, access_tier="restricted", groups=["netadmins"], actor=None)
        yield


def _principal(username: str, *groups: str) -> Principal:
    user = User.objects.get_or_create(username=username)[0]
    user.groups.set([Group.objects.get_or_create(name=name)[0] for name in groups])
    return Principal.from_user(user)


def test_a_readable_document_s_file_name_is_a_known_term_and_a_restricted_one_is_not(named_kb):  # type: ignore[no-untyped-def]
    terms = analyze("does portwatch or linkaudit or qzvxwobbly log anything")
    names = {"portwatch", "linkaudit", "qzvxwobbli"}
    assert names <= set(terms)
    for name in ("portwatch", "linkaudit"):  # the premise: no chunk holds the name itself
        assert not Chunk.objects.filter(text__icontains=name).exists()

    outsider = distinctive_unknown_terms(terms, _principal("named-outsider", "employees"))
    assert set(outsider) & names == {
        "linkaudit",
        "qzvxwobbli",
    }  # the restricted script's name looks like nothing
    insider = distinctive_unknown_terms(terms, _principal("named-insider", "employees", "netadmins"))
    assert set(insider) & names == {"qzvxwobbli"}
