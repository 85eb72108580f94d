"""Reads of documents and chunks, always scoped to the requesting principal.

The rule is the one retrieval applies in SQL (retrieval.stages.visibility_sql): a document is visible when it
is open (public/internal tier, no groups, no owner), when one of its allowed groups is one of the principal's
groups, or when the principal owns it (private uploads). Invisible and missing documents are
indistinguishable: both raise NotFound with the same message.
"""

from __future__ import annotations

from typing import Any

from django.db.models import Exists, OuterRef, Q, QuerySet
from django.utils import timezone

from athena.errors import NotFound
from knowledge.models import OPEN_TIERS, Chunk, Document, DocumentStatus
from retrieval.types import Principal

NOT_FOUND_MESSAGE = "no such document"


def _visible_q(principal: Principal) -> Q:
    through = Document.allowed_groups.through
    any_group = Exists(through.objects.filter(document_id=OuterRef("pk")))
    shared = Exists(
        through.objects.filter(document_id=OuterRef("pk"), group_id__in=list(principal.group_ids))
    )
    open_q = Q(access_tier__in=list(OPEN_TIERS), owner__isnull=True) & ~Q(any_group)
    rule = open_q | Q(shared)
    if principal.user_id is not None:
        rule |= Q(owner_id=principal.user_id)
    return rule


def document_list_visible(
    *, principal: Principal, query: str = "", doc_type: str = "", access_tier: str = "", mine: bool = False
) -> QuerySet[Document]:
    """Indexed, unexpired documents the principal may read (their own uploads in any live state)."""
    now = timezone.now()
    qs = Document.objects.filter(_visible_q(principal)).exclude(status=DocumentStatus.TOMBSTONED)
    own = Q(owner_id=principal.user_id) if principal.user_id is not None else Q(pk__in=[])
    qs = qs.filter(Q(status=DocumentStatus.INDEXED) | own)
    qs = qs.filter(Q(expires_at__isnull=True) | Q(expires_at__gt=now))
    if query:
        qs = qs.filter(Q(title__icontains=query) | Q(source__icontains=query))
    if doc_type:
        qs = qs.filter(doc_type=doc_type)
    if access_tier:
        qs = qs.filter(access_tier=access_tier)
    if mine:
        qs = qs.filter(own)
    return qs.order_by("title", "source")


def document_get_visible(
    *, principal: Principal, document_id: int | None = None, source: str | None = None
) -> Document:
    """One visible document by id or source id; NotFound when missing *or* not visible."""
    qs = document_list_visible(principal=principal)
    lookup: dict[str, Any] = {"pk": document_id} if document_id is not None else {"source": source}
    document = qs.filter(**lookup).first()
    if document is None:
        raise NotFound(NOT_FOUND_MESSAGE)
    return document


def get_document_metadata(
    *, principal: Principal, document_id: int | None = None, source: str | None = None
) -> dict[str, Any]:
    """Title, section list (reading order), last update and tier of a visible document."""
    return document_metadata(
        document_get_visible(principal=principal, document_id=document_id, source=source)
    )


def document_metadata(document: Document) -> dict[str, Any]:
    """The metadata of :func:`get_document_metadata` for a document the caller already found visible."""
    sections = list(
        dict.fromkeys(
            section
            for section in Chunk.objects.filter(document=document, active=True)
            .order_by("ordinal")
            .values_list("section_path", flat=True)
            if section
        )
    )
    return {
        "id": document.pk,
        "source": document.source,
        "title": document.title or document.source,
        "sections": sections,
        "updated_at": document.source_updated_at or document.ingested_at,
        "access_tier": document.access_tier,
        "doc_type": document.doc_type,
        "version": document.version,
        "review_by": document.review_by,
        "superseded": document.superseded_by_id is not None,
    }


def chunk_get_visible(*, principal: Principal, chunk_id: int) -> Chunk:
    """A passage for the citation viewer, by the chunk's own denormalised ACL columns (as retrieval uses)."""
    rule = Q(acl_open=True) | Q(acl_groups__overlap=list(principal.group_ids))
    if principal.user_id is not None:
        rule |= Q(owner_id_acl=principal.user_id)
    chunk = Chunk.objects.select_related("document").filter(rule, active=True, pk=chunk_id).first()
    if chunk is None:
        raise NotFound("no such passage")
    return chunk


def vendor_gazetteer() -> dict[str, tuple[str, str]]:
    """The admin-curated gazetteer: lower-case alias -> (kind, canonical name), for the entity recognisers."""
    from knowledge.models import Vendor

    mapping: dict[str, tuple[str, str]] = {}
    for vendor in Vendor.objects.all():
        for alias in [vendor.name, *vendor.aliases]:
            mapping[alias.lower()] = (vendor.kind, vendor.name)
    return mapping
