"""The worker is SIGKILLed in the middle of an ingest run: no half-indexed document is ever visible, the run
completes once a worker is back, and the BM25 statistics (df per term, N, total length) stay exact."""

from __future__ import annotations

import shutil
import time

import pytest

from tests.faults.conftest import SAMPLE, FaultStack

pytestmark = [pytest.mark.faults, pytest.mark.integration, pytest.mark.slow]

DOCUMENTS = sorted(p.name for p in SAMPLE.iterdir() if p.suffix in {".md", ".txt"})[:12]


def _partial_documents(stack: FaultStack, prefix: str) -> int:
    """Active chunks of a document that is not (yet) indexed: what a reader must never see."""
    return stack.sql(
        "SELECT count(*) FROM knowledge_chunk c JOIN knowledge_document d ON d.id = c.document_id "
        "WHERE c.active AND d.status <> 'indexed' AND d.source LIKE %s",
        prefix + "%",
    )[0][0]


def _statuses(stack: FaultStack, prefix: str) -> dict[str, int]:
    rows = stack.sql(
        "SELECT status, count(*) FROM knowledge_document WHERE source LIKE %s GROUP BY status", prefix + "%"
    )
    return dict(rows)


def _bm25_statistics_exact(stack: FaultStack) -> None:
    wrong_df = stack.sql(
        """
        WITH counted AS (
            SELECT p.term, count(*) AS df FROM knowledge_posting p
            JOIN knowledge_chunk c ON c.id = p.chunk_id AND c.active GROUP BY p.term)
        SELECT count(*) FROM counted FULL JOIN knowledge_termstat t USING (term)
        WHERE coalesce(counted.df, 0) <> coalesce(t.df, 0)
        """
    )[0][0]
    assert wrong_df == 0
    (n_chunks, total_len), *_ = stack.sql("SELECT n_chunks, total_len FROM knowledge_corpusstat")
    (active, lengths), *_ = stack.sql(
        "SELECT count(*), coalesce(sum(doc_len), 0) FROM knowledge_chunk WHERE active"
    )
    assert (n_chunks, total_len) == (active, lengths)


def test_worker_killed_mid_ingest_no_partial_document_and_the_run_completes_after_restart(
    fault_stack, tmp_path
):
    folder = tmp_path / "killed-mid-ingest"
    folder.mkdir()
    for name in DOCUMENTS:
        shutil.copy(SAMPLE / name, folder / name)
    prefix = "midkill/"
    fault_stack.manage("ingest", str(folder), "--prefix", prefix, "--batch-size", "2")
    deadline = time.monotonic() + 180
    while time.monotonic() < deadline:  # mid-run: some documents indexed, others still to do
        done = _statuses(fault_stack, prefix).get("indexed", 0)
        if 1 <= done < len(DOCUMENTS) - 2:
            break
        time.sleep(0.05)
    else:
        pytest.fail("the run never reached the middle")
    killed_at = time.monotonic()
    fault_stack.kill_group("worker")  # the whole worker: nothing gives its messages back
    before_restart = _statuses(fault_stack, prefix)
    assert _partial_documents(fault_stack, prefix) == 0
    time.sleep(2)
    fault_stack.up("worker")
    partial_seen = 0
    while time.monotonic() - killed_at < 240:
        partial_seen += _partial_documents(fault_stack, prefix)
        statuses = _statuses(fault_stack, prefix)
        if statuses.get("indexed", 0) == len(DOCUMENTS):
            break
        time.sleep(0.5)
    completed_after = time.monotonic() - killed_at
    print(
        f"\n[fault] worker SIGKILL mid-ingest: {before_restart} at the kill; all {len(DOCUMENTS)} indexed "
        f"{completed_after:.1f}s after it; partial documents seen: {partial_seen}"
    )
    assert statuses == {"indexed": len(DOCUMENTS)}, statuses
    assert partial_seen == 0
    _bm25_statistics_exact(fault_stack)
    chunks_per_doc = fault_stack.sql(
        "SELECT d.source, d.chunk_count, count(c.id) FROM knowledge_document d "
        "LEFT JOIN knowledge_chunk c ON c.document_id = d.id AND c.active WHERE d.source LIKE %s "
        "GROUP BY d.source, d.chunk_count",
        prefix + "%",
    )
    assert all(expected == actual > 0 for _, expected, actual in chunks_per_doc), chunks_per_doc
    fault_stack.wait_for_worker()
