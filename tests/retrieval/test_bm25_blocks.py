"""BM25 over posting blocks (summed in NumPy) must return exactly what summing every posting in SQL returns:
same chunks, same order, same scores, ACL and filters included, also after documents change and blocks go
stale, and after a repack."""

from __future__ import annotations

import io
import random
from pathlib import Path

import pytest
from django.contrib.auth.models import Group
from django.db import connection

from athena.principals import Principal
from knowledge.services import IngestOptions, files_ingest, folder_scan
from knowledge.text import query_terms
from retrieval import stages
from retrieval.stages import bm25_search
from retrieval.types import Filters
from tests.knowledge.conftest import write_docs

pytestmark = [pytest.mark.integration, pytest.mark.slow]

COMMON = ["router", "interface", "session", "packet", "queue", "timer", "server", "config"]
RARE = ["keepalive", "flap", "dampening", "hysteresis", "watchdog", "failover", "checksum", "jitter"]
FILLER = [
    "outage",
    "runbook",
    "operator",
    "ticket",
    "network",
    "cable",
    "vendor",
    "manual",
    "rack",
    "uplink",
    "eth0",
    "vlan10",
    "ge-0/0/1",
    "bond0",
]
QUERIES = [
    "router keepalive timer",
    "interface flap dampening",
    "session queue server config",  # only common terms: the bound tightens slowly
    "watchdog",
    "jitter checksum failover hysteresis router",
    "packet packet queue",
]


def _ingest(root: Path, **options) -> None:
    files = [(rel, str(p)) for rel, p in folder_scan(root)]
    summary = files_ingest(root=str(root), files=files, options=IngestOptions(**options))
    assert summary.failed == 0, summary.errors


def _documents(seed: int, count: int, words: tuple[int, int]) -> dict[str, str]:
    rng = random.Random(seed)
    docs = {}
    for i in range(count):
        body = []
        for _ in range(rng.randint(*words)):
            roll = rng.random()
            pool = RARE if roll < 0.08 else COMMON if roll < 0.45 else FILLER
            body.append(rng.choice(pool))
        docs[f"note-{i:03d}.md"] = f"# Note {i}\n\n{' '.join(body)}.\n"
    return docs


@pytest.fixture(params=[(8, 40), (140, 190)], ids=["short-chunks", "long-chunks"])
def corpus(request, tmp_path):
    """~60 one-chunk documents, short or long ones. A quarter of them are restricted to one group. Ingesting
    them one by one fills several block levels."""
    docs = _documents(seed=request.param[0], count=60, words=request.param)
    public = {name: text for n, (name, text) in enumerate(docs.items()) if n % 4}
    restricted = {name: text for n, (name, text) in enumerate(docs.items()) if not n % 4}
    _ingest(write_docs(tmp_path / "public", public), department="noc")
    _ingest(
        write_docs(tmp_path / "restricted", restricted),
        access_tier="restricted",
        acl_groups=("noc-admins",),
        department="security",
    )
    with connection.cursor() as cursor:
        cursor.execute("SELECT total_len::float8 / n_chunks FROM knowledge_corpusstat WHERE id = 1")
        avgdl = cursor.fetchone()[0]
    insider = Principal(None, "insider", (Group.objects.get(name="noc-admins").pk,))
    return {
        "root": tmp_path,
        "avgdl": avgdl,
        "outsider": Principal(None, "outsider"),
        "insider": insider,
    }


def _sql(terms, principal, filters, k, max_df_ratio=1.0):
    return bm25_search(terms, principal, filters, k=k, max_df_ratio=max_df_ratio, method="sql")


def _blocks(terms, principal, filters, k, max_df_ratio=1.0):
    return bm25_search(terms, principal, filters, k=k, max_df_ratio=max_df_ratio)


def _assert_same(blocks, full):
    """Same scores in the same order, and the same chunks at every score. Equal scores (frequent here: many
    chunks share tf and length) may differ in the last bit between SQL's and NumPy's summation order, so
    the order inside a tie, and which members of a tie at the k-th place make the cut, may differ."""
    assert len(blocks) == len(full)
    for a, b in zip(blocks, full, strict=True):
        assert a.score == pytest.approx(b.score, rel=1e-9)

    def by_score(run):
        levels: dict[float, set[int]] = {}
        for s in run:
            levels.setdefault(round(s.score, 8), set()).add(s.id)
        return levels

    cut = round(full[-1].score, 8)
    block_levels = by_score(blocks)
    for level, ids in by_score(full).items():
        if level != cut:
            assert block_levels.get(level) == ids, level


