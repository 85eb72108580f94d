"""Ingestion services: scan a folder, stage documents (parse, chunk, analyse, recognise), embed in large
batches, and index each document atomically. Used by the `ingest` command, Celery tasks and admin."""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import logging
import re
import time
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path, PurePosixPath
from typing import Any

import numpy as np
from django.contrib.auth.models import Group
from django.db import OperationalError, connection, transaction
from django.db.models import Case, CharField, F, Q, QuerySet, Value, When
from django.db.models.functions import Concat, Substr

from athena.errors import NotFound, Unavailable, ValidationFailed, dependency_unavailable
from athena.validators import text_problem
from knowledge.indexing import (
    DocumentRemoved,
    StagedChunk,
    StagedDocument,
    document_replace_chunks,
    document_sync_chunk_acl,
    documents_remove_chunks,
    embedding_input,
    embedding_key,
    index_statistics_refresh,
)
from knowledge.models import (
    MAX_DOCUMENT_GROUPS,
    OPEN_TIERS,
    AccessTier,
    DocType,
    Document,
    DocumentStatus,
    IngestRun,
    RetiredGroup,
)
from knowledge.selectors import NOT_FOUND_MESSAGE, chunk_vectors_stored, vendor_gazetteer
from knowledge.text import ANALYZER_VERSION

logger = logging.getLogger(__name__)

SUPPORTED_SUFFIXES = {".md", ".markdown", ".txt", ".text", ".html", ".htm", ".docx", ".pdf", ".rst", ""}
SKIPPED_NAMES = {"README.md"}  # never: documentation of the folder itself is ingested like any file


@dataclass(frozen=True)
class IngestOptions:
    acl_groups: tuple[str, ...] = ()
    access_tier: str = ""  # empty: new documents are internal, existing ones keep their tier
    department: str = ""
    doc_type: str = ""
    vendor: str = ""
    prefix: str = ""
    owner_id: int | None = None
    expires_at: datetime | None = None
    # a re-ingest of a document: one deleted since it was queued is not created again
    existing_only: bool = False
    # when a batch with no ingest run (a re-ingest, an upload) was queued: a document tombstoned after that
    # stays removed (knowledge.indexing.document_replace_chunks); a run's batches use the run's start
    requested_at: datetime | None = None

    def validate(self) -> None:
        if self.access_tier:
            _check_access_tier(self.access_tier)
        if self.doc_type and self.doc_type not in DocType.values:
            raise ValidationFailed(f"unknown doc type {self.doc_type!r}; valid: {', '.join(DocType.values)}")
        if self.prefix and (self.prefix.startswith("/") or ".." in PurePosixPath(self.prefix).parts):
            raise ValidationFailed(f"invalid source prefix {self.prefix!r}")
        # refused here, naming the option: past its column's length every document of the run failed with the
        # database's "value too long", and a NUL or lone surrogate failed the run's own row with a traceback
        limits = {
            "department": Document._meta.get_field("department").max_length,
            "vendor": Document._meta.get_field("vendor").max_length,
            "prefix": (Document._meta.get_field("source").max_length or 0) // 2,  # room for the path
        }
        values = [(name, getattr(self, name), limit) for name, limit in limits.items()]
        groups_count_check(len(set(self.acl_groups)))
        group_limit = Group._meta.get_field("name").max_length
        values += [("acl group", group, group_limit) for group in self.acl_groups]
        for name, value, limit in values:
            if limit is not None and len(value) > limit:
                raise ValidationFailed(
                    f"{name} {value[:40]!r}... is {len(value)} characters; at most {limit}"
                )
            problem = text_problem(value)
            if problem:
                raise ValidationFailed(f"{name} {value!r} {problem}")

    def as_dict(self) -> dict[str, Any]:
        data = {
            "acl_groups": list(self.acl_groups),
            "access_tier": self.access_tier,
            "department": self.department,
            "doc_type": self.doc_type,
            "vendor": self.vendor,
            "prefix": self.prefix,
            "owner_id": self.owner_id,
            "expires_at": self.expires_at.isoformat() if self.expires_at else None,
        }
        # only when set: a worker not yet restarted after an upgrade takes the others
        if self.existing_only:
            data["existing_only"] = True
        if self.requested_at is not None:
            data["requested_at"] = self.requested_at.isoformat()
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> IngestOptions:
        data = dict(data)
        data["acl_groups"] = tuple(data.get("acl_groups") or ())
        for name in ("expires_at", "requested_at"):
            if data.get(name):
                data[name] = datetime.fromisoformat(data[name])
        return cls(**data)


@dataclass(frozen=True)
class SourceFolder:
    """One entry of ATHENA_SOURCE_FOLDERS: a folder and the options its documents are ingested with."""

    path: Path
    options: IngestOptions


SOURCE_FOLDER_KEYS = ("tier", "groups", "prefix", "department", "doc_type", "vendor")


def source_folder_parse(entry: str) -> SourceFolder:
    """Parse `path|tier=restricted|groups=a+b|prefix=x/|department=D` (keys: tier, groups, prefix,
    department, doc_type, vendor). A folder that names neither tier nor groups is restricted to the
    kb-admins group (fail closed): the nightly sync must never publish a new file to every employee because
    nobody said otherwise."""
    from athena.services import ROLE_ADMIN

    path, *parts = [part.strip() for part in entry.split("|")]
    if not path:
        raise ValidationFailed(f"ATHENA_SOURCE_FOLDERS entry {entry!r} names no folder")
    values: dict[str, str] = {}
    for part in parts:
        key, sep, value = part.partition("=")
        if not sep or key not in SOURCE_FOLDER_KEYS:
            raise ValidationFailed(
                f"ATHENA_SOURCE_FOLDERS entry {entry!r}: {part!r} is not key=value with a key among "
                f"{', '.join(SOURCE_FOLDER_KEYS)}"
            )
        values[key] = value.strip()
    groups = tuple(g.strip() for g in values.get("groups", "").split("+") if g.strip())
    tier = values.get("tier", "")
    if not tier and not groups:
        tier, groups = AccessTier.RESTRICTED, (ROLE_ADMIN,)
    options = IngestOptions(
        acl_groups=groups,
        access_tier=tier,
        department=values.get("department", ""),
        doc_type=values.get("doc_type", ""),
        vendor=values.get("vendor", ""),
        prefix=values.get("prefix", ""),
    )
    options.validate()
    return SourceFolder(Path(path), options)


