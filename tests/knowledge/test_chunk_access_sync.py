"""Access state copied from a document onto its chunks (ACL, expiry, update date, active) never drifts from the
document: group deletion, re-ingests, ACL changes that overlap an ingest, expiry and admin corrections reach
every read path (retrieval's SQL, the citation viewer, the document list) the same way; removing a chunk takes
back exactly the edge weight its indexing added; a failure recorded after a removal leaves it removed."""

from __future__ import annotations

import hashlib
from collections import Counter
from collections.abc import Sequence
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth.models import Group
from django.db import IntegrityError, connection, transaction
from django.utils import timezone

from athena.errors import NotFound
from athena.principals import Principal
from audit.models import AuditEvent
from knowledge.index_selectors import chunks_readable_among
from knowledge.indexing import StagedChunk, StagedDocument
from knowledge.models import (
    Chunk,
    CorpusStat,
    Document,
    DocumentStatus,
    Edge,
    Entity,
    RetiredGroup,
    TermStat,
)
from knowledge.selectors import chunk_get_visible, document_list_visible, documents_readable
from knowledge.services import (
    IngestOptions,
    document_acl_sync,
    document_index_staged,
    document_record_failure,
    document_reingest,
    document_set_acl,
    document_tombstone,
    uploads_expire,
)
from knowledge.text import analyze
from retrieval.types import Filters
from tests.api import make_user

pytestmark = [pytest.mark.integration, pytest.mark.django_db]

FOLDER = IngestOptions(acl_groups=("netops",))  # a source folder's policy: `path|groups=netops`


def index(
    source: str,
    text: str,
    options: IngestOptions = IngestOptions(),
    *,
    entities: Sequence[tuple[str, str]] = (),
    updated_at: datetime | None = None,
) -> Document:
    """Index one chunk of `text` as `source` through the ingest's write path (no embedder needed)."""
    counts = Counter(analyze(text))
    chunk = StagedChunk(
        ordinal=0,
        text=text,
        section_path="",
        page=None,
        token_count=len(text.split()),
        terms=dict(counts),
        doc_len=sum(counts.values()),
        entities=[(kind, name, name) for kind, name in entities],
        entity_counts={key: 1 for key in entities},
        injection_matches=[],
    )
    staged = StagedDocument(
        source=source,
        source_path=f"/srv/kb/{source}",
        source_root="/srv/kb",
        content_hash=hashlib.sha256(text.encode()).hexdigest(),
        title=source,
        author="",
        updated_at=updated_at,
        metadata={},
        links=[],
        chunks=[chunk],
        options=options.as_dict(),
    )
    return document_index_staged(staged=staged)


def reads(principal: Principal, document: Document) -> tuple[bool, bool, bool]:
    """Whether `principal` reads the document through retrieval's SQL, the citation viewer, the document list."""
    ids = list(Chunk.objects.filter(document=document).values_list("id", flat=True))
    retrieved = bool(ids) and bool(chunks_readable_among(ids, principal, Filters()))
    try:
        cited = bool(ids) and bool(chunk_get_visible(principal=principal, chunk_id=ids[0]))
    except NotFound:
        cited = False
    listed = document_list_visible(principal=principal).filter(pk=document.pk).exists()
    return retrieved, cited, listed


NOBODY = (False, False, False)
EVERYWHERE = (True, True, True)


def statistics_exact() -> bool:
    """BM25's N counts exactly the active chunks, and each term's df the active chunks holding it."""
    n_chunks = CorpusStat.objects.get(pk=1).n_chunks
    active = Chunk.objects.filter(active=True)
    dfs = dict(TermStat.objects.filter(df__gt=0).values_list("term", "df"))
    held = Counter(term for chunk in active for term in set(analyze(chunk.text)))
    return n_chunks == active.count() and dfs == dict(held)


# --- re-ingest -------------------------------------------------------------------------------------------------


