"""Documents, chunks, ACLs, curation tables (vendors, synonyms), BM25 statistics and the knowledge graph."""

from __future__ import annotations

from collections.abc import Callable, Collection
from typing import Any

from django.conf import settings
from django.contrib.auth.models import Group
from django.contrib.postgres.fields import ArrayField
from django.contrib.postgres.indexes import GinIndex
from django.contrib.postgres.search import SearchVectorField
from django.core.exceptions import ValidationError
from django.db import models
from django.db.models import F, Func, Q, Value
from pgvector.django import HnswIndex, VectorField

from athena.validators import json_problem

EMBEDDING_DIM: int = settings.ATHENA_EMBEDDER["DIMENSION"]  # type: ignore[assignment]


def json_object_check(value: Any, field: str) -> None:
    """A JSON field edited in the admin that the code reads as an object (`.get`, `{**value}`) and that the
    database can store; refused (a form error on `field`) otherwise, instead of a server error at the INSERT or
    a failure of every later ingest of the row."""
    if not isinstance(value, dict):
        raise ValidationError({field: "must be a JSON object, e.g. {}"})
    problem = json_problem(value)
    if problem:
        raise ValidationError({field: f"cannot be stored: it {problem}"})


def string_list_check(value: Any, field: str) -> None:
    """An admin-curated list of names (vendor aliases, synonym expansions): a JSON list of non-empty strings
    that the database can store. Anything else was read wrongly by every question: a string's letters taken as
    its entries, a number failing `.lower()` in the query analysis (every answer failed)."""
    if not isinstance(value, list) or not all(isinstance(item, str) and item.strip() for item in value):
        raise ValidationError(
            {field: 'must be a JSON list of non-empty strings, e.g. ["keepalive", "hello"]'}
        )
    problem = json_problem(value)
    if problem:
        raise ValidationError({field: f"cannot be stored: an entry {problem}"})


def json_fields_check(
    instance: models.Model, checks: dict[str, Callable[[Any, str], None]], exclude: Collection[str] | None
) -> None:
    """Run each field's check (full_clean's field stage: an admin form's fields, not those it leaves out)."""
    for field, check in checks.items():
        if field not in (exclude or ()):
            check(getattr(instance, field), field)


def file_name(field: str) -> Func:
    """SQL: the last path segment of a column ("a/b/c.html" -> "c.html"); link resolution matches on it, so
    both sides carry an index on this very expression."""
    return Func(F(field), Value("^.*/"), Value(""), function="regexp_replace")


class AccessTier(models.TextChoices):
    PUBLIC = "public"
    INTERNAL = "internal"
    RESTRICTED = "restricted"
    CONFIDENTIAL = "confidential"


# Tiers readable by every signed-in employee when a document names no groups. Restricted and confidential
# documents are readable only through their allowed groups; with no group they are readable by nobody.
OPEN_TIERS = (AccessTier.PUBLIC, AccessTier.INTERNAL)

# The most groups one document may name. Each of its chunks carries the groups (Chunk.acl_groups) and so does
# the chunk's row in the covering index chunk_acl_expiry_cover: past 520 to 820 groups (by how far apart their
# ids are) that row is over PostgreSQL's b-tree limit (2,704 bytes) and every write of the document's chunks
# failed (a server error on the admin's save, a failed ingest). 500 fits whatever the ids.
MAX_DOCUMENT_GROUPS = 500

# The chunk embeddings' HNSW graph. ef_construction 256 (pgvector's default is 64): questions far from every
# chunk (often unanswerable ones) reach their true nearest chunks through a denser-searched graph. Measured
# with ef_search 400 over the dev and extra questions (tests/benchmarks/README.md): recall@40 against an exact
# scan .988 -> .998, and two builds of the index answer every question alike (64: two to three answers moved
# between builds); each insert costs about 1.3 ms more (2.3 ms at 26k chunks), a full build about four times
# as long.
HNSW_M = 16
HNSW_EF_CONSTRUCTION = 256
HNSW_INDEX_SQL = (
    "CREATE INDEX IF NOT EXISTS chunk_embedding_hnsw ON knowledge_chunk USING hnsw (embedding vector_cosine_ops) "
    f"WITH (m = {HNSW_M}, ef_construction = {HNSW_EF_CONSTRUCTION})"
)


class DocType(models.TextChoices):
    SOP = "sop"
    MANUAL = "manual"
    RUNBOOK = "runbook"
    INCIDENT = "incident"
    CONFIG_GUIDE = "config_guide"
    OTHER = "other"


class DocumentStatus(models.TextChoices):
    PENDING = "pending"
    INDEXED = "indexed"
    FAILED = "failed"
    TOMBSTONED = "tombstoned"