def _check_access_tier(tier: str) -> None:
    if tier not in AccessTier.values:
        raise ValidationFailed(f"unknown access tier {tier!r}; valid: {', '.join(AccessTier.values)}")


@dataclass
class IngestSummary:
    new: int = 0
    changed: int = 0
    unchanged: int = 0
    deleted: int = 0
    failed: int = 0
    chunks: int = 0
    # chunks whose vectors came from the index (knowledge.indexing.embedding_key), not from the model
    reused: int = 0
    seconds: float = 0.0
    stage_seconds: defaultdict[str, float] = field(default_factory=lambda: defaultdict(float))
    errors: dict[str, str] = field(default_factory=dict)

    def add(self, other: IngestSummary) -> None:
        for name in ("new", "changed", "unchanged", "deleted", "failed", "chunks", "reused"):
            setattr(self, name, getattr(self, name) + getattr(other, name))
        for stage, seconds in other.stage_seconds.items():
            self.stage_seconds[stage] += seconds
        self.errors.update(other.errors)

    def as_dict(self) -> dict[str, Any]:
        return {
            "new": self.new,
            "changed": self.changed,
            "unchanged": self.unchanged,
            "deleted": self.deleted,
            "failed": self.failed,
            "chunks": self.chunks,
            "reused": self.reused,
            "seconds": round(self.seconds, 2),
            "stage_seconds": {k: round(v, 2) for k, v in self.stage_seconds.items()},
            "errors": self.errors,
        }


# --- scanning -------------------------------------------------------------------------------------------------


def safe_source_id(relative: str) -> str:
    """Normalise a relative path into a source id; refuses absolute paths and traversal (`..`)."""
    relative = relative.replace("\\", "/")
    path = PurePosixPath(relative)
    if path.is_absolute() or any(part in ("..", "") for part in path.parts) or not path.parts:
        raise ValidationFailed(f"unsafe file name {relative!r}: absolute paths and '..' are not allowed")
    if any(ord(ch) < 32 for ch in relative):
        raise ValidationFailed("file name contains control characters")
    return str(path)


def folder_scan(root: Path) -> list[tuple[str, Path]]:
    """(relative POSIX path, absolute path) for every candidate file under root, sorted, no symlink escapes."""
    root = root.resolve()
    if not root.is_dir():
        raise ValidationFailed(f"{root} is not a directory")
    found = []
    for path in sorted(root.rglob("*")):
        if not path.is_file() or any(part.startswith(".") for part in path.relative_to(root).parts):
            continue
        if path.suffix.lower() not in SUPPORTED_SUFFIXES:
            continue
        real = path.resolve()
        if root not in real.parents:
            continue  # a symlink pointing outside the ingested root
        found.append((path.relative_to(root).as_posix(), path))
    return found