def _levels() -> dict[int, int]:
    with connection.cursor() as cursor:
        cursor.execute("SELECT level, count(*) FROM knowledge_postingblock GROUP BY level")
        return dict(cursor.fetchall())


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("first_check", [stages.FIRST_CHECK, 1], ids=["first-5k", "first-k"])
@pytest.mark.parametrize("dense_span", [stages.DENSE_SPAN, -(10**9)], ids=["bincount", "unique"])
def test_blocks_equal_the_sql_sum(corpus, first_check, dense_span, monkeypatch):
    # first-k: a quarter of the chunks are unreadable to the outsider, so the visibility check needs more
    # than one round; unique: the per-chunk sums go through np.unique instead of an array indexed by id
    monkeypatch.setattr(stages, "FIRST_CHECK", first_check)
    monkeypatch.setattr(stages, "DENSE_SPAN", dense_span)
    assert max(_levels()) >= 1, "ingestion merged no blocks"
    for question in QUERIES:
        terms = [(t, 1.0) for t in query_terms(question)]
        for who in ("outsider", "insider"):
            for k in (1, 3, 10, 40):
                full = _sql(terms, corpus[who], Filters(), k)
                assert full, question
                _assert_same(_blocks(terms, corpus[who], Filters(), k), full)


@pytest.mark.django_db(transaction=True)
def test_blocks_respect_acl_filters_and_term_weights(corpus, monkeypatch):
    from knowledge.models import Chunk

    monkeypatch.setattr(stages, "FIRST_CHECK", 1)
    terms = [("router", 1.0), ("keepalive", 1.0), ("flap", 0.5), ("timer", 0.5)]
    restricted = set(Chunk.objects.filter(acl_open=False).values_list("id", flat=True))
    assert restricted
    blocks = _blocks(terms, corpus["outsider"], Filters(), 40)
    assert blocks and not restricted & {s.id for s in blocks}
    _assert_same(blocks, _sql(terms, corpus["outsider"], Filters(), 40))
    # a selective filter still fills k from deep in the ranking
    security = Filters(departments=("security",))
    blocks = _blocks(terms, corpus["insider"], security, 5)
    assert len(blocks) == 5 and {s.id for s in blocks} <= restricted
    _assert_same(blocks, _sql(terms, corpus["insider"], security, 5))
    assert not _blocks(terms, corpus["outsider"], security, 5)
    # terms too common to search (max_df_ratio) are left out: a ratio between the smallest and the largest
    # df of these terms drops some of them and keeps others
    common = [*terms, *((t, 1.0) for t in COMMON)]
    with connection.cursor() as cursor:
        cursor.execute("SELECT n_chunks FROM knowledge_corpusstat WHERE id = 1")
        n = cursor.fetchone()[0]
        cursor.execute("SELECT df FROM knowledge_termstat WHERE term = ANY(%s)", [[t for t, _ in common]])
        shares = sorted(df / n for (df,) in cursor.fetchall())
    ratio = (shares[0] + shares[-1]) / 2
    assert shares[0] <= ratio < shares[-1], shares
    for k in (3, 10):
        full = _sql(common, corpus["outsider"], Filters(), k, max_df_ratio=ratio)
        assert full
        _assert_same(_blocks(common, corpus["outsider"], Filters(), k, max_df_ratio=ratio), full)


@pytest.mark.django_db(transaction=True)
def test_stale_blocks_after_changes_and_a_repack(corpus):
    from django.core.management import call_command

    from knowledge.indexing import REPACK_LEVEL, postings_stale_share
    from tests.knowledge.test_ingest import blocks_hold_the_postings

    # rewrite a third of the documents: their old chunks' postings stay in the blocks until a repack
    root = corpus["root"] / "public"
    for n, path in enumerate(sorted(root.glob("*.md"))):
        if n % 3 == 0:
            path.write_text(path.read_text().replace(".", " keepalive router timer watchdog."))
    _ingest(root, department="noc")
    blocks_hold_the_postings()
    with connection.cursor() as cursor:
        cursor.execute("SELECT sum(n) FROM knowledge_postingblock")
        packed = cursor.fetchone()[0]
        cursor.execute("SELECT count(*) FROM knowledge_posting")
        live = cursor.fetchone()[0]
    assert packed > live, "changing documents left no stale postings: the test tests nothing"

    def same_everywhere():
        for question in QUERIES:
            terms = [(t, 1.0) for t in query_terms(question)]
            for who in ("outsider", "insider"):
                for k in (3, 40):
                    _assert_same(
                        _blocks(terms, corpus[who], Filters(), k), _sql(terms, corpus[who], Filters(), k)
                    )

    same_everywhere()
    stale = postings_stale_share()
    assert stale == pytest.approx(1 - live / packed)
    out = io.StringIO()
    call_command("bm25_repack", "--if-stale", str(stale + 0.01), stdout=out)
    assert "nothing to do" in out.getvalue() and postings_stale_share() == stale
    call_command("bm25_repack", "--if-stale", str(stale - 0.01), stdout=out)
    assert "repacked" in out.getvalue() and postings_stale_share() == 0.0
    with connection.cursor() as cursor:
        cursor.execute("SELECT count(*), count(DISTINCT term), sum(n) FROM knowledge_postingblock")
        blocks, terms, n = cursor.fetchone()
    assert blocks == terms and n == live
    assert set(_levels()) == {REPACK_LEVEL}
    blocks_hold_the_postings()
    same_everywhere()
