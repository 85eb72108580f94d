"""A search whose candidates change while it runs: each source reads the chunks the asker may read, then the
passages themselves are read. A document restricted or removed in between (an admin's ACL change, the nightly
sync re-ingesting it) must neither be shown nor break the search."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

import retrieval.search
from athena.principals import Principal
from knowledge.models import Document
from knowledge.services import document_set_acl, document_tombstone
from retrieval.search import search
from retrieval.types import SearchConfig
from tests.factories import DocumentFactory, UserFactory

pytestmark = [pytest.mark.integration, pytest.mark.slow]

BODY = "The chrony daemon answers NTP clients on the stratum configured with the local directive."


def _after_the_sources(monkeypatch: pytest.MonkeyPatch, change: Callable[[], None]) -> None:
    """Run `change` (a real, committed write) once every source has read its candidates, before the search
    reads their passages: the moment another request's write can land in."""
    sources = retrieval.search.run_sources

    def sources_then_change(*args: Any, **kwargs: Any) -> Any:
        runs = sources(*args, **kwargs)
        change()
        return runs

    monkeypatch.setattr(retrieval.search, "run_sources", sources_then_change)


@pytest.mark.django_db(transaction=True)
def test_a_document_restricted_during_a_search_is_not_shown(monkeypatch: pytest.MonkeyPatch) -> None:
    document = DocumentFactory(source="chrony-local.md", title="Chrony local stratum", body=BODY)
    asker = Principal.from_user(UserFactory(username="asker", groups=["employees"]))
    question = "What stratum does chrony report with the local directive?"
    config = SearchConfig(rerank=False, mmr=False)
    assert document.source in {hit.source for hit in search(question, asker, config=config).hits}

    def restrict() -> None:
        document_set_acl(document=document, access_tier="restricted", groups=["time-team"], actor=None)

    _after_the_sources(monkeypatch, restrict)
    result = search(question, asker, config=config)
    assert Document.objects.get(pk=document.pk).access_tier == "restricted"
    assert document.source not in {hit.source for hit in result.hits}


@pytest.mark.django_db(transaction=True)
def test_a_document_removed_during_a_search_leaves_the_search_answering(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    document = DocumentFactory(source="chrony-local.md", title="Chrony local stratum", body=BODY)
    other = DocumentFactory(source="chrony-ports.md", title="Chrony ports", body="chrony listens on UDP 323.")
    asker = Principal.from_user(UserFactory(username="asker", groups=["employees"]))
    question = "What stratum does chrony report with the local directive?"
    _after_the_sources(monkeypatch, lambda: document_tombstone(document=document))
    # the removed document's chunks are gone when the passages are read: it used to end in a KeyError
    result = search(question, asker, config=SearchConfig())
    assert document.source not in {hit.source for hit in result.hits}
    assert other.source in {hit.source for hit in result.hits}
