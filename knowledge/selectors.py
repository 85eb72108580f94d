"""Reads of documents and chunks, always scoped to the requesting principal.

The rule is the one retrieval applies in SQL (knowledge.index_selectors.visibility_sql): a document is visible when it
is open (public/internal tier, no groups, no owner), when one of its allowed groups is one of the principal's
groups, or when the principal owns it (private uploads); an expired document is visible to nobody. Invisible
and missing documents are indistinguishable: both raise NotFound with the same message.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass
from datetime import date, datetime
from typing import Any

import numpy as np
from django.db.models import Exists, OuterRef, Q, QuerySet
from django.db.models.functions import Lower, Now

from athena.errors import NotFound
from athena.principals import Principal
from knowledge.models import OPEN_TIERS, Chunk, Document, DocumentStatus, file_name

NOT_FOUND_MESSAGE = "no such document"


def _visible_q(principal: Principal, *, include_expired: bool = False) -> Q:
    through = Document.allowed_groups.through
    any_group = Exists(through.objects.filter(document_id=OuterRef("pk")))
    shared = Exists(
        through.objects.filter(document_id=OuterRef("pk"), group_id__in=list(principal.group_ids))
    )
    open_q = Q(access_tier__in=list(OPEN_TIERS), owner__isnull=True) & ~Q(any_group)
    rule = open_q | Q(shared)
    if principal.user_id is not None:
        rule |= Q(owner_id=principal.user_id)
    if include_expired:
        return rule
    # an expired document is readable by nobody, as in retrieval
    return rule & (Q(expires_at__isnull=True) | Q(expires_at__gt=Now()))


def documents_readable(*, principal: Principal, include_expired: bool = False) -> QuerySet[Document]:
    """Every document `principal` may read, in any state (for curation screens, which also list failed and
    pending documents): the same rule as retrieval, and no exception for staff or superusers. An expired
    document is readable by nobody, except with `include_expired` (the admin screens, where an admin whose
    groups may read it renews or clears its expiry)."""
    return Document.objects.filter(_visible_q(principal, include_expired=include_expired))


def readable_file_names(prefixes: Collection[str], *, principal: Principal) -> set[str]:
    """The file names (last path segment, lower case) of the documents `principal` may read, with indexed
    text, whose name starts with one of `prefixes`. A document they cannot read looks like a name found
    nowhere."""
    if not prefixes:
        return set()
    match = Q()
    for prefix in prefixes:
        match |= Q(name__startswith=prefix.lower())
    indexed = Exists(Chunk.objects.filter(document_id=OuterRef("pk"), active=True))
    names = documents_readable(principal=principal).filter(indexed).annotate(name=Lower(file_name("source")))
    return set(names.filter(match).values_list("name", flat=True).distinct())


def document_list_visible(
    *, principal: Principal, query: str = "", doc_type: str = "", access_tier: str = "", mine: bool = False
) -> QuerySet[Document]:
    """Indexed, unexpired documents the principal may read (their own uploads in any live state)."""
    qs = Document.objects.filter(_visible_q(principal)).exclude(status=DocumentStatus.TOMBSTONED)
    own = Q(owner_id=principal.user_id) if principal.user_id is not None else Q(pk__in=[])
    qs = qs.filter(Q(status=DocumentStatus.INDEXED) | own)
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
        document_get_visible(principal=principal, document_id=document_id, source=source), principal=principal
    )


def _superseding_visible(document: Document, principal: Principal | None) -> Document | None:
    """The document that supersedes `document`, only when `principal` may read it. A superseding document the
    principal cannot see is not mentioned at all (not its title, not that it exists); with no principal,
    nobody is assumed to see it (fail closed)."""
    if document.superseded_by_id is None or principal is None:
        return None
    return document_list_visible(principal=principal).filter(pk=document.superseded_by_id).first()


def document_metadata(document: Document, *, principal: Principal) -> dict[str, Any]:
    """The metadata of :func:`get_document_metadata` for a document the caller already found visible.
    `superseded` is true only when the superseding document is visible to `principal` too."""
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
        "superseded": _superseding_visible(document, principal) is not None,
    }


@dataclass(frozen=True, slots=True)
class DocumentFreshness:
    """What a reader may be told about how current a cited document is.
    `superseded_by_title` and `superseded_by_source`: the title (or source id) and the source id of a newer
    document that supersedes it, both set only when the reader may see that document; `says_superseded_by`:
    what the document's own metadata says supersedes it (its own text, so visible to whoever may read the
    document)."""

    source: str
    label: str
    superseded_by_title: str | None
    superseded_by_source: str | None
    says_superseded_by: str | None
    review_by: date | None
    updated_at: datetime | None


def document_freshness(
    *, principal: Principal | None, document_ids: Collection[int]
) -> list[DocumentFreshness]:
    """Freshness facts for documents the caller already found visible to the reader (the cited ones), in
    source order. A superseding document is named only when `principal` may read it; with no principal it
    is never named (fail closed), and the documents themselves are re-checked against `principal` when
    one is given."""
    if not document_ids:
        return []
    if principal is None:
        documents = list(Document.objects.filter(pk__in=list(document_ids)))
        newer: dict[int, Document] = {}
    else:
        documents = list(document_list_visible(principal=principal).filter(pk__in=list(document_ids)))
        newer_ids = {d.superseded_by_id for d in documents if d.superseded_by_id is not None}
        # one query for the superseding documents, through the same visibility rule as everything else
        newer = {d.pk: d for d in document_list_visible(principal=principal).filter(pk__in=newer_ids)}
    rows = []
    for document in sorted(documents, key=lambda d: d.source):
        superseding = newer.get(document.superseded_by_id) if document.superseded_by_id else None
        says = document.metadata.get("superseded_by") if isinstance(document.metadata, dict) else None
        rows.append(
            DocumentFreshness(
                source=document.source,
                label=document.title or document.source,
                superseded_by_title=(superseding.title or superseding.source) if superseding else None,
                superseded_by_source=superseding.source if superseding else None,
                says_superseded_by=str(says) if says else None,
                review_by=document.review_by,
                updated_at=document.source_updated_at,
            )
        )
    return rows


def chunk_get_visible(*, principal: Principal, chunk_id: int) -> Chunk:
    """A passage for the citation viewer, by the chunk's own denormalised ACL columns (as retrieval uses)."""
    rule = Q(acl_open=True) | Q(acl_groups__overlap=list(principal.group_ids))
    if principal.user_id is not None:
        rule |= Q(owner_id_acl=principal.user_id)
    unexpired = Q(expires_at__isnull=True) | Q(expires_at__gt=Now())  # an expired one: nobody's
    chunk = Chunk.objects.select_related("document").filter(rule, unexpired, active=True, pk=chunk_id).first()
    if chunk is None:
        raise NotFound("no such passage")
    return chunk


