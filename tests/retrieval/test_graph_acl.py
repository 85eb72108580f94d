"""Graph expansion is scoped to the principal: an edge that only a document someone cannot read created is
never followed for them, and an entity's rarity counts only the chunks they may read. A restricted document
added to the corpus leaves an outsider's graph run exactly as it was."""

from __future__ import annotations

from pathlib import Path

import pytest

from athena.principals import Principal
from knowledge.models import Chunk
from knowledge.services import IngestOptions, files_ingest, folder_scan
from retrieval.search import search, understand
from retrieval.stages import graph_search
from retrieval.types import Filters
from tests.factories import UserFactory
from tests.knowledge.conftest import write_docs

pytestmark = [pytest.mark.integration, pytest.mark.slow]

PUBLIC = {
    "eigrp-basics.md": "# EIGRP basics\n\nEIGRP neighbours form over the hello interval. Check the EIGRP "
    "topology table with show ip eigrp topology and compare it with the VRRP master state.\n",
    "hsrp-priority.md": "# HSRP priority\n\nThe active router is the one with the highest HSRP priority; "
    "preemption lets a higher HSRP priority take over again.\n",
    "vrrp-tracking.md": "# VRRP tracking\n\nVRRP object tracking lowers the priority of the VRRP master when "
    "its uplink fails.\n",
}
# the only text in which EIGRP and HSRP occur together; it also mentions EIGRP more than any public chunk
RESTRICTED = {
    "core-migration.md": "# Core migration plan\n\nDuring the migration EIGRP redistribution feeds the HSRP "
    "pair on the new core. EIGRP stub areas, EIGRP summaries and EIGRP timers change on night two; HSRP "
    "groups move on night three.\n",
}


def _ingest(root: Path, **options) -> None:
    files = [(rel, str(p)) for rel, p in folder_scan(root)]
    summary = files_ingest(root=str(root), files=files, options=IngestOptions(**options))
    assert summary.failed == 0, summary.errors


def _principal(username: str, *groups: str) -> Principal:
    return Principal.from_user(UserFactory(username=username, groups=groups))


def _chunk_of(source: str) -> int:
    return int(Chunk.objects.filter(document__source=source).values_list("id", flat=True).first())


def _eigrp() -> list[tuple[str, str]]:
    entities = understand("Why does EIGRP lose its neighbours?").entities
    assert entities, "the recogniser knows EIGRP"
    return entities


@pytest.mark.django_db(transaction=True)
def test_a_restricted_document_leaves_an_outsiders_graph_run_unchanged(tmp_path: Path) -> None:
    _ingest(write_docs(tmp_path / "public", PUBLIC), department="noc")
    outsider = _principal("outsider", "employees")
    insider = _principal("insider", "core-team")
    before = graph_search(_eigrp(), outsider, Filters())
    assert _chunk_of("eigrp-basics.md") in {s.id for s in before}
    # an edge the outsider can read is still followed: EIGRP and VRRP share a public chunk
    assert _chunk_of("vrrp-tracking.md") in {s.id for s in before}
    assert _chunk_of("hsrp-priority.md") not in {s.id for s in before}

    _ingest(
        write_docs(tmp_path / "restricted", RESTRICTED), access_tier="restricted", acl_groups=("core-team",)
    )

    after = graph_search(_eigrp(), outsider, Filters())
    # not reached through the EIGRP-HSRP co-occurrence only the restricted plan holds, and the public chunks'
    # scores do not move with the restricted document's EIGRP mentions (rarity counts readable chunks only)
    assert after == before
    # the reader of the plan follows the edge it created
    inside = {s.id for s in graph_search(_eigrp(), insider, Filters())}
    assert {_chunk_of("hsrp-priority.md"), _chunk_of("core-migration.md")} <= inside


@pytest.mark.django_db(transaction=True)
def test_search_evidence_shows_no_graph_score_from_a_hidden_co_occurrence(tmp_path: Path) -> None:
    _ingest(write_docs(tmp_path / "public", PUBLIC), department="noc")
    _ingest(
        write_docs(tmp_path / "restricted", RESTRICTED), access_tier="restricted", acl_groups=("core-team",)
    )
    outsider = _principal("outsider", "employees")
    hsrp = _chunk_of("hsrp-priority.md")
    result = search("Why does EIGRP lose its neighbours?", outsider)
    for hit in result.hits:
        assert hit.source != "core-migration.md"
        if hit.chunk_id == hsrp:
            assert hit.scores.get("graph", 0.0) == 0.0, hit.scores


@pytest.mark.django_db(transaction=True)
def test_the_answer_shows_bm25_relative_to_its_best_hit_not_the_corpus_idf(tmp_path: Path) -> None:
    """BM25's statistics are corpus-wide (documents the asker cannot read count in a term's df), so a raw
    score shown next to a readable chunk would tell how many chunks hold a term; the response shows BM25
    relative to the best hit instead."""
    from agents.pipeline import run_pipeline

    _ingest(write_docs(tmp_path / "public", PUBLIC), department="noc")
    outsider = _principal("outsider", "employees")
    result = run_pipeline(question="How does HSRP priority preemption work?", principal=outsider, history=[])
    shown = [e["scores"]["bm25"] for e in result.evidence if e["scores"].get("bm25")]
    assert shown and max(shown) == 1.0 and all(0 < s <= 1.0 for s in shown)


@pytest.mark.django_db(transaction=True)
def test_an_entity_in_more_readable_chunks_than_the_bound_is_skipped(tmp_path: Path, monkeypatch) -> None:
    import retrieval.stages

    monkeypatch.setattr(retrieval.stages, "GRAPH_MAX_DF", 2)
    notes = {f"note-{n}.md": f"# Note {n}\n\nEIGRP hello timers were checked on night {n}.\n" for n in (1, 2)}
    _ingest(write_docs(tmp_path / "open", notes), department="noc")
    _ingest(
        write_docs(
            tmp_path / "closed", {"note-3.md": "# Note 3\n\nEIGRP hello timers were checked again.\n"}
        ),
        access_tier="restricted",
        acl_groups=("core-team",),
    )
    outsider = _principal("outsider", "employees")
    insider = _principal("insider", "core-team")
    # the outsider reads two mentions (within the bound): EIGRP points at both; the insider reads three and,
    # for them, EIGRP is too common to point anywhere
    assert {s.id for s in graph_search(_eigrp(), outsider, Filters())} == {
        _chunk_of("note-1.md"),
        _chunk_of("note-2.md"),
    }
    assert graph_search(_eigrp(), insider, Filters()) == []
