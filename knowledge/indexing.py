"""The database half of ingestion: atomically replace a document's chunks, BM25 postings, statistics and
graph rows. Everything for one document happens in one transaction, so a crash at any point leaves either
the old version or the new one visible — never a half-indexed document."""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import numpy as np
from django.db import connection, transaction
from django.utils import timezone
from pgvector import Vector

from knowledge.models import OPEN_TIERS, Chunk, Document, DocumentStatus
from knowledge.postings import pack_postings
from knowledge.text import ANALYZER_VERSION, is_table_rule, passage_sentences, sentence_spans

# One advisory lock serialises the statistics updates of concurrent ingests (df, N, total length), keeping
# them exact without hot per-row triggers; it is held only for the final part of each transaction.
BM25_STATS_LOCK = 7_413_001
# the tables an ingest rewrites and a question's plan reads the statistics of (see index_statistics_refresh)
INDEX_TABLES = ("knowledge_chunk", "knowledge_posting", "knowledge_postingblock", "knowledge_termstat")
# posting blocks: when a term has this many blocks on one level, they are merged into one on the next, so a
# term keeps fewer than BLOCK_FANOUT blocks per level and rewrites each posting about log4(documents) times
BLOCK_FANOUT = 4
REPACK_LEVEL = 30  # a repacked block sits above every level merges reach
# the whole postings table as one block per term (records as knowledge.postings.POSTING_RECORD)
REPACK_SQL = f"""
    INSERT INTO knowledge_postingblock (term, level, n, postings)
    SELECT term, {REPACK_LEVEL}, count(*),
           string_agg(int8send(chunk_id) || int4send(tf) || int4send(doc_len), ''::bytea ORDER BY chunk_id)
    FROM knowledge_posting GROUP BY term
"""
MERGE_SQL = """
    WITH crowded AS (
        SELECT term, level FROM knowledge_postingblock WHERE term = ANY(%s) AND level < %s
        GROUP BY term, level HAVING count(*) >= %s),
    merged AS (
        DELETE FROM knowledge_postingblock b USING crowded c WHERE b.term = c.term AND b.level = c.level
        RETURNING b.id, b.term, b.level, b.n, b.postings)
    INSERT INTO knowledge_postingblock (term, level, n, postings)
    SELECT term, level + 1, sum(n), string_agg(postings, ''::bytea ORDER BY id) FROM merged GROUP BY term, level
    RETURNING term
"""
# co-occurrence pairs grow quadratically; keep the most frequent entities per chunk
MAX_EDGE_ENTITIES = 12
# the co-occurrence pairs of a set of chunks (parameters: chunk ids, MAX_EDGE_ENTITIES): among each chunk's
# MAX_EDGE_ENTITIES most mentioned entities. One definition for indexing (adding to edge weights) and removal
# (subtracting the same pairs): the weights stay exact only while both count the same pairs.
CO_OCCURRENCE_PAIRS_CTE = """
    WITH top AS (
        SELECT chunk_id, entity_id FROM (
            SELECT chunk_id, entity_id,
                   row_number() OVER (PARTITION BY chunk_id ORDER BY count DESC, entity_id) AS r
            FROM knowledge_mention WHERE chunk_id = ANY(%s)) ranked
        WHERE r <= %s),
    pairs AS (
        SELECT t1.entity_id AS a, t2.entity_id AS b, count(*) AS c
        FROM top t1 JOIN top t2 ON t1.chunk_id = t2.chunk_id AND t1.entity_id < t2.entity_id
        GROUP BY 1, 2)
"""
# models verified not to mix with stored vectors (once per process)
_checked_models: set[str] = set()


@dataclass(frozen=True)
class StagedChunk:
    ordinal: int
    text: str
    section_path: str
    page: int | None
    token_count: int
    terms: dict[str, int]  # BM25 term -> tf
    doc_len: int
    entities: list[tuple[str, str, str]]  # (kind, name, display)
    entity_counts: dict[tuple[str, str], int]
    injection_matches: list[str]
    code_lines: tuple[str, ...] = ()  # ChunkDraft.code_lines