def passage_code_lines(*, stored: str, shown: str, marked: Sequence[str]) -> list[int]:
    """The numbers (from 0) of the lines of a passage as shown (`shown`, the stored text through the output
    guard) that its format marks as code (`Chunk.code_lines`), for the citation viewer to set as code.

    Lines are found on the stored text, where they are written as the chunk recorded them; when the guard
    changed the number of lines (a confidential marking removed) they are found on the shown text instead, where
    a line the guard masked no longer matches and is shown as text."""
    wanted = set(marked)
    if not wanted:
        return []
    lines = stored.split("\n")
    if len(lines) != shown.count("\n") + 1:
        lines = shown.split("\n")
    return [number for number, line in enumerate(lines) if line.strip() and line.strip() in wanted]


def metadata_spellings(column: str, names: Sequence[str]) -> tuple[str, ...]:
    """`names` and every spelling of the same names, case aside, that documents store in `column` ("department"
    or "vendor"): a filter typed "NOC" then finds the documents of "noc"."""
    if column not in ("department", "vendor"):
        raise ValueError(f"no metadata column {column!r}")
    wanted = {name.lower() for name in names}
    stored = (
        Document.objects.annotate(folded=Lower(column))
        .filter(folded__in=wanted)
        .values_list(column, flat=True)
        .distinct()
    )
    return tuple(dict.fromkeys([*names, *stored]))