def test_a_reingest_keeps_a_document_an_admin_closed_closed() -> None:
    document = index("net/core.md", "Core router enable secret rotation runbook.", FOLDER)
    member = Principal.from_user(make_user("bob", "employees", "netops"))
    admin = make_user("admin", "employees", "kb-admins")
    assert reads(member, document) == EVERYWHERE
    document_set_acl(document=document, access_tier="restricted", groups=[], actor=admin)
    # the nightly sync of the edited file, with the folder's unchanged policy
    document = index("net/core.md", "Core router enable secret rotation runbook, second edition.", FOLDER)
    assert document.access_tier == "restricted" and not document.allowed_groups.exists()
    assert reads(member, document) == NOBODY


def test_a_reingest_gives_no_group_back_to_a_document_whose_groups_were_deleted() -> None:
    index("fac/power.md", "Rack power budget is 8 kW in hall B.", IngestOptions(acl_groups=("facilities",)))
    Group.objects.get(name="facilities").delete()
    document = index(
        "fac/power.md", "Rack power budget is 9 kW in hall B.", IngestOptions(acl_groups=("facilities",))
    )
    assert document.access_tier == "restricted" and not document.allowed_groups.exists()
    later = Principal.from_user(make_user("carol", "employees", "facilities"))  # a group of that name again
    assert reads(later, document) == NOBODY


def test_a_reingest_narrows_an_open_document_to_the_folders_groups() -> None:
    document = index("net/edge.md", "Edge router loopback addressing plan.")
    outsider = Principal.from_user(make_user("emp", "employees"))
    assert reads(outsider, document) == EVERYWHERE
    document = index("net/edge.md", "Edge router loopback addressing plan, revised.", FOLDER)
    assert list(document.allowed_groups.values_list("name", flat=True)) == ["netops"]
    assert reads(outsider, document) == NOBODY


def test_a_reingest_keeps_the_owner_and_expiry_of_an_existing_document() -> None:
    owner = make_user("owner", "employees")
    expires = timezone.now() + timedelta(hours=2)
    private = IngestOptions(owner_id=owner.pk, access_tier="confidential", expires_at=expires)
    index(f"uploads/{owner.pk}/notes.md", "Failover drill notes: the standby took over in 40 s.", private)
    # the same source indexed again with other options (a folder that holds it, or another user's options)
    other = make_user("other", "employees")
    index(
        f"uploads/{owner.pk}/notes.md",
        "Failover drill notes: the standby took over in 41 s.",
        IngestOptions(owner_id=other.pk, expires_at=expires + timedelta(days=30)),
    )
    document = index(f"uploads/{owner.pk}/notes.md", "Failover drill notes: the standby took over in 42 s.")
    assert (document.owner_id, document.expires_at) == (owner.pk, expires)
    assert reads(Principal.from_user(other), document) == NOBODY
    # the owner uploading it again renews its time
    renewed = expires + timedelta(hours=24)
    document = index(
        f"uploads/{owner.pk}/notes.md",
        "Failover drill notes: the standby took over in 43 s.",
        IngestOptions(owner_id=owner.pk, access_tier="confidential", expires_at=renewed),
    )
    assert (document.owner_id, document.expires_at) == (owner.pk, renewed)
    assert set(Chunk.objects.filter(document=document).values_list("expires_at", flat=True)) == {renewed}


def test_a_reingest_queued_before_an_acl_change_keeps_the_new_acl(  # type: ignore[no-untyped-def]
    tmp_path: Path, eager: None, django_capture_on_commit_callbacks
) -> None:
    path = tmp_path / "core.md"
    path.write_text("# Core routers\n\nThe core routers rotate their enable secret every quarter.\n")
    document = index("net/core.md", "The core routers rotate their enable secret.", FOLDER)
    Document.objects.filter(pk=document.pk).update(source_path=str(path), source_root=str(tmp_path))
    document.refresh_from_db()
    member = Principal.from_user(make_user("bob", "employees", "netops"))
    admin = make_user("admin", "employees", "kb-admins")
    with django_capture_on_commit_callbacks() as queued:
        document_reingest(document=document)
    # the admin closes the document while the re-ingest waits in the queue
    document_set_acl(document=document, access_tier="restricted", groups=[], actor=admin)
    assert len(queued) == 1
    queued[0]()  # the worker takes it
    document.refresh_from_db()
    assert document.version == 2 and document.status == DocumentStatus.INDEXED
    assert document.access_tier == "restricted" and not document.allowed_groups.exists()
    assert reads(member, document) == NOBODY