class Document(models.Model):
    source = models.CharField(max_length=1000, unique=True, help_text="stable id: path relative to the root")
    title = models.CharField(max_length=500, blank=True)
    author = models.CharField(max_length=300, blank=True)
    doc_type = models.CharField(max_length=20, choices=DocType.choices, default=DocType.OTHER)
    department = models.CharField(max_length=100, blank=True, db_index=True)
    vendor = models.CharField(max_length=100, blank=True, db_index=True)
    access_tier = models.CharField(max_length=20, choices=AccessTier.choices, default=AccessTier.INTERNAL)
    allowed_groups = models.ManyToManyField(Group, blank=True, related_name="documents")
    content_hash = models.CharField(max_length=64, blank=True)
    analyzer_version = models.PositiveSmallIntegerField(
        default=1, help_text="knowledge.text.ANALYZER_VERSION its chunks' postings were made with"
    )
    version = models.PositiveIntegerField(default=0)
    status = models.CharField(max_length=20, choices=DocumentStatus.choices, default=DocumentStatus.PENDING)
    error = models.TextField(blank=True)
    attempts = models.PositiveIntegerField(default=0)
    source_path = models.CharField(max_length=2000, blank=True, help_text="absolute path at last ingest")
    source_root = models.CharField(max_length=2000, blank=True)
    source_updated_at = models.DateTimeField(null=True, blank=True)
    ingested_at = models.DateTimeField(null=True, blank=True)
    review_by = models.DateField(null=True, blank=True)
    superseded_by = models.ForeignKey(
        "self", null=True, blank=True, on_delete=models.SET_NULL, related_name="supersedes"
    )
    owner = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        # a user with uploads is deactivated, not deleted: a cascade would drop chunks past the services
        # (BM25 statistics, files, audit); the uploads expire by themselves
        on_delete=models.PROTECT,
        related_name="private_documents",
        help_text="set for private uploads only",
    )
    expires_at = models.DateTimeField(null=True, blank=True)
    # when it was last tombstoned: a version staged before then is not swapped in (a removal wins over a batch
    # already queued)
    tombstoned_at = models.DateTimeField(null=True, blank=True, editable=False)
    metadata = models.JSONField(default=dict, blank=True)
    injection_flags = models.PositiveIntegerField(default=0)
    chunk_count = models.PositiveIntegerField(default=0)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        indexes = [
            models.Index(fields=["status"]),
            models.Index(fields=["source_root"]),
            models.Index(file_name("source"), name="document_source_file_name"),
        ]

    def __str__(self) -> str:
        return self.title or self.source

    def clean_fields(self, exclude: Collection[str] | None = None) -> None:
        super().clean_fields(exclude)
        json_fields_check(self, {"metadata": json_object_check}, exclude)


class RetiredGroup(models.Model):
    """The id of a deleted group (recorded by the database whoever deletes the row, migration 0021), never given to
    a group again (a trigger on auth_group refuses it, migration 0017; checked once the row is written, 0019, so
    that an id written while its group's delete is still open waits for that delete and is then refused; against
    this table in its schema, never a session's temporary table of the same name, 0020; the column's default
    draws past retired ids, 0022, so a sequence set back below them by loaddata or `sqlsequencereset` does not
    fail group creations). Deleting a group leaves its
    id in the ACL copies of chunks whose document keeps other groups (or none): rewriting them cost every chunk row
    again in every index, the HNSW graph included (a group named by 200 documents took a minute in one admin
    request), and no principal can hold the id any more, unless a group were created with it again (an explicit id:
    loaddata, or a sequence reset to the highest id). The chunks' sync (knowledge.indexing.document_sync_chunk_acl)
    reads the copies without these ids. A principal built before the delete (a question being answered) keeps the id
    until it is done, as it keeps a membership removed meanwhile: access is decided on the groups read when the work
    began (Principal.from_user)."""

    group_id = models.BigIntegerField(primary_key=True)
    name = models.CharField(max_length=150)
    retired_at = models.DateTimeField(auto_now_add=True)

    def __str__(self) -> str:
        return f"{self.name} ({self.group_id})"


