"""`manage.py remove PATH`: every document ingested from a folder (and folders beneath it) leaves the index,
once, with an audit event; documents from other folders stay searchable."""

from __future__ import annotations

from io import StringIO
from pathlib import Path

import pytest
from django.core.management import call_command

from athena.principals import Principal
from audit.models import AuditEvent
from knowledge.models import Chunk, Document
from knowledge.services import IngestOptions, files_ingest, folder_scan
from knowledge.text import query_terms
from retrieval.stages import bm25_search
from retrieval.types import Filters
from tests.knowledge.conftest import write_docs

pytestmark = [pytest.mark.integration, pytest.mark.slow]


def ingest(root: Path, prefix: str) -> None:
    files = [(prefix + rel, str(path)) for rel, path in folder_scan(root)]
    summary = files_ingest(root=str(root.resolve()), files=files, options=IngestOptions())
    assert summary.failed == 0, summary.errors


def sources_found(word: str) -> set[str]:
    terms = [(term, 1.0) for term in query_terms(word)]
    hits = bm25_search(terms, Principal(None, "x"), Filters(), k=20, max_df_ratio=1.0)
    chunks = Chunk.objects.filter(id__in=[hit.id for hit in hits]).select_related("document")
    return {chunk.document.source for chunk in chunks}


@pytest.mark.django_db(transaction=True)
def test_remove_tombstones_a_folder_and_its_subfolders_only(tmp_path: Path) -> None:
    demo = tmp_path / "demo"
    write_docs(
        demo / "public", {"vlan.md": "# VLAN plan\n\nThe quarantine VLAN is 666 on every access switch.\n"}
    )
    write_docs(
        demo / "restricted", {"keys.md": "# Key escrow\n\nThe quarantine keys live in the escrow safe.\n"}
    )
    ours = write_docs(
        tmp_path / "ours", {"wifi.md": "# Guest Wi-Fi\n\nGuests join the quarantine SSID first.\n"}
    )
    ingest(demo / "public", "public/")
    ingest(demo / "restricted", "restricted/")
    ingest(ours, "")
    assert sources_found("quarantine") == {"public/vlan.md", "restricted/keys.md", "wifi.md"}

    out = StringIO()
    call_command("remove", str(demo), "--user", "admin", stdout=out)

    assert "2 document(s)" in out.getvalue() and "public/vlan.md" in out.getvalue()
    statuses = dict(Document.objects.values_list("source", "status"))
    assert statuses == {
        "public/vlan.md": "tombstoned",
        "restricted/keys.md": "tombstoned",
        "wifi.md": "indexed",
    }
    assert sources_found("quarantine") == {"wifi.md"}
    event = AuditEvent.objects.filter(kind="documents_removed").get()
    assert event.actor == "admin"
    assert event.documents == ["public/vlan.md", "restricted/keys.md"]
    assert event.payload == {"folder": str(demo.resolve()), "count": 2}
    assert event.verdict == "removed"

    again = StringIO()
    call_command("remove", str(demo), stdout=again)
    assert "no documents were ingested" in again.getvalue()
    # the empty removal is audited too: someone asked for it
    empty = AuditEvent.objects.filter(kind="documents_removed").latest("id")
    assert (empty.verdict, empty.documents, empty.payload["count"]) == ("nothing_matched", [], 0)
    assert AuditEvent.objects.filter(kind="documents_removed", verdict="removed").count() == 1


@pytest.mark.django_db(transaction=True)
def test_a_folder_whose_name_only_starts_like_another_is_not_removed(tmp_path: Path) -> None:
    write_docs(tmp_path / "kb", {"a.md": "# A\n\nAlpha bravo.\n"})
    write_docs(tmp_path / "kb-archive", {"b.md": "# B\n\nCharlie delta.\n"})
    ingest(tmp_path / "kb", "")
    ingest(tmp_path / "kb-archive", "")
    call_command("remove", str(tmp_path / "kb"), stdout=StringIO())
    assert dict(Document.objects.values_list("source", "status")) == {"a.md": "tombstoned", "b.md": "indexed"}


@pytest.mark.django_db(transaction=True)
def test_removing_several_documents_takes_the_index_locks_in_the_order_indexing_takes_them(
    tmp_path: Path,
) -> None:
    """Documents removed together were removed one after another in one transaction: the first one's removal took
    BM25's statistics lock, held to the commit, and the next one's then waited for graph edges. An indexing
    transaction takes the edges first and the statistics lock last, so the two deadlocked and PostgreSQL aborted
    one of them (an admin's "delete selected", `remove` of a folder or a folder sync, beside an ingest)."""
    import threading

    from django.db import connection, connections

    from knowledge.indexing import BM25_STATS_LOCK
    from knowledge.models import Mention
    from knowledge.services import documents_remove

    write_docs(
        tmp_path / "kb",
        {
            "a.md": "# A\n\nCisco IOS runs OSPF and BGP on Juniper routers.\n",
            "b.md": "# B\n\nArista EOS speaks LACP and LLDP to the access switches.\n",
        },
    )
    ingest(tmp_path / "kb", "")
    first, second = Document.objects.order_by("pk")
    # an edge between two entities that only the second document mentions
    mentioned = {
        document.pk: set(Mention.objects.filter(chunk__document=document).values_list("entity_id", flat=True))
        for document in (first, second)
    }
    only_second = mentioned[second.pk] - mentioned[first.pk]
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT id FROM knowledge_edge WHERE source_id = ANY(%s) AND target_id = ANY(%s) AND weight > 0 "
            "LIMIT 1",
            [list(only_second), list(only_second)],
        )
        row = cursor.fetchone()
    assert row is not None, "the second document's entities co-occur"
    edge = row[0]

    outcome: dict[str, object] = {}

    def remove() -> None:
        try:
            outcome["removed"] = documents_remove(
                documents=[first, second], actor=None, detail={"how": "test"}
            )
        except Exception as exc:  # the deadlock's victim, when it is this side
            outcome["error"] = exc
        finally:
            connections.close_all()

    # an ingest's transaction: it has written the edge and is about to take the statistics lock
    indexer = connections.create_connection("default")
    try:
        indexer.set_autocommit(False)
        with indexer.cursor() as cursor:
            cursor.execute("UPDATE knowledge_edge SET weight = weight WHERE id = %s", [edge])
            remover = threading.Thread(target=remove)
            remover.start()
            remover.join(timeout=3)  # it waits for the edge
            assert remover.is_alive(), outcome
            cursor.execute("SET LOCAL lock_timeout = '20s'")
            cursor.execute("SELECT pg_advisory_xact_lock(%s)", [BM25_STATS_LOCK])  # deadlocked here before
        indexer.commit()
    finally:
        indexer.close()
    remover.join(timeout=30)
    assert "error" not in outcome, outcome
    assert outcome["removed"] == ["a.md", "b.md"]
    assert set(Document.objects.values_list("status", flat=True)) == {"tombstoned"}
    assert not Chunk.objects.exists()
