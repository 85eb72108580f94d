"""The retrievers' ACL check at the size of a real organisation: a principal in hundreds of groups, documents
shared with hundreds of groups. Rows are written directly (bulk_create) so that thousands of them cost a
second; the rule is the one every retriever's SQL applies (knowledge.index_selectors.visibility_sql)."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.contrib.auth.models import Group
from django.db import connection, transaction
from django.utils import timezone

from athena.principals import Principal
from knowledge.index_selectors import ACL_OVERLAP_MAX_GROUPS, chunks_readable_among
from knowledge.models import Chunk, Document, DocumentStatus
from retrieval.types import Filters
from tests.factories import UserFactory

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