class Chunk(models.Model):
    """One retrievable passage. ACL and filter fields are copied from the document so that every source's
    SQL can filter inside the index scan (an HNSW scan cannot join before its top-k cut)."""

    document = models.ForeignKey(Document, on_delete=models.CASCADE, related_name="chunks")
    ordinal = models.PositiveIntegerField()
    text = models.TextField()
    section_path = models.CharField(max_length=1000, blank=True)
    page = models.PositiveIntegerField(null=True, blank=True)
    token_count = models.PositiveIntegerField(default=0)
    doc_len = models.PositiveIntegerField(default=0, help_text="number of BM25 terms")
    prev = models.OneToOneField("self", null=True, blank=True, on_delete=models.SET_NULL, related_name="next")
    content_hash = models.CharField(max_length=64)
    embedding = VectorField(dimensions=EMBEDDING_DIM, null=True, blank=True)
    embedding_model = models.CharField(max_length=200, blank=True)
    # sha256 of what produced `embedding` and `sentence_vectors`: the model's name, the text the embedder read
    # and the answer sentences' spans in it (knowledge.indexing.embedding_key). A new version of a document
    # takes the vectors of its unchanged chunks from here instead of embedding them again
    embedding_key = models.CharField(max_length=64, blank=True)
    # the chunk's answer sentences (knowledge.text.passage_sentences of its text) pooled from the same forward
    # pass as `embedding` (knowledge.embedders.span_vectors_pack); null when the embedder cannot pool
    sentence_vectors = models.BinaryField(null=True, blank=True, editable=False)
    tsv = SearchVectorField(null=True)
    injection_flag = models.BooleanField(default=False)
    injection_matches = models.JSONField(default=list, blank=True)
    # the lines (stripped) of code the document's format marks as code (an HTML <pre>, a Markdown code block):
    # answers lay them out as code (knowledge.chunking.ChunkDraft.code_lines)
    code_lines = models.JSONField(default=list, blank=True)
    # denormalised from Document for filtering inside each source's SQL
    active = models.BooleanField(default=False)
    acl_open = models.BooleanField(default=False)
    acl_groups = ArrayField(models.BigIntegerField(), default=list, blank=True)
    access_tier = models.CharField(max_length=20, default=AccessTier.INTERNAL)
    doc_type = models.CharField(max_length=20, default=DocType.OTHER)
    department = models.CharField(max_length=100, blank=True)
    vendor = models.CharField(max_length=100, blank=True)
    owner_id_acl = models.BigIntegerField(null=True, blank=True)
    # the document's expiry: past it the chunk is readable by nobody (until the hourly task tombstones it);
    # a trigger copies every change of the document's (migration 0015)
    expires_at = models.DateTimeField(null=True, blank=True)
    updated_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["document", "ordinal"], name="chunk_document_ordinal")]
        indexes = [
            HnswIndex(
                name="chunk_embedding_hnsw",
                fields=["embedding"],
                m=HNSW_M,
                ef_construction=HNSW_EF_CONSTRUCTION,
                opclasses=["vector_cosine_ops"],
            ),
            GinIndex(fields=["tsv"], name="chunk_tsv_gin"),
            models.Index(fields=["active", "acl_open"], name="chunk_active_acl"),
            # the ACL check on a chunk id without reading the (wide) row: the graph source checks every
            # readable mention of a question's entities (an index-only scan here; 300k chunks: graph p50
            # 77 -> 35 ms)
            models.Index(
                fields=["id"],
                include=["active", "acl_open", "acl_groups", "owner_id_acl", "expires_at", "document_id"],
                name="chunk_acl_expiry_cover",
            ),
            models.Index(fields=["embedding_key"], name="chunk_embedding_key"),
        ]

    def __str__(self) -> str:
        return f"{self.document.source}#{self.ordinal}"


class Vendor(models.Model):
    """Admin-curated gazetteer entry: a vendor or product with its aliases."""

    name = models.CharField(max_length=100, unique=True)
    kind = models.CharField(
        max_length=20, default="vendor", choices=[("vendor", "vendor"), ("product", "product")]
    )
    aliases = models.JSONField(default=list, blank=True, help_text="other spellings, lower case")

    def __str__(self) -> str:
        return self.name

    def clean_fields(self, exclude: Collection[str] | None = None) -> None:
        super().clean_fields(exclude)
        json_fields_check(self, {"aliases": string_list_check}, exclude)


class Synonym(models.Model):
    """Admin-curated query expansion: a term and the terms it also means."""

    term = models.CharField(max_length=200, unique=True)
    expansions = models.JSONField(default=list, help_text='e.g. ["keepalive", "hello interval"]')

    def __str__(self) -> str:
        return self.term

    def clean_fields(self, exclude: Collection[str] | None = None) -> None:
        super().clean_fields(exclude)
        json_fields_check(self, {"expansions": string_list_check}, exclude)


class Posting(models.Model):
    """BM25 postings; primary key (term, chunk) with (tf, doc_len) INCLUDEd in the index (see migration 0002)
    so that scoring a term is an index-only scan."""

    pk = models.CompositePrimaryKey("term", "chunk")
    term = models.CharField(max_length=200)
    chunk = models.ForeignKey(Chunk, on_delete=models.CASCADE, related_name="+")
    tf = models.PositiveIntegerField()
    doc_len = models.PositiveIntegerField()

    class Meta:
        db_table = "knowledge_posting"