@dataclass
class StagedDocument:
    """Everything computed outside the database for one document version."""

    source: str
    source_path: str
    source_root: str
    content_hash: str
    title: str
    author: str
    updated_at: datetime | None
    metadata: dict
    links: list[tuple[str, str]]  # (target_ref, kind)
    chunks: list[StagedChunk]
    embeddings: np.ndarray | None = None
    sentence_vectors: list[bytes | None] | None = None  # per chunk, knowledge.embedders.span_vectors_pack
    embedding_keys: list[str] | None = None  # per chunk, `embedding_key` of what the vectors were made from
    embedding_model: str = ""
    options: dict = field(default_factory=dict)
    # when this version's ingest was requested (an ingest run's start, or when staging began); a document
    # tombstoned after that keeps its tombstone (document_replace_chunks). None: not known (a batch staged by
    # an older worker), taken as earlier than any tombstone
    requested_at: datetime | None = None
    # counted `changed` when staged (an indexed version was there), else `new`: a document that fails later is
    # taken off that count
    changed: bool = False
    # the analyser that made the chunks' terms (knowledge.text.ANALYZER_VERSION where it was staged), recorded on
    # the document when it is indexed: a batch staged by an older release (left in the embed queue across an
    # upgrade, or staged by an ingest worker not yet upgraded) is indexed again by the next ingest
    analyzer_version: int = ANALYZER_VERSION


class DocumentRemoved(Exception):
    """The document was tombstoned after this version's ingest was requested: the version is not swapped in."""


def index_statistics_refresh() -> None:
    """ANALYZE the index's tables after an ingest changed them. Until autovacuum gets to it (a minute or more
    later on a large rewrite), the planner would plan the next questions from the statistics of the index as
    it was, and the same question could be answered from another plan a minute later: seen on the dev set as
    a few answers that changed between two runs over one index. The application role may do this where the
    server has the MAINTAIN privilege (athena.db_roles); an older server skips it with a warning, and autovacuum
    catches up as before."""
    with connection.cursor() as cursor:
        cursor.execute(f"ANALYZE {', '.join(INDEX_TABLES)}")


def embedding_text(title: str, section_path: str, text: str) -> str:
    """What the embedder sees: the chunk with its document title and heading trail for context. A table's
    rule line ("--- | ---") says nothing: it is blanked, character for character, so that the chunk's sentence
    spans still hold."""
    header = title if not section_path else f"{title} > {section_path}" if title else section_path
    text = "\n".join(" " * len(line) if is_table_rule(line) else line for line in text.split("\n"))
    return f"{header}\n{text}" if header else text


def embedding_input(title: str, section_path: str, text: str) -> tuple[str, list[tuple[int, int] | None]]:
    """`embedding_text` and the character span in it of each of the chunk's answer sentences
    (`passage_sentences`), for an embedder that pools sentence vectors from the chunk's own forward pass."""
    full = embedding_text(title, section_path, text)
    shift = len(full) - len(text)  # the chunk's text ends what the embedder sees
    spans = sentence_spans(text, passage_sentences(text, title))
    return full, [None if span is None else (span[0] + shift, span[1] + shift) for span in spans]


