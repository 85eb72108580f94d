"""The byte format of a posting block (knowledge_postingblock.postings): written by indexing, read by
retrieval's BM25 stage. No Django here."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

__all__ = ["POSTING_RECORD", "pack_postings", "unpack_postings"]

# One posting inside a posting block (knowledge_postingblock.postings): chunk id, tf and the chunk's length,
# big-endian, 16 bytes, so that PostgreSQL can build the same bytes with int8send(chunk_id) || int4send(tf)
# || int4send(doc_len) and blocks can be concatenated byte-wise.
POSTING_RECORD = np.dtype([("chunk", ">i8"), ("tf", ">i4"), ("doc_len", ">i4")])


def pack_postings(chunk_ids: Sequence[int], tfs: Sequence[int], doc_lens: Sequence[int]) -> bytes:
    """The bytes of a posting block holding these postings, in the order given."""
    records = np.empty(len(chunk_ids), dtype=POSTING_RECORD)
    records["chunk"] = chunk_ids
    records["tf"] = tfs
    records["doc_len"] = doc_lens
    return records.tobytes()


def unpack_postings(data: bytes) -> np.ndarray:
    """A structured array (chunk, tf, doc_len) over the bytes of one or more concatenated posting blocks."""
    if len(data) % POSTING_RECORD.itemsize:
        raise ValueError(f"a posting block is a whole number of {POSTING_RECORD.itemsize}-byte records")
    return np.frombuffer(data, dtype=POSTING_RECORD)