def vendor_gazetteer() -> dict[str, tuple[str, str]]:
    """The admin-curated gazetteer: lower-case alias -> (kind, canonical name), for the entity recognisers."""
    from knowledge.models import Vendor

    mapping: dict[str, tuple[str, str]] = {}
    for vendor in Vendor.objects.all():
        for alias in [vendor.name, *vendor.aliases]:
            mapping[alias.lower()] = (vendor.kind, vendor.name)
    return mapping


def chunk_sentence_vectors(chunk_ids: Collection[int]) -> dict[int, bytes]:
    """The stored sentence vectors (`Chunk.sentence_vectors`) of chunks the caller already holds through the
    ACL filter (answering's evidence), by chunk id; chunks without them are left out."""
    rows = Chunk.objects.filter(id__in=list(chunk_ids), sentence_vectors__isnull=False).values_list(
        "id", "sentence_vectors"
    )
    return {chunk_id: bytes(data) for chunk_id, data in rows if data is not None}


def passages_unchanged(shown: Collection[tuple[int, str, str]]) -> set[int]:
    """Of passages shown once as (chunk id, document source, text hash; "" when not recorded), the chunk ids
    whose text a live document still holds. A chunk keeps its text for life, so a live chunk of that id holds
    it; a re-ingest gives every chunk a new id, so otherwise a live chunk of the same document must carry the
    same text hash. No access check: the caller checks the documents."""
    shown = list(shown)
    live = set(
        Chunk.objects.filter(pk__in=[pk for pk, _, _ in shown], active=True).values_list("pk", flat=True)
    )
    wanted = {(source, digest) for pk, source, digest in shown if pk not in live and digest}
    if wanted:
        held = set(
            Chunk.objects.filter(
                active=True,
                document__source__in={source for source, _ in wanted},
                content_hash__in={digest for _, digest in wanted},
            ).values_list("document__source", "content_hash")
        )
        live |= {pk for pk, source, digest in shown if (source, digest) in held}
    return live


def synonym_expansions() -> list[tuple[str, list[str]]]:
    """The admin-curated synonyms: (lower-case term, its expansions), for query understanding."""
    from knowledge.models import Synonym

    return [(s.term.lower(), list(s.expansions)) for s in Synonym.objects.all()]


def document_by_id(*, document_id: int) -> Document | None:
    """A document whatever its state and ACL, for an administrator's curation (never for a reader)."""
    return Document.objects.filter(pk=document_id).first()


def document_chunk_texts(*, document: Document) -> list[str]:
    """The texts of a document's chunks in reading order (an administrator's export; no ACL)."""
    return list(Chunk.objects.filter(document=document).order_by("ordinal").values_list("text", flat=True))


def chunk_vectors_stored(
    *, keys: Collection[str], with_sentence_vectors: bool
) -> dict[str, tuple[np.ndarray, bytes | None]]:
    """key -> (vector, packed sentence vectors) of a chunk the index holds under that `embedding_key` (the
    oldest such chunk; `with_sentence_vectors`: only chunks that have them)."""
    wanted = sorted(set(keys) - {""})
    chunks = Chunk.objects.filter(embedding__isnull=False)
    if with_sentence_vectors:
        chunks = chunks.filter(sentence_vectors__isnull=False)
    found: dict[str, tuple[np.ndarray, bytes | None]] = {}
    for start in range(0, len(wanted), 1000):
        rows = (
            chunks.filter(embedding_key__in=wanted[start : start + 1000])
            .order_by("embedding_key", "id")
            .distinct("embedding_key")
            .values_list("embedding_key", "embedding", "sentence_vectors")
        )
        for key, vector, sentence_vectors in rows:
            found[key] = (
                np.asarray(vector, dtype=np.float32),
                bytes(sentence_vectors) if sentence_vectors is not None else None,
            )
    return found