def _chunk_hash(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def embedding_key(model: str, text: str, spans: Sequence[tuple[int, int] | None]) -> str:
    """What a chunk's vectors are a function of: the model, the text it read and the sentence spans pooled
    (`embedding_input`). Equal keys, equal vectors: a new version of a document reuses its unchanged chunks'."""
    body = json.dumps([model, text, [list(span) if span else None for span in spans]], separators=(",", ":"))
    return hashlib.sha256(body.encode("utf-8")).hexdigest()


# one row per chunk, its tsvector and its neighbour pointer written with it: a later UPDATE of those columns
# would write each row a second and third time, and each new row version goes into every index, HNSW included
_INSERT_CHUNKS_SQL = """
    INSERT INTO knowledge_chunk (
        id, prev_id, document_id, ordinal, text, section_path, page, token_count, doc_len, content_hash,
        embedding, sentence_vectors, embedding_model, embedding_key, tsv, injection_flag, injection_matches,
        code_lines, active, updated_at, acl_open, acl_groups, access_tier, doc_type, department, vendor, owner_id_acl,
        expires_at)
    SELECT x.id, x.prev_id, %(document)s, x.ordinal, x.text, x.section_path, x.page, x.token_count, x.doc_len,
           x.content_hash, x.embedding::vector, x.sentence_vectors, %(model)s, x.embedding_key,
           to_tsvector('english', x.text), x.injection_flag, x.injection_matches::jsonb, x.code_lines::jsonb,
           true, %(updated_at)s,
           %(acl_open)s, %(acl_groups)s::bigint[], %(access_tier)s, %(doc_type)s, %(department)s, %(vendor)s,
           %(owner_id_acl)s, %(expires_at)s
    FROM unnest(%(id)s::bigint[], %(prev_id)s::bigint[], %(ordinal)s::int[], %(text)s::text[],
                %(section_path)s::varchar[], %(page)s::int[], %(token_count)s::int[], %(doc_len)s::int[],
                %(content_hash)s::varchar[], %(embedding)s::text[], %(sentence_vectors)s::bytea[],
                %(embedding_key)s::varchar[], %(injection_flag)s::boolean[], %(injection_matches)s::text[],
                %(code_lines)s::text[])
         AS x(id, prev_id, ordinal, text, section_path, page, token_count, doc_len, content_hash, embedding,
              sentence_vectors, embedding_key, injection_flag, injection_matches, code_lines)
"""


def _insert_chunks(cursor, staged: StagedDocument, document: Document, acl: dict[str, object]) -> list[int]:  # type: ignore[no-untyped-def]
    """Insert the staged chunks in one statement, ids drawn first so each row carries its predecessor's. `acl`:
    the columns copied from the document (:func:`_acl_fields`)."""
    n = len(staged.chunks)
    if not n:
        return []
    cursor.execute(
        "SELECT nextval(pg_get_serial_sequence('knowledge_chunk', 'id')) FROM generate_series(1, %s)", [n]
    )
    ids = [row[0] for row in cursor.fetchall()]
    chunks = staged.chunks
    nothing: list[None] = [None] * n
    cursor.execute(
        _INSERT_CHUNKS_SQL,
        {
            "document": document.pk,
            "model": staged.embedding_model,
            **acl,
            "id": ids,
            "prev_id": [None, *ids[:-1]],
            "ordinal": [c.ordinal for c in chunks],
            "text": [c.text for c in chunks],
            "section_path": [c.section_path[:1000] for c in chunks],
            "page": [c.page for c in chunks],
            "token_count": [c.token_count for c in chunks],
            "doc_len": [c.doc_len for c in chunks],
            "content_hash": [_chunk_hash(c.text) for c in chunks],
            # pgvector's text form, as the ORM writes a VectorField
            "embedding": nothing
            if staged.embeddings is None
            else [Vector(v).to_text() for v in staged.embeddings],
            "sentence_vectors": nothing if staged.sentence_vectors is None else staged.sentence_vectors,
            "embedding_key": [""] * n if staged.embedding_keys is None else staged.embedding_keys,
            "injection_flag": [bool(c.injection_matches) for c in chunks],
            "injection_matches": [json.dumps(c.injection_matches) for c in chunks],
            "code_lines": [json.dumps(list(c.code_lines)) for c in chunks],
        },
    )
    return ids


def _acl_fields(document: Document) -> dict[str, object]:
    """The chunk columns copied from the document so that every retrieval source filters inside its scan: its
    ACL, its expiry (an expired document is readable by nobody), and the fields searches filter on."""
    groups = sorted(document.allowed_groups.values_list("id", flat=True))
    return {
        "acl_open": not groups and document.access_tier in OPEN_TIERS and document.owner_id is None,
        "acl_groups": groups,
        "access_tier": document.access_tier,
        "doc_type": document.doc_type,
        "department": document.department,
        "vendor": document.vendor,
        "owner_id_acl": document.owner_id,
        "expires_at": document.expires_at,
        "updated_at": document.source_updated_at,
    }


def _remove_documents_chunks(cursor, document_ids: Sequence[int]) -> None:  # type: ignore[no-untyped-def]
    cursor.execute("SELECT id FROM knowledge_chunk WHERE document_id = ANY(%s)", [list(document_ids)])
    _remove_chunks(cursor, [row[0] for row in cursor.fetchall()])


def _remove_chunks(cursor, chunk_ids: Sequence[int]) -> None:  # type: ignore[no-untyped-def]
    """Delete chunks with their postings, reversing their contribution to df, N, length and edge weights."""
    if not chunk_ids:
        return
    ids = list(chunk_ids)
    cursor.execute(
        CO_OCCURRENCE_PAIRS_CTE
        + """
        UPDATE knowledge_edge e SET weight = e.weight - pairs.c FROM pairs
        WHERE e.source_id = pairs.a AND e.target_id = pairs.b AND e.relation = 'co_occurs'
        """,
        # the pairs indexing added
        [ids, MAX_EDGE_ENTITIES],
    )
    cursor.execute(
        "SELECT term, count(*) FROM knowledge_posting WHERE chunk_id = ANY(%s) GROUP BY term ORDER BY term",
        [ids],
    )
    df_delta = cursor.fetchall()
    cursor.execute(
        "SELECT count(*), coalesce(sum(doc_len), 0) FROM knowledge_chunk WHERE id = ANY(%s) AND active", [ids]
    )
    n_active, len_active = cursor.fetchone()
    cursor.execute("DELETE FROM knowledge_posting WHERE chunk_id = ANY(%s)", [ids])
    # a chunk's prev_id points inside its own document, whose chunks all go in this statement (the foreign key
    # is checked at commit)
    cursor.execute("DELETE FROM knowledge_mention WHERE chunk_id = ANY(%s)", [ids])
    cursor.execute("DELETE FROM knowledge_chunk WHERE id = ANY(%s)", [ids])
    _stats_apply(cursor, [(t, -c) for t, c in df_delta], -n_active, -len_active)


def _stats_apply(cursor, df_delta: Sequence[tuple[str, int]], n_delta: int, len_delta: int) -> None:  # type: ignore[no-untyped-def]
    cursor.execute("SELECT pg_advisory_xact_lock(%s)", [BM25_STATS_LOCK])
    if df_delta:
        # the CHECK (df >= 0) applies to a proposed INSERT row even when it conflicts, so negative deltas
        # (removals) are plain UPDATEs and only additions use the upsert
        added = [(t, d) for t, d in df_delta if d > 0]
        removed = [(t, d) for t, d in df_delta if d < 0]
        if removed:
            removed_terms = [t for t, _ in removed]
            cursor.execute(
                """
                UPDATE knowledge_termstat s SET df = s.df + x.d
                FROM unnest(%s::varchar[], %s::int[]) AS x(t, d) WHERE s.term = x.t
                """,
                [removed_terms, [d for _, d in removed]],
            )
            cursor.execute("DELETE FROM knowledge_termstat WHERE term = ANY(%s) AND df <= 0", [removed_terms])
        if added:
            cursor.execute(
                """
                INSERT INTO knowledge_termstat (term, df)
                SELECT t, d FROM unnest(%s::varchar[], %s::int[]) AS x(t, d)
                ON CONFLICT (term) DO UPDATE SET df = knowledge_termstat.df + EXCLUDED.df
                """,
                [[t for t, _ in added], [d for _, d in added]],
            )
    if n_delta or len_delta:
        cursor.execute(
            "INSERT INTO knowledge_corpusstat (id, n_chunks, total_len) VALUES (1, %s, %s) ON CONFLICT (id) "
            "DO UPDATE SET n_chunks = knowledge_corpusstat.n_chunks + EXCLUDED.n_chunks, "
            "total_len = knowledge_corpusstat.total_len + EXCLUDED.total_len",
            [n_delta, len_delta],
        )


def _blocks_add(  # type: ignore[no-untyped-def]
    cursor, terms: Sequence[str], chunks: Sequence[int], tfs: Sequence[int], lens: Sequence[int]
) -> None:
    """Add one level-0 posting block per term for these postings, then merge crowded levels. The caller holds
    BM25_STATS_LOCK (taken by :func:`_stats_apply`), so concurrent ingests never merge the same blocks."""
    by_term: dict[str, list[int]] = {}
    for i, term in enumerate(terms):
        by_term.setdefault(term, []).append(i)
    names = sorted(by_term)
    if not names:
        return
    blobs = [
        pack_postings(
            [chunks[i] for i in by_term[t]], [tfs[i] for i in by_term[t]], [lens[i] for i in by_term[t]]
        )
        for t in names
    ]
    cursor.execute(
        "INSERT INTO knowledge_postingblock (term, level, n, postings) "
        "SELECT t, 0, n, p FROM unnest(%s::varchar[], %s::int[], %s::bytea[]) AS x(t, n, p)",
        [names, [len(by_term[t]) for t in names], blobs],
    )
    while names:  # a merge may crowd the next level in turn, only for the terms it merged
        cursor.execute(MERGE_SQL, [names, REPACK_LEVEL, BLOCK_FANOUT])
        names = sorted({row[0] for row in cursor.fetchall()})


def postings_repack() -> int:
    """Rebuild every term's posting blocks as one block from the postings table, dropping postings of deleted
    chunks; returns the number of blocks. One transaction under BM25_STATS_LOCK: ingests wait, searches keep
    reading the old blocks until it commits."""
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute("SELECT pg_advisory_xact_lock(%s)", [BM25_STATS_LOCK])
        cursor.execute("DELETE FROM knowledge_postingblock")
        cursor.execute(REPACK_SQL)
        return max(cursor.rowcount, 0)


def postings_repack_if_stale(min_stale: float) -> tuple[float, int | None]:
    """The stale share of the packed postings, and the number of blocks after a repack when that share is at
    least `min_stale` (None when no repack was needed)."""
    stale = postings_stale_share()
    return stale, postings_repack() if stale >= min_stale else None


def postings_stale_share() -> float:
    """Share of the postings in the blocks that belong to deleted chunks (0 when there are no blocks)."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT (SELECT coalesce(sum(n), 0) FROM knowledge_postingblock), "
            "(SELECT coalesce(sum(df), 0) FROM knowledge_termstat)"
        )
        packed, live = cursor.fetchone()
    return 1.0 - live / packed if packed else 0.0


def _upsert_entities(cursor, entities: set[tuple[str, str, str]]) -> dict[tuple[str, str], int]:  # type: ignore[no-untyped-def]
    if not entities:
        return {}
    ordered = sorted(entities)
    kinds = [e[0] for e in ordered]
    names = [e[1][:300] for e in ordered]
    cursor.execute(
        """
        INSERT INTO knowledge_entity (kind, name, display, aliases)
        SELECT k, n, d, '[]'::jsonb FROM unnest(%s::varchar[], %s::varchar[], %s::varchar[]) AS x(k, n, d)
        ON CONFLICT (kind, name) DO NOTHING
        """,
        [kinds, names, [e[2][:300] for e in ordered]],
    )
    cursor.execute(
        "SELECT id, kind, name FROM knowledge_entity WHERE (kind, name) IN "
        "(SELECT * FROM unnest(%s::varchar[], %s::varchar[]))",
        [kinds, names],
    )
    return {(kind, name): pk for pk, kind, name in cursor.fetchall()}


@transaction.atomic
def document_replace_chunks(*, staged: StagedDocument, document: Document) -> Document:
    """Swap in a new version of `document` built from `staged`, in one transaction. Raises DocumentRemoved,
    changing nothing, when the document was tombstoned after the version's ingest was requested (a batch
    queued before `manage.py remove` must not bring the document back; an ingest requested later does)."""
    document = Document.objects.select_for_update().get(pk=document.pk)
    if (
        document.status == DocumentStatus.TOMBSTONED
        and document.tombstoned_at is not None
        and (staged.requested_at is None or staged.requested_at < document.tombstoned_at)
    ):
        raise DocumentRemoved("removed while its ingest was queued; not indexed again")
    if (
        staged.embedding_model
        and staged.embedding_model not in _checked_models
        and Chunk.objects.exclude(embedding_model__in=["", staged.embedding_model])
        .filter(active=True)
        .exists()
    ):
        raise ValueError(
            f"the index holds vectors of another model than {staged.embedding_model}; run "
            "`manage.py reembed` before ingesting with a new embedder"
        )
    _checked_models.add(staged.embedding_model)
    now = timezone.now()
    updated_at = staged.updated_at or document.source_updated_at
    # the chunks carry this version's date, which is saved on the document below
    acl = {**_acl_fields(document), "updated_at": updated_at}
    with connection.cursor() as cursor:
        _remove_documents_chunks(cursor, [document.pk])

        ids = _insert_chunks(cursor, staged, document, acl)
        # postings
        p_terms: list[str] = []
        p_chunks: list[int] = []
        p_tf: list[int] = []
        p_len: list[int] = []
        df: Counter[str] = Counter()
        for pk, chunk in zip(ids, staged.chunks, strict=True):
            for term, tf in chunk.terms.items():
                p_terms.append(term)
                p_chunks.append(pk)
                p_tf.append(tf)
                p_len.append(chunk.doc_len)
                df[term] += 1
        if p_terms:
            cursor.execute(
                "INSERT INTO knowledge_posting (term, chunk_id, tf, doc_len) "
                "SELECT * FROM unnest(%s::varchar[], %s::bigint[], %s::int[], %s::int[])",
                [p_terms, p_chunks, p_tf, p_len],
            )
        # graph: mentions and co-occurrence edges
        all_entities = {e for chunk in staged.chunks for e in chunk.entities}
        entity_ids = _upsert_entities(cursor, all_entities)
        m_chunk: list[int] = []
        m_entity: list[int] = []
        m_count: list[int] = []
        for pk, chunk in zip(ids, staged.chunks, strict=True):
            ranked = sorted(chunk.entity_counts.items(), key=lambda kv: (-kv[1], kv[0]))
            for (kind, name), count in ranked:
                entity_id = entity_ids.get((kind, name[:300]))
                if entity_id is not None:
                    m_chunk.append(pk)
                    m_entity.append(entity_id)
                    m_count.append(count)
        if m_chunk:
            cursor.execute(
                "INSERT INTO knowledge_mention (chunk_id, entity_id, count) "
                "SELECT * FROM unnest(%s::bigint[], %s::bigint[], %s::int[]) ON CONFLICT DO NOTHING",
                [m_chunk, m_entity, m_count],
            )
            cursor.execute(
                CO_OCCURRENCE_PAIRS_CTE
                + """
                INSERT INTO knowledge_edge (source_id, target_id, relation, weight)
                SELECT a, b, 'co_occurs', c FROM pairs
                ON CONFLICT (source_id, target_id, relation)
                DO UPDATE SET weight = knowledge_edge.weight + EXCLUDED.weight
                """,
                [ids, MAX_EDGE_ENTITIES],
            )
        # document links
        cursor.execute("DELETE FROM knowledge_documentlink WHERE source_id = %s", [document.pk])
        if staged.links:
            refs = [ref[:1000] for ref, _ in staged.links]
            kinds = [kind for _, kind in staged.links]
            cursor.execute(
                "INSERT INTO knowledge_documentlink (source_id, target_id, target_ref, kind) "
                "SELECT %s, NULL, r, k FROM unnest(%s::varchar[], %s::varchar[]) AS x(r, k)",
                [document.pk, refs, kinds],
            )
        _resolve_links(cursor, document)
        _stats_apply(cursor, sorted(df.items()), len(ids), sum(c.doc_len for c in staged.chunks))
        _blocks_add(cursor, p_terms, p_chunks, p_tf, p_len)

    document.title = staged.title[:500] or document.title
    document.author = staged.author[:300] or document.author
    document.content_hash = staged.content_hash
    document.analyzer_version = staged.analyzer_version
    document.version += 1
    document.status = DocumentStatus.INDEXED
    document.error = ""
    document.source_path = staged.source_path
    document.source_root = staged.source_root
    document.source_updated_at = updated_at
    document.ingested_at = now
    document.metadata = {**document.metadata, **staged.metadata}
    document.injection_flags = sum(1 for c in staged.chunks if c.injection_matches)
    document.chunk_count = len(ids)
    document.save()
    return document


def _resolve_links(cursor, document: Document) -> None:  # type: ignore[no-untyped-def]
    """Point links at documents by source id or file name, in both directions for this document.

    A reference names a document by its source id ("guide/install.html"), a path ending in it, or its file
    name alone; all three share the file name, so both statements look links and documents up by that
    (expression indexes `document_source_file_name` and `documentlink_open_file_name`) instead of comparing
    every link with every document. Where several documents carry the file name, the link goes to the one its
    reference names most exactly (the same source id, then a path ending in it), then to the oldest."""
    cursor.execute(
        """
        UPDATE knowledge_documentlink l SET target_id = best.target
        FROM (
            SELECT open.id, found.id AS target
            FROM knowledge_documentlink open
            -- per link, an index lookup (a join would hash every document's file name)
            CROSS JOIN LATERAL (
                SELECT d.id FROM knowledge_document d
                WHERE regexp_replace(d.source, '^.*/', '') = regexp_replace(open.target_ref, '^.*/', '')
                  AND d.id <> open.source_id AND d.status <> 'tombstoned'
                ORDER BY d.source = open.target_ref DESC,
                         right(d.source, length(open.target_ref) + 1) = '/' || open.target_ref DESC, d.id
                LIMIT 1) found
            WHERE open.source_id = %s AND open.target_id IS NULL) best
        WHERE l.id = best.id
        """,
        [document.pk],
    )
    cursor.execute(
        """
        UPDATE knowledge_documentlink SET target_id = %s
        WHERE target_id IS NULL AND source_id <> %s AND regexp_replace(target_ref, '^.*/', '') = %s
        """,
        [document.pk, document.pk, document.source.rsplit("/", 1)[-1]],
    )


@transaction.atomic
def documents_remove_chunks(*, document_ids: Sequence[int]) -> None:
    """Every chunk of these documents out of the index in one removal: the graph's edges and then BM25's
    statistics are each written once, in the order an indexing transaction writes them. Removing the documents
    one after another in one transaction held the statistics' lock from the first while it wrote the edges of
    the next, the reverse order: a deadlock with an ingest writing those edges."""
    if not document_ids:
        return
    with connection.cursor() as cursor:
        _remove_documents_chunks(cursor, document_ids)


def document_sync_chunk_acl(*, document: Document) -> int:
    """Copy the document's ACL, expiry and filter fields onto its chunks (after an admin edit or a group's
    delete), writing only the chunks whose copy differs; returns how many were written. A copy that differs
    only by the ids of deleted groups (knowledge.models.RetiredGroup: no principal can hold them) is left as it
    is: every chunk written is a new row in each of the table's indexes, the HNSW graph included, so an edit of
    the title or a group's delete rewrote every chunk of every document concerned (a minute for a group named by
    200 documents). An id recorded as retired that a group still holds (a fixture from another database could
    write one) counts as that group's. `active` is not touched: a document's chunks exist only while it is
    indexed (a swap inserts them active, a tombstone deletes them), BM25's N and df count them as such, and a
    copy of the document read before an ingest committed would carry a stale status."""
    fields = _acl_fields(document)
    scalars = [column for column in fields if column != "acl_groups"]
    differs = " OR ".join(f"c.{column} IS DISTINCT FROM %({column})s" for column in scalars)
    assignments = ", ".join(f"{column} = %({column})s" for column in fields)
    params: dict[str, Any] = {**fields, "document_id": document.pk}
    with connection.cursor() as cursor:
        cursor.execute(
            f"UPDATE knowledge_chunk c SET {assignments} WHERE c.document_id = %(document_id)s AND ({differs}"
            " OR ARRAY(SELECT g FROM unnest(c.acl_groups) g WHERE NOT EXISTS"
            " (SELECT FROM knowledge_retiredgroup r WHERE r.group_id = g)"
            " OR EXISTS (SELECT FROM auth_group a WHERE a.id = g) ORDER BY g)"
            " IS DISTINCT FROM %(acl_groups)s::bigint[])",
            params,
        )
        return cursor.rowcount


def staged_to_json(staged: StagedDocument) -> dict:
    """A JSON-safe form, so staged documents can travel from the ingest queue to the embed queue."""
    return {
        "source": staged.source,
        "source_path": staged.source_path,
        "source_root": staged.source_root,
        "content_hash": staged.content_hash,
        "title": staged.title,
        "author": staged.author,
        "updated_at": staged.updated_at.isoformat() if staged.updated_at else None,
        "metadata": {k: str(v) for k, v in staged.metadata.items()},
        "links": [list(x) for x in staged.links],
        "options": staged.options,
        "requested_at": staged.requested_at.isoformat() if staged.requested_at else None,
        "changed": staged.changed,
        "analyzer_version": staged.analyzer_version,
        "chunks": [
            {
                "ordinal": c.ordinal,
                "text": c.text,
                "section_path": c.section_path,
                "page": c.page,
                "token_count": c.token_count,
                "terms": c.terms,
                "doc_len": c.doc_len,
                "entities": [list(e) for e in c.entities],
                "entity_counts": [[k, n, v] for (k, n), v in c.entity_counts.items()],
                "injection_matches": c.injection_matches,
                "code_lines": list(c.code_lines),
            }
            for c in staged.chunks
        ],
    }


def staged_from_json(data: dict) -> StagedDocument:
    return StagedDocument(
        source=data["source"],
        source_path=data["source_path"],
        source_root=data["source_root"],
        content_hash=data["content_hash"],
        title=data["title"],
        author=data["author"],
        updated_at=datetime.fromisoformat(data["updated_at"]) if data["updated_at"] else None,
        metadata=data["metadata"],
        links=[tuple(x) for x in data["links"]],
        options=data["options"],  # type: ignore[misc]
        # absent from a batch staged by an older worker: not known (see StagedDocument.requested_at)
        requested_at=datetime.fromisoformat(data["requested_at"]) if data.get("requested_at") else None,
        changed=bool(data.get("changed", False)),
        # absent from a batch staged by a release that did not say: unknown, so the next ingest indexes it again
        analyzer_version=int(data.get("analyzer_version", 0)),
        chunks=[
            StagedChunk(
                ordinal=c["ordinal"],
                text=c["text"],
                section_path=c["section_path"],
                page=c["page"],
                token_count=c["token_count"],
                terms=c["terms"],
                doc_len=c["doc_len"],
                entities=[tuple(e) for e in c["entities"]],  # type: ignore[misc]
                entity_counts={(k, n): v for k, n, v in c["entity_counts"]},
                injection_matches=c["injection_matches"],
                code_lines=tuple(c.get("code_lines", ())),
            )
            for c in data["chunks"]
        ],
    )
