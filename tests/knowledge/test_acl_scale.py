"""The retrievers' ACL check at the size of a real organisation: a principal in hundreds of groups, documents
shared with hundreds of groups. Rows are written directly (bulk_create) so that thousands of them cost a
second; the rule is the one every retriever's SQL applies (knowledge.index_selectors.visibility_sql)."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.contrib.auth.models import Group
from django.db import connection, transaction
from django.test import Client
from django.utils import timezone

from athena.errors import ValidationFailed
from athena.principals import Principal
from athena.services import ROLE_ADMIN
from knowledge.index_selectors import ACL_OVERLAP_MAX_GROUPS, chunks_readable_among
from knowledge.models import MAX_DOCUMENT_GROUPS, Chunk, Document, DocumentStatus
from knowledge.services import IngestOptions, document_set_acl
from retrieval.types import Filters
from tests.factories import DocumentFactory, UserFactory

pytestmark = [pytest.mark.integration]


def _groups(n: int, prefix: str) -> list[int]:
    Group.objects.bulk_create([Group(name=f"{prefix}-{i:04d}") for i in range(n)])
    return list(
        Group.objects.filter(name__startswith=f"{prefix}-").order_by("pk").values_list("pk", flat=True)
    )


def _chunks(document: Document, acls: list[dict]) -> list[int]:
    """One active chunk per entry of `acls` (the chunk's ACL columns), in order."""
    made = Chunk.objects.bulk_create(
        [
            Chunk(document=document, ordinal=i, text="x", content_hash="x", active=True, **acl)
            for i, acl in enumerate(acls)
        ]
    )
    return [c.pk for c in made]


def _copies(chunk_id: int, n: int) -> list[int]:
    """`n` more chunks like `chunk_id` (its document, ACL and text), written in one statement."""
    columns = [f.column for f in Chunk._meta.concrete_fields if f.column not in ("id", "ordinal", "prev_id")]
    listed = ", ".join(columns)
    with connection.cursor() as cursor:
        cursor.execute(
            f"INSERT INTO knowledge_chunk ({listed}, ordinal) SELECT {listed}, c.ordinal + i "
            "FROM knowledge_chunk c, generate_series(1, %s) i WHERE c.id = %s RETURNING id",
            [n, chunk_id],
        )
        return [row[0] for row in cursor.fetchall()]


def _document(source: str) -> Document:
    return Document.objects.create(source=source, status=DocumentStatus.INDEXED, access_tier="restricted")


@pytest.mark.django_db
def test_the_same_chunks_are_readable_whatever_the_number_of_groups() -> None:
    shared = _groups(500, "all-hands")  # a document shared with 500 groups
    other = _groups(400, "team")
    owner = UserFactory(username="owner")
    document = _document("acl-rule.md")
    past = timezone.now() - timedelta(hours=1)
    ids = _chunks(
        document,
        [
            {"acl_open": True},
            {"acl_groups": shared},
            {"acl_groups": [other[0], other[200], other[399]]},
            {"acl_groups": [shared[499]]},
            {"owner_id_acl": owner.pk},
            {"acl_groups": [other[5]], "expires_at": past},  # expired: nobody's
            {"acl_open": True, "expires_at": past},
        ],
    )
    open_, wide, small, last, owned, expired, expired_open = ids
    cases = {
        # (principal's groups, user id) -> the chunks they read
        (tuple(other[1:4]), None): {open_},
        (tuple(other[:3]), None): {open_, small},
        (tuple(other[1 : ACL_OVERLAP_MAX_GROUPS + 2]), None): {open_},
        (tuple(other[: ACL_OVERLAP_MAX_GROUPS + 1]), None): {open_, small},
        (tuple(other[:300]), None): {open_, small},
        (tuple(other[:300]), owner.pk): {open_, small, owned},
        (tuple([*other[:300], shared[499]]), None): {open_, small, wide, last},
        (tuple([*other[6:300], shared[250]]), None): {open_, small, wide},
        (tuple(shared[:ACL_OVERLAP_MAX_GROUPS]), None): {open_, wide},
        (tuple(shared[-ACL_OVERLAP_MAX_GROUPS - 1 :]), None): {open_, wide, last},
        ((), owner.pk): {open_, owned},
    }
    for (groups, user_id), expected in cases.items():
        principal = Principal(user_id, "asker", tuple(sorted(groups)))
        assert chunks_readable_among(ids, principal, Filters()) == expected, (len(groups), user_id)
    assert {expired, expired_open}.isdisjoint(
        chunks_readable_among(ids, Principal(owner.pk, "owner", tuple(other)), Filters())
    )


@pytest.mark.django_db
def test_a_principal_in_300_groups_checks_chunks_shared_with_500_groups_quickly() -> None:
    # an organisation's all-hands documents (shared with 500 groups of one division) and an asker in 300
    # groups of another: every chunk must be compared with every group. With `&&` (a nested loop over both
    # arrays, 150,000 comparisons a chunk) each statement over these 8,000 chunks took 5-7 s on this shared
    # 2-core machine; hashed, 0.5-1.2 s
    shared = _groups(500, "division-a")
    asker_groups = _groups(300, "division-b")
    (first,) = _chunks(_document("all-hands.md"), [{"acl_groups": shared}])
    ids = [first, *_copies(first, 7999)]
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE knowledge_chunk")
    asker = Principal(None, "asker", tuple(asker_groups))
    insider = Principal(None, "insider", (*asker_groups[:-1], shared[-1]))
    with transaction.atomic():
        with connection.cursor() as cursor:
            cursor.execute("SET LOCAL statement_timeout = '3s'")  # before the change, this was exceeded
        assert chunks_readable_among(ids, asker, Filters()) == set()
        assert chunks_readable_among(ids, insider, Filters()) == set(ids)


def _named(n: int, prefix: str) -> list[str]:
    _groups(n, prefix)
    return [f"{prefix}-{i:04d}" for i in range(n)]


@pytest.mark.django_db
def test_a_document_shared_with_too_many_groups_is_refused_with_a_reason() -> None:
    # each chunk carries its document's groups into a b-tree index row: 1,000 groups made every write of the
    # chunks a database error (index row size over 2,704 bytes), so the ACL could not be set at all
    document = DocumentFactory(source="all-teams.md", access_tier="restricted", groups=["owners"])
    names = _named(MAX_DOCUMENT_GROUPS * 2, "team")
    with pytest.raises(ValidationFailed, match=f"at most {MAX_DOCUMENT_GROUPS} groups"):
        document_set_acl(document=document, access_tier="restricted", groups=names, actor=None)
    assert list(document.allowed_groups.values_list("name", flat=True)) == ["owners"]
    with pytest.raises(ValidationFailed, match=f"at most {MAX_DOCUMENT_GROUPS} groups"):
        IngestOptions(access_tier="restricted", acl_groups=tuple(names)).validate()

    # as many as a chunk carries: set, and the last group's members read it
    document_set_acl(
        document=document, access_tier="restricted", groups=names[:MAX_DOCUMENT_GROUPS], actor=None
    )
    chunk_ids = list(Chunk.objects.filter(document=document).values_list("pk", flat=True))
    assert chunk_ids
    assert {
        len(groups) for groups in Chunk.objects.filter(document=document).values_list("acl_groups", flat=True)
    } == {MAX_DOCUMENT_GROUPS}
    last = Group.objects.get(name=names[MAX_DOCUMENT_GROUPS - 1])
    assert chunks_readable_among(chunk_ids, Principal(None, "member", (last.pk,)), Filters()) == set(
        chunk_ids
    )


@pytest.mark.django_db(transaction=True)
def test_the_admin_form_refuses_too_many_groups_with_a_form_error() -> None:
    document = DocumentFactory(source="all-teams.md", access_tier="restricted", groups=["owners"])
    # 900: past what a chunk's index row holds (a server error on save), below the 1,000 fields Django reads
    # from a form (DATA_UPLOAD_MAX_NUMBER_FIELDS; past that the admin answers 400 before any form is seen)
    names = _named(900, "team")
    admin = UserFactory(username="curator", groups=["owners", ROLE_ADMIN], superuser=True)
    browser = Client()
    browser.force_login(admin)
    change = f"/admin/knowledge/document/{document.pk}/change/"
    form = browser.get(change).context["adminform"].form
    data = {
        "source": document.source,
        "title": document.title,
        "access_tier": "restricted",
        "doc_type": document.doc_type,
        "analyzer_version": document.analyzer_version,
        "metadata": "{}",
        "allowed_groups": [
            str(pk) for pk in Group.objects.filter(name__in=names).values_list("pk", flat=True)
        ],
        "expires_at_0": "",
        "expires_at_1": "",
    }
    for hidden in form.hidden_fields():
        data[hidden.html_name] = hidden.value()
    response = browser.post(change, data)
    assert response.status_code == 200  # the form again, not a redirect (saved) or a server error
    assert f"at most {MAX_DOCUMENT_GROUPS} groups" in response.content.decode()
    assert list(document.allowed_groups.values_list("name", flat=True)) == ["owners"]


@pytest.mark.django_db
def test_the_chunks_group_copy_has_no_index_that_no_search_uses() -> None:
    # every search statement that checks the ACL starts from chunk ids, the HNSW graph, postings or a document
    # (EXPLAINed for askers in 2, 5-15 and 300 groups: tests/benchmarks/acl_scale.py --plans); a GIN index on the
    # groups was never chosen and cost every chunk write (migration 0018)
    with connection.cursor() as cursor:
        cursor.execute("SELECT indexname, indexdef FROM pg_indexes WHERE tablename = 'knowledge_chunk'")
        definitions = dict(cursor.fetchall())
    assert [name for name, sql in definitions.items() if "USING gin" in sql and "acl_groups" in sql] == []
    assert "acl_groups" in definitions["chunk_acl_expiry_cover"]  # the covering index keeps the groups