def test_a_reingest_of_a_document_deleted_while_queued_creates_nothing(  # type: ignore[no-untyped-def]
    tmp_path: Path, eager: None, django_capture_on_commit_callbacks
) -> None:
    path = tmp_path / "core.md"
    path.write_text("# Core routers\n\nThe core routers rotate their enable secret every quarter.\n")
    document = index("net/core.md", "The core routers rotate their enable secret.", FOLDER)
    Document.objects.filter(pk=document.pk).update(source_path=str(path), source_root=str(tmp_path))
    document.refresh_from_db()
    with django_capture_on_commit_callbacks() as queued:
        document_reingest(document=document)
    document_tombstone(document=document)
    Document.objects.filter(pk=document.pk).delete()  # the admin's delete
    queued[0]()
    assert not Document.objects.filter(source="net/core.md").exists()


# --- group deletion ----------------------------------------------------------------------------------------------


def row_versions(*documents: Document) -> dict[int, str]:
    """Each chunk's physical row version (ctid): every UPDATE of a row, HOT or not, moves it. A row written
    again is a new entry in each of the chunk table's indexes (the HNSW graph's insert is the costly one)."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT id, ctid::text FROM knowledge_chunk WHERE document_id = ANY(%s)",
            [[d.pk for d in documents]],
        )
        return dict(cursor.fetchall())


def test_deleting_a_group_leaves_each_document_the_access_of_its_other_groups_writing_only_what_changes() -> (
    None
):
    restricted = IngestOptions(access_tier="restricted", acl_groups=("ops", "sre"))
    both = index("a/both.md", "Pager rotation for the storage team.", restricted)
    only = index("a/only.md", "Storage array firmware upgrade steps.", IngestOptions(acl_groups=("ops",)))
    closed_only = index(
        "a/closed.md", "Vault unseal procedure.", IngestOptions(access_tier="restricted", acl_groups=("ops",))
    )
    shared = index("a/shared.md", "Change freeze calendar.", IngestOptions(acl_groups=("ops", "sre")))
    other = index("a/other.md", "Database failover drill notes.", IngestOptions(acl_groups=("sre",)))
    public = index("a/public.md", "Office opening hours.")
    ops_id = Group.objects.get(name="ops").pk
    users = [
        make_user("olga", "employees", "ops"),
        make_user("sam", "employees", "sre"),
        make_user("eve", "employees"),
    ]
    before = row_versions(both, only, closed_only, shared, other, public)

    Group.objects.get(name="ops").delete()

    olga, sam, eve = (Principal.from_user(user) for user in users)
    assert ops_id not in olga.group_ids
    expected = {
        # document: (olga, who was in the deleted group only; sam, in the group kept; eve, in neither)
        both: (NOBODY, EVERYWHERE, NOBODY),
        only: (NOBODY, NOBODY, NOBODY),  # left with no group: restricted, readable by nobody (never opened)
        closed_only: (NOBODY, NOBODY, NOBODY),
        shared: (NOBODY, EVERYWHERE, NOBODY),
        other: (NOBODY, EVERYWHERE, NOBODY),
        public: (EVERYWHERE, EVERYWHERE, EVERYWHERE),
    }
    for document, readers in expected.items():
        assert tuple(reads(p, document) for p in (olga, sam, eve)) == readers, document.source
    only.refresh_from_db()
    assert only.access_tier == "restricted" and not only.allowed_groups.exists()
    # audited as before: one ACL change per document that named the group, with the groups it keeps
    changes = {
        event.payload["document"]: event
        for event in AuditEvent.objects.filter(kind="acl_change", actor="group deleted: ops")
    }
    assert set(changes) == {"a/both.md", "a/only.md", "a/closed.md", "a/shared.md"}
    assert changes["a/both.md"].payload["groups"] == ["sre"] and changes["a/only.md"].payload["groups"] == []
    # only the chunks whose access columns change are written again: the document that became restricted
    after = row_versions(both, only, closed_only, shared, other, public)
    rewritten = {Chunk.objects.get(pk=pk).document.source for pk in after if after[pk] != before[pk]}
    assert rewritten == {"a/only.md"}
    assert changes["a/only.md"].payload["chunks_updated"] == 1
    assert changes["a/both.md"].payload["chunks_updated"] == 0


def test_a_deleted_groups_id_is_never_given_to_a_group_again() -> None:
    # the chunks of a document that keeps other groups still carry the deleted group's id: a group created with
    # that id (an explicit id, as loaddata writes them, or a sequence set back) would read them
    document = index(
        "b/both.md", "Pager rotation for the storage team.", IngestOptions(acl_groups=("ops", "sre"))
    )
    ops = Group.objects.get(name="ops")
    ops_id = ops.pk
    ops.delete()
    with pytest.raises(IntegrityError), transaction.atomic():
        Group.objects.create(pk=ops_id, name="ops")
    spare = Group.objects.create(name="spare")
    with pytest.raises(IntegrityError), transaction.atomic():
        Group.objects.filter(pk=spare.pk).update(id=ops_id)
    again = Group.objects.create(name="ops")  # the same name again: a new id, none of the old access
    assert again.pk != ops_id
    assert reads(Principal.from_user(make_user("olga", "ops")), document) == NOBODY


def test_a_group_created_after_a_sequence_reset_skips_the_retired_ids() -> None:
    # loaddata and `sqlsequencereset` set the id sequence back to the highest id in the table, below groups
    # deleted since: each retired id the sequence then drew failed one group's creation
    from django.core.management.color import no_style

    kept, *deleted = (Group.objects.create(name=f"reset-{i}") for i in range(3))
    retired = [group.pk for group in deleted]
    for group in deleted:
        group.delete()
    assert RetiredGroup.objects.filter(group_id__in=retired).count() == 2
    with connection.cursor() as cursor:
        for statement in connection.ops.sequence_reset_sql(no_style(), [Group]):
            cursor.execute(statement)
    created = Group.objects.create(name="after-reset")
    assert created.pk > max(retired) > kept.pk
    assert Group.objects.get(name="after-reset").pk == created.pk  # the id Django was given is the row's
    # an id given explicitly is still refused, not moved
    with pytest.raises(IntegrityError), transaction.atomic():
        Group.objects.create(pk=retired[0], name="explicit")


def test_a_group_deleted_by_sql_is_retired_too() -> None:
    # a script or a database shell deletes the row without Django's signal: the database retires the id itself,
    # which the chunks, not synced by anyone, still carry
    document = index(
        "e/both.md", "Pager rotation for the storage team.", IngestOptions(acl_groups=("ops", "sre"))
    )
    ops_id = Group.objects.get(name="ops").pk
    with connection.cursor() as cursor:
        cursor.execute("DELETE FROM knowledge_document_allowed_groups WHERE group_id = %s", [ops_id])
        cursor.execute("DELETE FROM auth_group WHERE id = %s", [ops_id])
    assert RetiredGroup.objects.filter(group_id=ops_id, name="ops").exists()
    assert ops_id in Chunk.objects.get(document=document).acl_groups
    with pytest.raises(IntegrityError), transaction.atomic():
        Group.objects.create(pk=ops_id, name="ops-again")


def test_a_group_removed_from_a_document_leaves_its_chunks_even_if_its_id_was_recorded_as_retired() -> None:
    # a retired id that a group still holds (a RetiredGroup row loaded with a fixture from another database, or
    # written by hand): the sync must not take it for an id no one holds, or the chunks keep it for the group
    document = index(
        "d/both.md", "Pager rotation for the storage team.", IngestOptions(acl_groups=("ops", "sre"))
    )
    ops = Group.objects.get(name="ops")
    RetiredGroup.objects.create(group_id=ops.pk, name="ops")
    olga = make_user("olga", "employees", "ops")
    admin = make_user("admin", "employees", "kb-admins")
    assert reads(Principal.from_user(olga), document) == EVERYWHERE
    document_set_acl(document=document, access_tier="internal", groups=["sre"], actor=admin)
    assert reads(Principal.from_user(olga), document) == NOBODY
    assert list(Chunk.objects.filter(document=document).values_list("acl_groups", flat=True)) == [
        [Group.objects.get(name="sre").pk]
    ]


def test_a_sync_that_changes_nothing_writes_no_chunk_and_a_change_writes_every_chunk() -> None:
    document = index("c/edge.md", "Edge router loopback addressing plan.", FOLDER)
    before = row_versions(document)
    admin = make_user("admin", "employees", "kb-admins")
    # the admin's change form syncs the chunks on every save, a title edit included
    assert document_acl_sync(document=document, actor=admin) == 0
    assert row_versions(document) == before
    Document.objects.filter(pk=document.pk).update(department="network")
    assert document_acl_sync(document=document, actor=admin) == 1
    assert set(Chunk.objects.filter(document=document).values_list("department", flat=True)) == {"network"}
    assert row_versions(document) != before


# --- an ACL change overlapping an ingest -------------------------------------------------------------------------


def test_an_acl_change_from_a_copy_read_before_the_first_indexing_keeps_the_chunks_active() -> None:
    Document.objects.create(source="net/new.md", status=DocumentStatus.PENDING, access_tier="internal")
    admin = make_user("admin", "employees", "kb-admins")
    member = Principal.from_user(make_user("bob", "employees", "netops"))
    loaded = Document.objects.get(source="net/new.md")  # the ACL endpoint reads the row ...
    document = index("net/new.md", "BGP graceful restart timers for the new edge.")  # ... the worker commits
    changed = document_set_acl(document=loaded, access_tier="restricted", groups=["netops"], actor=admin)
    assert changed.status == DocumentStatus.INDEXED and changed.version == document.version
    document.refresh_from_db()
    assert document.status == DocumentStatus.INDEXED and document.access_tier == "restricted"
    assert reads(member, document) == EVERYWHERE
    assert reads(Principal.from_user(make_user("emp", "employees")), document) == NOBODY
    assert statistics_exact()


# --- expiry ------------------------------------------------------------------------------------------------------


def test_an_expired_shared_document_is_readable_by_nobody() -> None:
    document = index("pol/vpn.md", "The temporary VPN exception for vendor access ends in March.")
    employee = Principal.from_user(make_user("emp", "employees"))
    assert reads(employee, document) == EVERYWHERE
    # an admin sets its expiry (the admin form saves the row, then syncs the chunks)
    Document.objects.filter(pk=document.pk).update(expires_at=timezone.now() - timedelta(minutes=1))
    document.refresh_from_db()
    document_acl_sync(document=document)
    assert reads(employee, document) == NOBODY
    assert not documents_readable(principal=employee).filter(pk=document.pk).exists()
    # the hourly task removes it, as it removes expired uploads
    assert uploads_expire() == 1
    document.refresh_from_db()
    assert (
        document.status == DocumentStatus.TOMBSTONED and not Chunk.objects.filter(document=document).exists()
    )
    assert AuditEvent.objects.filter(kind="document_expired", documents__contains=[document.source]).exists()
    assert statistics_exact()


def test_an_expired_upload_shared_with_a_group_is_readable_by_nobody() -> None:
    owner = make_user("owner", "employees")
    document = index(
        f"uploads/{owner.pk}/pm.md",
        "Postmortem draft: the failover took 14 minutes.",
        IngestOptions(
            owner_id=owner.pk, access_tier="confidential", expires_at=timezone.now() + timedelta(hours=1)
        ),
    )
    document_set_acl(document=document, access_tier="confidential", groups=["sre"], actor=None)
    teammate = Principal.from_user(make_user("mate", "employees", "sre"))
    assert reads(teammate, document) == EVERYWHERE
    # time passes: the expiry written on the document reaches its chunks, whoever writes it
    Document.objects.filter(pk=document.pk).update(expires_at=timezone.now() - timedelta(minutes=1))
    assert reads(Principal.from_user(owner), document) == NOBODY
    assert reads(teammate, document) == NOBODY


def test_a_renewed_expiry_reaches_the_chunks() -> None:
    """The upload API renews an upload's expiry on the document row when the same file comes again (unchanged
    content is not indexed again): the owner keeps reading it past the first expiry."""
    owner = make_user("owner", "employees")
    first = timezone.now() + timedelta(minutes=5)
    document = index(
        f"uploads/{owner.pk}/pm.md",
        "Postmortem draft: the failover took 14 minutes.",
        IngestOptions(owner_id=owner.pk, access_tier="confidential", expires_at=first),
    )
    renewed = first + timedelta(hours=24)
    Document.objects.filter(pk=document.pk).update(expires_at=renewed)
    assert set(Chunk.objects.filter(document=document).values_list("expires_at", flat=True)) == {renewed}


# --- metadata and graph ------------------------------------------------------------------------------------------


def test_a_corrected_update_date_reaches_the_chunks() -> None:
    document = index(
        "kb/dated.md", "Firewall change window is Tuesday night.", updated_at=datetime(2025, 6, 1, tzinfo=UTC)
    )
    employee = Principal.from_user(make_user("emp", "employees"))
    ids = list(Chunk.objects.filter(document=document).values_list("id", flat=True))
    assert chunks_readable_among(ids, employee, Filters(updated_after=date(2024, 1, 1)))
    Document.objects.filter(pk=document.pk).update(source_updated_at=datetime(2020, 1, 1, tzinfo=UTC))
    document.refresh_from_db()
    document_acl_sync(document=document)  # what the admin change form runs after saving
    assert not chunks_readable_among(ids, employee, Filters(updated_after=date(2024, 1, 1)))
    assert chunks_readable_among(ids, employee, Filters(updated_before=date(2021, 1, 1)))


def test_removing_a_chunk_takes_back_only_the_edges_its_indexing_added() -> None:
    entities = [("protocol", f"entity{i:02d}") for i in range(14)]
    many = index("kb/many.md", "A chunk that mentions fourteen entities.", entities=entities)
    # edges are added among a chunk's 12 most mentioned entities (ties by entity id): the last two get none
    index("kb/pair.md", "A chunk that mentions the last two.", entities=entities[12:])
    a, b = sorted(Entity.objects.get(name=name).id for name in ("entity12", "entity13"))
    assert Edge.objects.get(source_id=a, target_id=b).weight == 1
    document_tombstone(document=many)
    assert Edge.objects.get(source_id=a, target_id=b).weight == 1
    assert set(Edge.objects.values_list("weight", flat=True)) <= {0, 1}


# --- failures --------------------------------------------------------------------------------------------------


def test_a_failure_recorded_after_a_removal_leaves_the_document_removed() -> None:
    document = index("kb/old.md", "Legacy VPN concentrator procedure.")
    document_tombstone(document=document)
    # a batch queued before the removal fails to embed afterwards
    document_record_failure(
        source="kb/old.md",
        path=Path("/srv/kb/kb/old.md"),
        root="/srv/kb",
        error="embedding failed",
        options=FOLDER,
    )
    document.refresh_from_db()
    assert document.status == DocumentStatus.TOMBSTONED


def test_the_acl_check_covers_the_expiry_with_an_index_built_without_locking_the_table() -> None:
    from django.db import connection
    from django.db.migrations.loader import MigrationLoader

    with connection.cursor() as cursor:
        cursor.execute("SELECT indexname, indexdef FROM pg_indexes WHERE tablename = 'knowledge_chunk'")
        indexes = dict(cursor.fetchall())
    assert "chunk_acl_cover" not in indexes  # the old one, without the expiry, is gone
    assert "expires_at" in indexes["chunk_acl_expiry_cover"]
    # built and dropped concurrently, outside a transaction: retrieval goes on meanwhile (the migration states
    # the index change and runs its own SQL, so that a migrate stopped midway is finished by the next one)
    loader = MigrationLoader(connection)

    def names(op: Any) -> set[str]:
        inner = getattr(op, "state_operations", [op])
        return {getattr(o, "name", "") for o in inner} | {
            getattr(getattr(o, "index", None), "name", "") for o in inner
        }

    building = [
        m
        for m in loader.disk_migrations.values()
        if m.app_label == "knowledge"
        and any(names(op) & {"chunk_acl_cover", "chunk_acl_expiry_cover"} for op in m.operations)
    ]
    latest = max(building, key=lambda m: m.name)
    assert latest.atomic is False
    statements = [
        statement
        for op in latest.operations
        for db_op in getattr(op, "database_operations", [op])
        for statement in ([db_op.sql] if isinstance(db_op.sql, str) else db_op.sql)
    ]
    assert statements and all("INDEX CONCURRENTLY" in statement for statement in statements), statements