def file_hash(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


# --- staging (CPU: parse, chunk, analyse, recognise) ---------------------------------------------------------


@functools.cache
def _count_tokens() -> Callable[[str], int]:
    from knowledge.chunking import make_token_counter

    return make_token_counter()


def document_stage(
    *,
    source: str,
    path: Path,
    root: str,
    content_hash: str,
    options: IngestOptions,
    gazetteer: dict[str, tuple[str, str]],
    timings: defaultdict[str, float],
) -> StagedDocument:
    """Parse, chunk, analyse one file. Raises knowledge.parsing.ParseError on bad input."""
    from django.conf import settings

    from knowledge.chunking import chunk_blocks
    from knowledge.parsing import parse_file
    from knowledge.recognisers import explicit_references, recognise
    from knowledge.text import analyze
    from screening.injection import detect_injection, looks_like_injection

    started = time.perf_counter()
    parsed = parse_file(
        path,
        max_bytes=settings.ATHENA_MAX_UPLOAD_BYTES,
        max_uncompressed=settings.ATHENA_MAX_UNCOMPRESSED_BYTES,
        max_pdf_pages=settings.ATHENA_MAX_PDF_PAGES,
        max_seconds=settings.ATHENA_MAX_PARSE_SECONDS or None,
    )
    timings["parse"] += time.perf_counter() - started

    started = time.perf_counter()
    drafts = chunk_blocks(parsed, count_tokens=_count_tokens(), max_tokens=settings.ATHENA_CHUNK_TOKENS)
    timings["chunk"] += time.perf_counter() - started

    started = time.perf_counter()
    title = parsed.title or PurePosixPath(source).name
    chunks = []
    for draft in drafts:
        section = " > ".join(draft.section_path)
        counts = Counter(analyze(f"{section}\n{draft.text}" if section else draft.text))
        # ingest uses the low-false-positive detector: manuals legitimately say "ignore the previous line"
        flagged = looks_like_injection(draft.text)
        matches = list(detect_injection(draft.text).matches or ("heuristic",)) if flagged else []
        chunks.append(
            StagedChunk(
                ordinal=draft.ordinal,
                text=draft.text,
                section_path=section,
                page=draft.page,
                token_count=draft.token_count,
                terms=dict(counts),
                doc_len=sum(counts.values()),
                entities=[],
                entity_counts={},
                injection_matches=matches,
                code_lines=draft.code_lines,
            )
        )
    timings["index_prep"] += time.perf_counter() - started

    started = time.perf_counter()
    metadata_vendor = (options.vendor or str(parsed.metadata.get("vendor", ""))).strip()
    staged_chunks = []
    for chunk in chunks:
        hits = recognise(chunk.text, gazetteer=gazetteer)
        entity_counts: Counter[tuple[str, str]] = Counter((h.kind, h.name) for h in hits)
        displays = {(h.kind, h.name): h.surface for h in hits}
        if metadata_vendor:
            key = ("vendor", metadata_vendor.lower())
            entity_counts[key] += 1
            displays[key] = metadata_vendor
        staged_chunks.append(
            dataclasses.replace(
                chunk,
                entities=[(k, n, displays[(k, n)]) for k, n in entity_counts],
                entity_counts=dict(entity_counts),
            )
        )
    links = [(link, "hyperlink") for link in parsed.links]
    full_text = "\n".join(c.text for c in drafts)
    links += [(ref, "reference") for ref in explicit_references(full_text)]
    timings["graph"] += time.perf_counter() - started

    return StagedDocument(
        source=source,
        source_path=str(path),
        source_root=root,
        content_hash=content_hash,
        title=title,
        author=parsed.author,
        updated_at=parsed.updated_at,
        metadata=dict(parsed.metadata),
        links=sorted(set(links)),
        chunks=staged_chunks,
        options=options.as_dict(),
    )


def staged_embed(staged: Sequence[StagedDocument], *, timings: defaultdict[str, float]) -> int:
    """Embed the chunks of many documents in one call: batching across documents is what makes it fast.

    A chunk whose vectors the index already holds (the same `embedding_key`: model, text read, sentence spans)
    takes them from there, and a text met twice in the batch is embedded once, so a new version of a document
    pays only for its changed chunks and a re-index after an analyser upgrade embeds nothing. Returns the
    number of chunks that took stored vectors."""
    from knowledge.embedders import PoolingEmbedder, get_embedder, passages_embed

    embedder = get_embedder()
    embedder.warm_up()  # loading settles the name (an int8 runtime names its vectors apart)
    inputs = [embedding_input(d.title, c.section_path, c.text) for d in staged for c in d.chunks]
    keys = [embedding_key(embedder.name, text, spans) for text, spans in inputs]
    started = time.perf_counter()
    # a pooling embedder takes no vectors from a chunk stored without sentence vectors: it gives them now
    known = chunk_vectors_stored(keys=keys, with_sentence_vectors=isinstance(embedder, PoolingEmbedder))
    wanted: dict[str, int] = {}  # key -> its place among the texts embedded now
    todo: list[tuple[str, list[tuple[int, int] | None]]] = []
    for key, item in zip(keys, inputs, strict=True):
        if key not in known and key not in wanted:
            wanted[key] = len(todo)
            todo.append(item)
    # one forward pass gives the chunk's vector and its sentences' (answering compares those with the question
    # instead of embedding sentence windows while the asker waits)
    new_vectors, new_packed = passages_embed(embedder, todo)
    timings["embed"] += time.perf_counter() - started
    vectors = np.zeros((len(keys), embedder.dimension), dtype=np.float32)
    packed: list[bytes | None] = []
    for i, key in enumerate(keys):
        if key in wanted:
            vectors[i] = new_vectors[wanted[key]]
            packed.append(new_packed[wanted[key]])
        else:
            vectors[i], sentence_vectors = known[key]
            packed.append(sentence_vectors)
    offset = 0
    for document in staged:
        end = offset + len(document.chunks)
        document.embeddings = vectors[offset:end]
        document.sentence_vectors = packed[offset:end]
        document.embedding_keys = keys[offset:end]
        document.embedding_model = embedder.name
        offset = end
    return sum(1 for key in keys if key in known)


def embedding_models_stale() -> list[str]:
    """Names of the models that made stored chunk vectors other than the configured embedder (after an upgrade
    or a change of ATHENA_EMBEDDER_*: retrieval refuses dense search until `reembed` runs). Loads the embedder
    only when there are vectors to compare (its name carries the variant once loaded)."""
    from knowledge.embedders import get_embedder
    from knowledge.index_selectors import chunk_embedding_models

    stored = chunk_embedding_models()
    if not stored:
        return []
    embedder = get_embedder()
    embedder.warm_up()
    return [name for name in stored if name != embedder.name]


# --- documents --------------------------------------------------------------------------------------------------


def _tier_rank(tier: str) -> int:
    return AccessTier.values.index(tier) if tier in AccessTier.values else 0


def _apply_options(
    document: Document, options: IngestOptions, metadata: dict[str, Any], *, existing: bool
) -> None:
    """Command-line options win over document metadata; metadata fills what options leave empty. A re-ingest
    never loosens an existing document's access: its tier can only rise (to the option's or the document's
    own metadata tier), and it keeps its owner and expiry (its owner uploading it again only renews the
    expiry); changing an ACL otherwise is document_set_acl's job (admin, audited)."""
    if not existing:
        document.access_tier = options.access_tier or AccessTier.INTERNAL
    elif _tier_rank(options.access_tier) > _tier_rank(document.access_tier):
        document.access_tier = options.access_tier
    tier = str(metadata.get("access_tier", "")).lower()
    if tier in AccessTier.values and _tier_rank(tier) > _tier_rank(document.access_tier):
        document.access_tier = tier  # a document may ask to be more restricted than its folder, never less
    doc_type = options.doc_type or str(metadata.get("doc_type", "")).lower()
    document.doc_type = doc_type if doc_type in DocType.values else DocType.OTHER
    document.department = options.department or str(metadata.get("department", ""))[:100]
    document.vendor = options.vendor or str(metadata.get("vendor", ""))[:100]
    if not existing:
        document.owner_id = options.owner_id
    document.expires_at = ingest_expiry(document if existing else None, options)
    review = metadata.get("review_by")
    if review:
        try:
            document.review_by = datetime.fromisoformat(str(review)).date()
        except ValueError:
            pass


def ingest_expiry(document: Document | None, options: IngestOptions) -> datetime | None:
    """The expiry a document has once ingested with `options` (`document`: the existing row, None for a new
    one): a new document gets the options' expiry; an existing one keeps its own, except that its owner
    uploading the file again renews it (the upload API renews it too, before the file is queued), whatever a
    queued batch or a folder's options say."""
    if document is None:
        return options.expires_at
    if (
        options.owner_id is not None
        and options.owner_id == document.owner_id
        and options.expires_at is not None
        and document.expires_at is not None
        and options.expires_at > document.expires_at
    ):
        return options.expires_at
    return document.expires_at


def _groups(names: Iterable[str], *, create: bool = True) -> list[Group]:
    """The groups a document's ACL is about to name (every service that sets one passes here)."""
    from athena.services import groups_held

    names = list(dict.fromkeys(names))
    groups_count_check(len(names))
    return groups_held(names=names, create=create)  # held until the caller commits: see there


def groups_count_check(count: int) -> None:
    """Refuse an ACL of more groups than a document's chunks can carry (knowledge.models.MAX_DOCUMENT_GROUPS)."""
    if count > MAX_DOCUMENT_GROUPS:
        raise ValidationFailed(
            f"a document can be shared with at most {MAX_DOCUMENT_GROUPS} groups, not {count}: "
            "share it with fewer, wider groups",
            details={"groups": count, "most": MAX_DOCUMENT_GROUPS},
        )


def document_index_staged(*, staged: StagedDocument) -> Document:
    options = IngestOptions.from_dict(staged.options)
    with transaction.atomic():
        document, created = Document.objects.select_for_update().get_or_create(source=staged.source)
        if created and options.existing_only:
            raise DocumentRemoved("deleted while its re-ingest was queued; not indexed again")
        # a document whose first ingest failed already carries the ACL it was given then: keep it on retry
        existing = not created
        # read before the options apply: a restricted or confidential document with no groups is readable by
        # nobody (an admin closed it, or its last group was deleted), and groups would open it to their members
        was_open = (
            existing
            and document.access_tier in OPEN_TIERS
            and document.owner_id is None
            and not document.allowed_groups.exists()
        )
        _apply_options(document, options, staged.metadata, existing=existing)
        document.save()
        # the folder's groups, else the document's own `Allowed-Groups` field when the folder leaves it open to
        # every employee (so that they can only narrow it: a folder of restricted documents with no groups is
        # readable by nobody, and a file cannot open it), and never on a private upload, which its owner alone
        # reads (groups would share it)
        folder_open = (options.access_tier or AccessTier.INTERNAL) in OPEN_TIERS and not options.owner_id
        groups = options.acl_groups or (declared_groups(staged.metadata) if folder_open else ())
        if not existing:
            document.allowed_groups.set(_groups(groups))
        elif groups and was_open:
            # groups narrow a document every employee could read; any other document keeps its groups
            document.allowed_groups.set(_groups(groups))
        return document_replace_chunks(staged=staged, document=document)


def declared_groups(metadata: dict[str, Any]) -> tuple[str, ...]:
    """The groups a document names in its own `Allowed-Groups` field (front matter, a plain text's header, an
    HTML meta tag): a list, or names separated by commas or semicolons (a list that travelled to the embed
    queue as its text, "['a', 'b']", reads the same)."""
    value = metadata.get("allowed_groups")
    names = value if isinstance(value, list | tuple) else re.split(r"[,;\[\]'\"]", str(value or ""))
    return tuple(dict.fromkeys(str(name).strip()[:150] for name in names if str(name).strip()))


def document_record_failure(
    *, source: str, path: Path, root: str, error: str, options: IngestOptions
) -> None:
    """Mark a document failed without touching a previously indexed version's chunks (they stay served)."""
    if options.existing_only and not Document.objects.filter(source=source).exists():
        return  # a re-ingest of a document deleted since: nothing to mark
    document, created = Document.objects.get_or_create(
        source=source,
        defaults={
            "status": DocumentStatus.FAILED,
            "access_tier": options.access_tier or AccessTier.INTERNAL,
            # a private upload that fails is still its owner's (who is told why) and still expires
            "owner_id": options.owner_id,
            "expires_at": options.expires_at,
        },
    )
    Document.objects.filter(pk=document.pk).update(
        error=error[:2000],
        attempts=F("attempts") + 1,
        source_path=str(path),
        source_root=root,
        # decided in the statement, on the row as it is now: an indexed document keeps serving its version,
        # and a removed one stays removed (a batch queued before the removal may fail afterwards)
        status=Case(
            When(status__in=[DocumentStatus.INDEXED, DocumentStatus.TOMBSTONED], then=F("status")),
            default=Value(DocumentStatus.FAILED),
        ),
    )
    if created:
        with transaction.atomic():  # the groups are held (FOR NO KEY UPDATE) until their rows are written
            document.allowed_groups.set(_groups(options.acl_groups))


def database_now() -> datetime:
    """The database server's clock. The moments that are compared with each other across hosts (when an
    ingest was requested and when a document was removed or expired: knowledge.indexing.document_replace_chunks,
    uploads_expire, document_expiry_changed) are all read from it, and retrieval's expiry test is its now():
    the web host, the host running `manage.py remove` and the workers need not agree on the time (a removal
    made on a host five minutes behind looked older than the nightly batch queued before it, which brought
    the removed document back)."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT clock_timestamp()")
        return cursor.fetchone()[0]


def document_tombstone(*, document: Document) -> None:
    """Take the document out of the index, recording when (a batch whose ingest was requested before then does
    not bring it back: knowledge.indexing.document_replace_chunks)."""
    documents_tombstone(document_ids=[document.pk])


def documents_tombstone(*, document_ids: Sequence[int], live_only: bool = False) -> list[int]:
    """Take the documents out of the index together (see document_tombstone); returns the ids of those taken
    out: those that exist and, with `live_only`, were not tombstoned already (seen under their row lock). Their
    rows are locked first, in id order, with the lock document_replace_chunks takes: a version being swapped in
    commits first and its chunks are removed here, one swapped in later sees the tombstone. Then all their
    chunks leave in one removal (knowledge.indexing.documents_remove_chunks), so that the edges and BM25's
    statistics are locked once each, in the order indexing locks them."""
    with transaction.atomic():
        locked = Document.objects.select_for_update().filter(pk__in=list(document_ids)).order_by("pk")
        if live_only:
            locked = locked.exclude(status=DocumentStatus.TOMBSTONED)
        ids = list(locked.values_list("pk", flat=True))
        documents_remove_chunks(document_ids=ids)
        Document.objects.filter(pk__in=ids).update(
            status=DocumentStatus.TOMBSTONED, chunk_count=0, tombstoned_at=database_now()
        )
    return ids


def documents_remove(
    *,
    documents: Sequence[Document],
    actor: Any,
    detail: dict[str, Any],
    record_empty: bool = False,
    live_only: bool = False,
) -> list[str]:
    """Take documents out of the index and record one `documents_removed` event naming them, `detail` in its
    payload with their count: an admin's delete or tombstone (`{"how": ...}`), `manage.py remove` of a folder
    (`{"folder": ...}`, recorded even when nothing matched, with that verdict: someone asked for it), a folder
    sync that found their files gone. `live_only`: a document tombstoned meanwhile (seen under its row lock) is
    left out, neither tombstoned again nor named. Returns their source ids, in the order given."""
    from audit.services import audit_record

    with transaction.atomic():
        removed = set(documents_tombstone(document_ids=[d.pk for d in documents], live_only=live_only))
        sources = [document.source for document in documents if document.pk in removed]
        if sources or record_empty:
            audit_record(
                kind="documents_removed",
                actor=actor,
                documents=sources,
                payload={**detail, "count": len(sources)},
                verdict="removed" if sources else "nothing_matched",
            )
    return sources


def document_lock_for_reference(*, document_id: int) -> bool:
    """Hold the document against deletion until the caller's transaction ends, before a row of another app is
    pointed at it; False when it does not exist (or a delete under way, which this waited for, removed it).

    Django carries out on_delete itself, on the rows it sees when a delete starts, and PostgreSQL checks the
    foreign key at commit: a reference written beside a delete fails there. FOR NO KEY UPDATE conflicts with the
    delete (and document_tombstone's lock, which the admin's delete takes first) but not with the key-share
    locks of other foreign-key checks."""
    return Document.objects.select_for_update(no_key=True).filter(pk=document_id).exists()


def _document_locked(document_id: int) -> Document:
    """The document's row under its lock; a document deleted meanwhile (the lock waited for the delete)
    answers as any missing one."""
    document = Document.objects.select_for_update().filter(pk=document_id).first()
    if document is None:
        raise NotFound(NOT_FOUND_MESSAGE)
    return document


def document_acl_sync(*, document: Document, actor: Any = None) -> int:
    """Copy the document's ACL and filter fields onto its chunks and audit the change. The row is read again
    under its lock (the one an ingest takes to swap a version in): the caller's copy may predate an ingest that
    committed since, and the chunks must get the document as it is."""
    from audit.services import audit_record

    with transaction.atomic():
        document = _document_locked(document.pk)
        count = document_sync_chunk_acl(document=document)
        audit_record(
            kind="acl_change",
            actor=actor,
            documents=[document.source],
            payload={
                "document": document.source,
                "access_tier": document.access_tier,
                "groups": sorted(document.allowed_groups.values_list("name", flat=True)),
                "chunks_updated": count,
            },
        )
    return count


def document_set_acl(
    *, document: Document, access_tier: str, groups: Sequence[str], actor: Any, create_groups: bool = True
) -> Document:
    """Set the document's access tier and groups, on the row as it is now (read again under its lock: the
    caller's copy may predate an ingest that committed since), and sync its chunks. Returns the document.
    A group missing is created, or with `create_groups=False` refused (ValidationFailed: the ACL API, where a
    mistyped name must not hide the document behind a new, empty group); one deleted while this waited for
    its lock is a Conflict (athena.services.groups_held)."""
    _check_access_tier(access_tier)
    with transaction.atomic():
        document = _document_locked(document.pk)
        document.access_tier = access_tier
        document.save(update_fields=["access_tier"])
        document.allowed_groups.set(_groups(groups, create=create_groups))
        document_acl_sync(document=document, actor=actor)
    return document


def uploads_expire(*, now: datetime | None = None) -> int:
    """Tombstone every document whose expiry has passed (its chunks leave the index; retrieval and the citation
    viewer hide it from the moment it expires) and delete the file of a private upload; each expiry is audited
    (`upload_expired` for a private upload, `document_expired` for any other). An expired upload tombstoned
    already whose file is still there (its deletion failed, or the worker died after the commit) has the file
    deleted now. Each document is handled on its own: one that fails is logged and tried again next time.
    Returns how many expired."""
    from django.conf import settings

    from audit.services import audit_record

    now = now or database_now()
    uploads = (Path(settings.MEDIA_ROOT) / "uploads").resolve()
    count = 0
    for document in Document.objects.filter(expires_at__lte=now).order_by("pk"):
        try:
            path = Path(document.source_path).resolve() if document.source_path else None
            if document.owner_id is None or (path is not None and not path.is_relative_to(uploads)):
                path = None  # only ever a private upload's file, in the upload area
            if document.status != DocumentStatus.TOMBSTONED:
                with transaction.atomic():
                    # read again under the row lock: the rows were listed before the loop, and the owner may
                    # have uploaded the file again since (renewing its expiry), or it was tombstoned meanwhile
                    current = (
                        Document.objects.select_for_update()
                        .filter(pk=document.pk, expires_at__lte=now)
                        .exclude(status=DocumentStatus.TOMBSTONED)
                        .first()
                    )
                    if current is None:
                        continue
                    document_tombstone(document=current)
                    audit_record(
                        kind="upload_expired" if document.owner_id is not None else "document_expired",
                        actor=None,
                        documents=[document.source],
                        payload={"document": document.source, "owner_id": document.owner_id},
                    )
                count += 1
                document.refresh_from_db(fields=["tombstoned_at"])
            # a file written after the tombstone is the same name uploaded again (also when it was written
            # between this tombstone and here)
            if path is None or not path.exists() or _written_after(path, document.tombstoned_at):
                continue
            path.unlink(missing_ok=True)
        except Exception:
            logger.exception("expiring the document %s failed; tried again next time", document.source)
    return count


def _written_after(path: Path, moment: datetime | None) -> bool:
    return moment is not None and path.stat().st_mtime >= moment.timestamp()


@transaction.atomic
def groups_delete(*, groups: QuerySet[Group]) -> None:
    """Delete groups (an admin's delete). The documents that name them, then the groups, are locked before Django
    looks for the rows that point at the groups (document ACLs, memberships): an ACL or a membership being
    written meanwhile (athena.services.groups_held) commits first and is deleted with its group, instead of the
    delete missing it and failing at commit. Documents before groups, as an ACL change takes them
    (document_set_acl), so the two never wait for each other in a cycle; group_deleted_close_documents then
    finds its documents locked already."""
    ids = list(groups.values_list("pk", flat=True))
    naming = Document.objects.select_for_update(of=("self",)).filter(allowed_groups__in=ids).order_by("pk")
    list(naming.values_list("pk", flat=True))
    held = Group.objects.select_for_update().filter(pk__in=ids).order_by("pk").values_list("pk", flat=True)
    Group.objects.filter(pk__in=list(held)).delete()


def group_delete_documents(*, group: Group) -> list[int]:
    """Before a Group is deleted: the ids of the documents that name it, for group_deleted_close_documents
    (its rows in the documents' groups are gone by then)."""
    return list(Document.objects.filter(allowed_groups=group).values_list("id", flat=True))


def group_deleted_close_documents(*, group_id: int, group_name: str, document_ids: Sequence[int]) -> None:
    """After a Group was deleted: its id is retired (RetiredGroup: never given to a group again), and a document
    it left with no group would, with an open tier, be readable by every employee; such a document becomes
    restricted (readable by nobody until an admin sets its ACL): deleting groups never opens a document. Decided
    once the group's rows are gone, so that other groups deleted in the same action (a queryset delete, the
    admin's "delete selected") do not count as left. Each document's chunks then get its ACL, and each change is
    audited; a chunk whose copy differs only by the retired id is not written again (no one can hold the id)."""
    through = Document.allowed_groups.through
    actor = f"group deleted: {group_name}"[:150]
    # before the documents' sync, which reads the chunks' copies without the retired ids
    RetiredGroup.objects.get_or_create(group_id=group_id, defaults={"name": group_name[:150]})
    for document_id in sorted(document_ids):
        with transaction.atomic():
            document = Document.objects.select_for_update().filter(pk=document_id).first()
            if document is None:
                continue
            if (
                document.access_tier in OPEN_TIERS
                and not through.objects.filter(document_id=document.pk).exists()
            ):
                Document.objects.filter(pk=document.pk).update(access_tier=AccessTier.RESTRICTED)
            document_acl_sync(document=document, actor=actor)


def document_expiry_changed(
    *, document: Document, previous: datetime | None, on_queued: QueuedCallback | None = None
) -> bool:
    """After an admin changed the document's expiry (from `previous`): a document that the expiry removed
    (tombstoned by uploads_expire once `previous` had passed) and that is no longer expired is re-ingested from
    its source file (document_reingest: queued on commit, `on_queued` told the outcome), as nothing else brings
    it back before the next folder sync. A document removed before it expired stays removed. Returns whether a
    re-ingest was asked for."""
    now = database_now()
    document = Document.objects.get(pk=document.pk)
    removed_by_expiry = (
        document.status == DocumentStatus.TOMBSTONED
        and previous is not None
        and document.tombstoned_at is not None
        and document.tombstoned_at >= previous
    )
    if not removed_by_expiry or (document.expires_at is not None and document.expires_at <= now):
        return False
    document_reingest(document=document, on_queued=on_queued)
    return True


# told, once the transaction committed, whether the re-ingest was queued: None when it was, else why not
QueuedCallback = Callable[[Unavailable | None], None]


def document_reingest(*, document: Document, on_queued: QueuedCallback | None = None) -> None:
    """Queue the document's source file again (forcing work even if unchanged). The batch carries no access
    options: when it runs, the document keeps the ACL, owner and expiry it has then (an admin may change them
    meanwhile), and a document deleted meanwhile is not created again (IngestOptions.existing_only). Queued
    without awaiting a result, once the transaction commits. A broker that cannot be reached raises kombu's
    OperationalError, which the API answers with 503 (athena.errors.dependency_unavailable); with `on_queued`
    the caller is told instead (a request whose transaction has already committed, such as an admin form's,
    cannot answer 503 for it). The document's emptied hash stays, so the next folder sync indexes it anyway."""
    from knowledge.tasks import files_seal, ingest_files_task

    Document.objects.filter(pk=document.pk).update(content_hash="")
    options = IngestOptions(
        department=document.department,
        doc_type=document.doc_type,
        vendor=document.vendor,
        existing_only=True,
        # requested now: a removal made while the batch waits in the queue wins over it
        requested_at=database_now(),
    )
    files = [[document.source, document.source_path]]
    # without ignore_result Celery first subscribes to the result store, and a Redis that is down fails there
    # with a RuntimeError instead of the broker's error

    def queue() -> None:
        try:
            ingest_files_task.apply_async(
                (None, document.source_root, files_seal(files), options.as_dict()), ignore_result=True
            )
        except Exception as exc:
            unavailable = dependency_unavailable(exc)
            if on_queued is None or unavailable is None:
                raise
            logger.warning("re-ingest of document %s not queued: %s", document.pk, exc)
            on_queued(unavailable)
            return
        if on_queued is not None:
            on_queued(None)

    transaction.on_commit(queue)


def documents_reindex_stale(*, limit: int) -> int:
    """Queue a re-ingest (document_reingest) of up to `limit` indexed documents whose postings an older analyser
    made (Document.analyzer_version below knowledge.text.ANALYZER_VERSION: after an upgrade), oldest first. The
    folder sync and `manage.py ingest` index such a document again when they meet it; a private upload, or a
    document ingested from a folder that is not synced, is met by neither. A document already queued (its hash
    emptied by document_reingest) is not queued again; one whose file is gone stays served as it was
    (document_record_failure). Returns how many were queued."""
    stale = list(
        Document.objects.filter(status=DocumentStatus.INDEXED, analyzer_version__lt=ANALYZER_VERSION)
        .exclude(content_hash="")
        .order_by("pk")[:limit]
    )
    with transaction.atomic():
        for document in stale:
            document_reingest(document=document)
    return len(stale)


# --- batches and runs ------------------------------------------------------------------------------------------


def files_stage(
    *,
    root: str,
    files: Sequence[tuple[str, str]],
    options: IngestOptions,
    force: bool = False,
    requested_at: datetime | None = None,
) -> tuple[IngestSummary, list[StagedDocument]]:
    """Stage a batch of files (hash, parse, chunk, analyse), recording per-file errors without stopping.
    Unchanged files cost one hash and one query. `requested_at`: when the ingest was requested (an ingest
    run's start; else when the batch was queued, IngestOptions.requested_at; by default now), carried by each
    staged document (StagedDocument.requested_at). Returns the summary so far and the documents to embed."""
    now = database_now()
    requested_at = requested_at or options.requested_at or now
    summary = IngestSummary()
    gazetteer = vendor_gazetteer()
    staged: list[StagedDocument] = []
    known = {d.source: d for d in Document.objects.filter(source__in=[s for s, _ in files])}
    for source, path_text in files:
        path = Path(path_text)
        known_document = known.get(source)
        expiry = ingest_expiry(known_document, options) if known_document is not None else None
        if expiry is not None and expiry <= now:
            # an expired document is readable by nobody and would be tombstoned again within the hour
            # (uploads_expire): it is not indexed again, every night, until an admin renews its expiry (which
            # re-ingests it: document_expiry_changed). Counted unchanged (the index does not change), and the
            # run says why.
            summary.unchanged += 1
            summary.errors[source] = (
                f"not indexed: expired at {expiry.isoformat(timespec='seconds')}; an admin may renew its expiry"
            )
            continue
        try:
            content_hash = file_hash(path)
        except OSError as exc:
            summary.failed += 1
            summary.errors[source] = f"unreadable: {exc.strerror or exc}"
            document_record_failure(
                source=source, path=path, root=root, error=summary.errors[source], options=options
            )
            continue
        existing = known.get(source)
        indexed = existing is not None and existing.status == DocumentStatus.INDEXED
        if (
            not force
            and indexed
            and existing is not None
            and existing.content_hash == content_hash
            # postings made by an older analyser no longer match the questions' terms: index again
            and existing.analyzer_version == ANALYZER_VERSION
        ):
            summary.unchanged += 1
            continue
        try:
            document = document_stage(
                source=source,
                path=path,
                root=root,
                content_hash=content_hash,
                options=options,
                gazetteer=gazetteer,
                timings=summary.stage_seconds,
            )
        except Exception as exc:  # one bad file never blocks the batch
            from knowledge.parsing import ParseError

            # a ParseError reads "code: message" already
            message = str(exc) if isinstance(exc, ParseError) else f"error: {exc}"
            if not isinstance(exc, ParseError):
                logger.exception("staging %s failed", source)
            summary.failed += 1
            summary.errors[source] = message
            document_record_failure(source=source, path=path, root=root, error=message, options=options)
            continue
        if indexed:
            summary.changed += 1
        else:
            summary.new += 1
        document.requested_at, document.changed = requested_at, indexed
        staged.append(document)
    return summary, staged


def staged_index(staged: Sequence[StagedDocument], summary: IngestSummary) -> None:
    """Embed all staged documents in one call, then index each in its own transaction.

    A document whose embedding or indexing fails is marked failed (document_record_failure: an earlier indexed
    version stays served) and counted `failed` with its error instead of new or changed; the rest of the batch
    goes on. A document tombstoned after its ingest was requested stays tombstoned and is counted failed. A
    database OperationalError propagates: the task that called this retries the batch."""
    for document in _staged_embed_each(staged, summary):
        t0 = time.perf_counter()
        try:
            document_index_staged(staged=document)
        except OperationalError:
            raise
        except DocumentRemoved as exc:
            _staged_count_failed(summary, document, error=str(exc))
            continue
        except Exception as exc:  # one bad document never blocks the batch
            logger.exception("indexing %s failed", document.source)
            _staged_record_failure(summary, document, error=f"indexing failed: {exc}")
            continue
        finally:
            summary.stage_seconds["index"] += time.perf_counter() - t0
        summary.chunks += len(document.chunks)


def staged_counts_each(staged: Sequence[StagedDocument]) -> list[dict[str, int]]:
    """A batch's new/changed counts shared out among its documents when it is split: one each, as files_stage
    counted it (StagedDocument.changed)."""
    return [{"changed" if document.changed else "new": 1} for document in staged]


def _staged_embed_each(staged: Sequence[StagedDocument], summary: IngestSummary) -> list[StagedDocument]:
    """Embed the batch in one call; when that fails, each document on its own, so that only the documents
    whose embedding fails are lost (a batch can fail where its documents alone do not: memory). Returns the
    documents embedded."""
    if len(staged) > 1:
        try:
            summary.reused += staged_embed(staged, timings=summary.stage_seconds)
            return list(staged)
        except OperationalError:
            raise
        except Exception:
            logger.exception(
                "embedding a batch of %d documents failed; embedding each on its own", len(staged)
            )
    embedded = []
    for document in staged:
        try:
            summary.reused += staged_embed([document], timings=summary.stage_seconds)
        except OperationalError:
            raise
        except Exception as exc:
            logger.exception("embedding %s failed", document.source)
            _staged_record_failure(summary, document, error=f"embedding failed: {exc}")
            continue
        embedded.append(document)
    return embedded


def _staged_record_failure(summary: IngestSummary, document: StagedDocument, *, error: str) -> None:
    """Count a staged document failed and mark it failed. Recording it may fail in turn (a source id too long
    for the table never had a row): that is logged, and the document is still counted failed."""
    _staged_count_failed(summary, document, error=error)
    try:
        with transaction.atomic():  # a savepoint: a failed write leaves the caller's transaction usable
            document_record_failure(
                source=document.source,
                path=Path(document.source_path),
                root=document.source_root,
                error=error,
                options=IngestOptions.from_dict(document.options),
            )
    except OperationalError:
        raise
    except Exception:
        logger.exception("recording the failure of %s failed", document.source)


def _staged_count_failed(summary: IngestSummary, document: StagedDocument, *, error: str) -> None:
    """Count a staged document `failed` instead of the new or changed count files_stage gave it."""
    name = "changed" if document.changed else "new"
    setattr(summary, name, max(getattr(summary, name) - 1, 0))
    summary.failed += 1
    summary.errors[document.source] = error


def files_ingest(
    *, root: str, files: Sequence[tuple[str, str]], options: IngestOptions, force: bool = False
) -> IngestSummary:
    """Ingest a batch of files in this process: stage, embed all at once, index each document atomically."""
    started = time.perf_counter()
    summary, staged = files_stage(root=root, files=files, options=options, force=force)
    staged_index(staged, summary)
    summary.seconds = time.perf_counter() - started
    return summary


def folder_tombstone_missing(*, root: str, prefix: str, present: set[str], run_id: int | None = None) -> int:
    """Documents ingested from this root (and prefix) whose file is gone are tombstoned, with one
    `documents_removed` event naming them (none when nothing went): a document leaves the index on the record
    whether an admin, `manage.py remove` or a folder sync took it out. `run_id` is the ingest run that found
    them gone. Returns how many."""
    gone = list(
        Document.objects.filter(source_root=root, source__startswith=prefix)
        .exclude(status=DocumentStatus.TOMBSTONED)
        .exclude(source__in=present)
        .order_by("source")
    )
    detail: dict[str, Any] = {"folder": root, "how": "file gone from the folder"}
    if run_id is not None:
        detail["ingest_run"] = run_id
    return len(documents_remove(documents=gone, actor=None, detail=detail, live_only=True))


def folder_remove(*, root: Path, actor: Any = None) -> list[str]:
    """Tombstone every live document ingested from `root` or a folder beneath it (e.g. the demo knowledge base
    before loading one's own documents) and record one audit event naming them. Returns their source ids.

    Private uploads are left alone: they belong to their owner and expire by themselves."""
    folder = str(root.resolve())
    with transaction.atomic():
        documents = list(
            Document.objects.filter(
                Q(source_root=folder) | Q(source_root__startswith=folder.rstrip("/") + "/")
            )
            .filter(owner__isnull=True)
            .exclude(status=DocumentStatus.TOMBSTONED)
            .order_by("source")
        )
        return documents_remove(
            documents=documents, actor=actor, detail={"folder": folder}, record_empty=True, live_only=True
        )


def document_paths_relocate(*, moves: Sequence[tuple[str, str]]) -> int:
    """After a restore onto another machine or into another folder (`manage.py restore`): the absolute paths
    that documents store (`source_path`, `source_root`) and that lie in a moved folder are pointed into its new
    place, so that an expired upload's file is deleted, a re-ingest reads the file, and `remove` finds a
    folder's documents. `moves` are (old folder, new folder), the most specific first: a path moves with the
    first folder it lies in. Returns how many documents changed."""
    moves = [(old.rstrip("/"), new.rstrip("/")) for old, new in moves if old.rstrip("/") != new.rstrip("/")]

    def inside(field: str, folder: str) -> Q:
        return Q(**{field: folder}) | Q(**{f"{field}__startswith": folder + "/"})

    def moved(field: str) -> Case:
        return Case(
            *(
                When(
                    inside(field, old),
                    then=Concat(Value(new), Substr(field, len(old) + 1), output_field=CharField()),
                )
                for old, new in moves
            ),
            default=F(field),
        )

    if not moves:
        return 0
    affected = Q()
    for old, _new in moves:
        affected |= inside("source_path", old) | inside("source_root", old)
    with transaction.atomic():
        return Document.objects.filter(affected).update(
            source_path=moved("source_path"), source_root=moved("source_root")
        )


def source_folder_failure_record(*, folder: str, error: str) -> None:
    """Record in the audit log that a configured source folder could not be synced (missing, not mounted,
    misconfigured): the other folders went on, and nothing of this one was indexed or removed."""
    from audit.services import audit_record

    audit_record(
        kind="folder_sync_failed",
        actor=None,
        payload={"folder": folder, "error": error[:2000]},
        verdict="error",
    )


def ingest_run_start(*, root: Path, options: IngestOptions) -> tuple[IngestRun, list[tuple[str, str]]]:
    options.validate()
    files = [(safe_source_id(options.prefix + rel), str(path)) for rel, path in folder_scan(root)]
    run = IngestRun.objects.create(
        root=str(root.resolve()),
        total=len(files),
        options=options.as_dict(),
        counts=IngestSummary().as_dict(),
    )
    # the request time of the run's batches (ingest_run_requested_at), so on the database's clock (database_now)
    run.started_at = database_now()
    IngestRun.objects.filter(pk=run.pk).update(started_at=run.started_at)
    return run, files


def ingest_run_requested_at(*, run_id: int) -> datetime | None:
    """When the run's ingest was requested (the run's start; None when the run is gone): the request time its
    staged documents carry (StagedDocument.requested_at)."""
    return IngestRun.objects.filter(pk=run_id).values_list("started_at", flat=True).first()


def ingest_run_add(*, run_id: int, summary: IngestSummary) -> None:
    """Merge a batch's summary into the run (row-locked so concurrent batches add up exactly). The batch that
    finishes a run which indexed or removed anything refreshes the index's statistics
    (`knowledge.indexing.index_statistics_refresh`); a refresh that fails is logged, not raised: the counts are
    merged already, and a task retried for it would merge them again (autovacuum catches up)."""
    finished = False
    with transaction.atomic():
        run = IngestRun.objects.select_for_update().get(pk=run_id)
        counts = run.counts
        for key, value in summary.as_dict().items():
            if key == "stage_seconds":
                stages = counts.setdefault("stage_seconds", {})
                for stage, seconds in value.items():
                    stages[stage] = round(stages.get(stage, 0) + seconds, 2)
            elif key == "errors":
                counts.setdefault("errors", {}).update(value)
            elif key != "seconds":
                counts[key] = counts.get(key, 0) + value
        if ingest_run_done(counts) >= run.total and run.status == "running":
            run.status = "finished"
            run.finished_at = database_now()  # the clock of started_at
            finished = any(counts.get(key, 0) for key in ("new", "changed", "deleted"))
        run.counts = counts
        run.save(update_fields=["counts", "status", "finished_at"])
    if finished:
        try:
            # its own transaction, or a savepoint when the caller holds one: a failed ANALYZE leaves the
            # caller's transaction usable
            with transaction.atomic():
                index_statistics_refresh()
        except Exception:
            logger.warning(
                "refreshing the index statistics after ingest run %s failed", run_id, exc_info=True
            )


def ingest_run_lost(*, run_id: int) -> None:
    """Mark a running run whose remaining tasks the broker no longer holds as `lost`: it would otherwise read
    `running` for ever. Its indexed documents stay; running the same ingest again does the rest (files already
    indexed are skipped as unchanged)."""
    IngestRun.objects.filter(pk=run_id, status="running").update(status="lost", finished_at=database_now())


def ingest_run_done(counts: dict[str, Any]) -> int:
    """Files of a run accounted for so far (indexed, unchanged or failed), from its merged counts."""
    return sum(counts.get(k, 0) for k in ("new", "changed", "unchanged", "failed"))


def ingest_run_finish_if_done(run: IngestRun) -> None:
    if run.total == 0:
        IngestRun.objects.filter(pk=run.pk).update(status="finished", finished_at=database_now())


def batches(items: Sequence[Any], size: int) -> list[list[Any]]:
    return [list(items[i : i + size]) for i in range(0, len(items), size)]