class PostingBlock(models.Model):
    """A term's postings packed into one byte string (records of knowledge.postings.POSTING_RECORD), what BM25
    reads at query time: a few rows per term instead of one index entry per posting.

    Ingestion adds one level-0 block per (document, term); when a term has BLOCK_FANOUT blocks on one level they
    are merged into one on the next (knowledge.indexing), so a term keeps a few blocks per level. `repack`
    rebuilds every term as one block from the postings table, which stays the source of truth. Blocks may
    still hold postings of chunks deleted since; retrieval drops those with its visibility check, and a
    repack removes them."""

    term = models.CharField(max_length=200)
    level = models.SmallIntegerField(default=0)
    n = models.PositiveIntegerField(help_text="postings in this block")
    postings = models.BinaryField()

    class Meta:
        db_table = "knowledge_postingblock"
        indexes = [models.Index(fields=["term", "level"], name="knowledge_postingblock_term")]


class TermStat(models.Model):
    term = models.CharField(max_length=200, primary_key=True)
    df = models.PositiveIntegerField(default=0)

    class Meta:
        db_table = "knowledge_termstat"


class CorpusStat(models.Model):
    """Single row (id=1): number of active chunks and the sum of their lengths, for N and avgdl."""

    n_chunks = models.BigIntegerField(default=0)
    total_len = models.BigIntegerField(default=0)


class EntityKind(models.TextChoices):
    VENDOR = "vendor"
    PRODUCT = "product"
    PROTOCOL = "protocol"
    COMMAND = "command"
    PARAMETER = "parameter"
    ERROR_CODE = "error_code"
    SERVICE = "service"
    RFC = "rfc"
    FILE_PATH = "file_path"
    OTHER = "other"


class Entity(models.Model):
    kind = models.CharField(max_length=20)
    name = models.CharField(max_length=300, help_text="normalised key")
    display = models.CharField(max_length=300, blank=True)
    aliases = models.JSONField(default=list, blank=True)

    class Meta:
        verbose_name_plural = "entities"
        constraints = [models.UniqueConstraint(fields=["kind", "name"], name="entity_kind_name")]
        indexes = [models.Index(fields=["name"])]

    def __str__(self) -> str:
        return f"{self.kind}:{self.display or self.name}"

    def clean_fields(self, exclude: Collection[str] | None = None) -> None:
        super().clean_fields(exclude)
        json_fields_check(self, {"aliases": string_list_check}, exclude)


class Mention(models.Model):
    chunk = models.ForeignKey(Chunk, on_delete=models.CASCADE, related_name="mentions")
    entity = models.ForeignKey(Entity, on_delete=models.CASCADE, related_name="mentions")
    count = models.PositiveIntegerField(default=1)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["chunk", "entity"], name="mention_chunk_entity")]
        indexes = [models.Index(fields=["entity", "chunk"])]


class Edge(models.Model):
    """Entity-entity relation; `co_occurs` weights count the chunks in which both appear."""

    source = models.ForeignKey(Entity, on_delete=models.CASCADE, related_name="edges_out")
    target = models.ForeignKey(Entity, on_delete=models.CASCADE, related_name="edges_in")
    relation = models.CharField(max_length=50, default="co_occurs")
    weight = models.FloatField(default=0.0)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["source", "target", "relation"], name="edge_unique")]
        # an entity's strongest neighbours, in either direction, are the first entries of these
        indexes = [
            models.Index(fields=["source", "-weight"], name="knowledge_edge_source_strength"),
            models.Index(fields=["target", "-weight"], name="knowledge_edge_target_strength"),
        ]


class DocumentLink(models.Model):
    """A hyperlink or explicit reference from one document to another (target resolved when known)."""

    source = models.ForeignKey(Document, on_delete=models.CASCADE, related_name="links_out")
    # a deleted target leaves the link open (target_ref kept), to be resolved again if it comes back
    target = models.ForeignKey(
        Document, null=True, blank=True, on_delete=models.SET_NULL, related_name="links_in"
    )
    target_ref = models.CharField(max_length=1000)
    kind = models.CharField(max_length=20, default="hyperlink")  # hyperlink | reference

    class Meta:
        indexes = [
            models.Index(fields=["target_ref"]),
            # the links still waiting for their target, by the file name they point at: a new document finds
            # the links to it without reading every link of the corpus
            models.Index(
                file_name("target_ref"), name="documentlink_open_file_name", condition=Q(target__isnull=True)
            ),
        ]


class IngestRun(models.Model):
    """One `ingest` invocation or nightly sync: counts and progress, so long runs can be followed."""

    root = models.CharField(max_length=2000)
    started_at = models.DateTimeField(auto_now_add=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    status = models.CharField(max_length=20, default="running")
    total = models.PositiveIntegerField(default=0)
    counts = models.JSONField(default=dict)
    options = models.JSONField(default=dict)

    def clean_fields(self, exclude: Collection[str] | None = None) -> None:
        super().clean_fields(exclude)
        json_fields_check(self, {"counts": json_object_check, "options": json_object_check}, exclude)
