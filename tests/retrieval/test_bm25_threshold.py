"""The large-corpus BM25 path (threshold walk over impact-ordered postings) must return exactly what summing
every posting returns: same chunks, same order, same scores, ACL and filters included."""

from __future__ import annotations

import random
from pathlib import Path

import pytest
from django.contrib.auth.models import Group
from django.db import connection

from knowledge.services import IngestOptions, files_ingest, folder_scan
from retrieval import stages
from retrieval.analysis import query_terms
from retrieval.stages import bm25_search
from retrieval.types import Filters, Principal
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
    """~60 one-chunk documents; short chunks give avgdl < IMPACT_AVGDL, long ones avgdl > IMPACT_AVGDL, so
    both sides of the bound's slack factor are exercised. A quarter of them are restricted to one group."""
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
        "long": request.param[1] > 100,
        "avgdl": avgdl,
        "outsider": Principal(None, "outsider"),
        "insider": insider,
    }


def _full(terms, principal, filters, k, max_df_ratio=1.0):
    return bm25_search(terms, principal, filters, k=k, prune_from=10**9, max_df_ratio=max_df_ratio)


def _walked(terms, principal, filters, k, depth, max_df_ratio=1.0):
    return bm25_search(
        terms, principal, filters, k=k, prune_from=0, first_depth=depth, max_df_ratio=max_df_ratio
    )


def _rare_cap(terms):
    """A RARE_POSTINGS that admits only the rarest of `terms` (rare-one-term: the others are probed)."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT min(df) FROM knowledge_termstat WHERE term = ANY(%s)", [[t for t, _ in terms]])
        return cursor.fetchone()[0]


def _assert_same(walked, full):
    """Same scores in the same order, and the same chunks at every score. Equal scores (frequent here: many
    chunks share tf and length) may differ in the last bit between SQL's and Python's summation order, so
    the order inside a tie, and which members of a tie at the k-th place make the cut, may differ."""
    assert len(walked) == len(full)
    for a, b in zip(walked, full, strict=True):
        assert a.score == pytest.approx(b.score, rel=1e-9)

    def by_score(run):
        levels: dict[float, set[int]] = {}
        for s in run:
            levels.setdefault(round(s.score, 8), set()).add(s.id)
        return levels

    cut = round(full[-1].score, 8)
    walked_levels = by_score(walked)
    for level, ids in by_score(full).items():
        if level != cut:
            assert walked_levels.get(level) == ids, level


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("max_probes", [stages.MAX_PROBES, 0], ids=["probes", "straight-to-maxscore"])
@pytest.mark.parametrize("rare_postings", [stages.RARE_POSTINGS, 1], ids=["rare-all", "rare-one-term"])
def test_threshold_walk_equals_the_full_sum(corpus, max_probes, rare_postings, monkeypatch):
    # rare-one-term: the floor comes from the rarest term's chunks, completed by key probes; a small sample
    # makes the best-4x cut before the ACL check bite on this small corpus
    monkeypatch.setattr(stages, "MAX_PROBES", max_probes)
    monkeypatch.setattr(stages, "RARE_SAMPLE", 3 if rare_postings == 1 else stages.RARE_SAMPLE)
    assert (corpus["avgdl"] > stages.IMPACT_AVGDL) == corpus["long"], corpus["avgdl"]
    for question in QUERIES:
        terms = [(t, 1.0) for t in query_terms(question)]
        monkeypatch.setattr(
            stages, "RARE_POSTINGS", _rare_cap(terms) if rare_postings == 1 else rare_postings
        )
        for who in ("outsider", "insider"):
            for k in (1, 3, 10, 40):
                full = _full(terms, corpus[who], Filters(), k)
                assert full, question
                for depth in (1, 2, 7, 256):
                    _assert_same(_walked(terms, corpus[who], Filters(), k, depth), full)


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("rare_postings", [stages.RARE_POSTINGS, 1], ids=["rare-all", "rare-one-term"])
def test_threshold_walk_respects_acl_filters_and_term_weights(corpus, rare_postings, monkeypatch):
    from knowledge.models import Chunk

    terms = [("router", 1.0), ("keepalive", 1.0), ("flap", 0.5), ("timer", 0.5)]
    monkeypatch.setattr(stages, "RARE_POSTINGS", _rare_cap(terms) if rare_postings == 1 else rare_postings)
    monkeypatch.setattr(stages, "RARE_SAMPLE", 3)
    restricted = set(Chunk.objects.filter(acl_open=False).values_list("id", flat=True))
    assert restricted
    walked = _walked(terms, corpus["outsider"], Filters(), 40, 1)
    assert walked and not restricted & {s.id for s in walked}
    _assert_same(walked, _full(terms, corpus["outsider"], Filters(), 40))
    security = Filters(departments=("security",))
    walked = _walked(terms, corpus["insider"], security, 5, 1)
    assert walked and {s.id for s in walked} <= restricted
    _assert_same(walked, _full(terms, corpus["insider"], security, 5))
    # terms too common to search (max_df_ratio) are left out of the floor as of the sum: a ratio between the
    # smallest and the largest df of these terms drops some of them and keeps others
    common = [*terms, *((t, 1.0) for t in COMMON)]
    with connection.cursor() as cursor:
        cursor.execute("SELECT n_chunks FROM knowledge_corpusstat WHERE id = 1")
        n = cursor.fetchone()[0]
        cursor.execute("SELECT df FROM knowledge_termstat WHERE term = ANY(%s)", [[t for t, _ in common]])
        shares = sorted(df / n for (df,) in cursor.fetchall())
    ratio = (shares[0] + shares[-1]) / 2
    assert shares[0] <= ratio < shares[-1], shares
    for k in (3, 10):
        full = _full(common, corpus["outsider"], Filters(), k, max_df_ratio=ratio)
        assert full
        _assert_same(_walked(common, corpus["outsider"], Filters(), k, 1, max_df_ratio=ratio), full)


@pytest.mark.django_db(transaction=True)
def test_the_rare_term_floor_is_a_lower_bound_of_the_kth_visible_score(corpus, monkeypatch):
    from retrieval.bm25 import idf

    terms = query_terms(QUERIES[0])
    with connection.cursor() as cursor:
        cursor.execute("SELECT n_chunks, total_len FROM knowledge_corpusstat WHERE id = 1")
        n, total_len = cursor.fetchone()
        cursor.execute("SELECT term, df FROM knowledge_termstat WHERE term = ANY(%s)", [terms])
        dfs = dict(cursor.fetchall())
        # only the rarest term is summed; the others are completed by key probes
        monkeypatch.setattr(stages, "RARE_POSTINGS", min(dfs.values()))
        assert len(set(dfs.values())) > 1, dfs
        query = {t: idf(df, n) for t, df in dfs.items()}
        floors = []
        for who in ("outsider", "insider"):
            where, params = stages.visibility_sql(corpus[who], Filters())
            for k in (1, 3, 10):
                full = _full([(t, 1.0) for t in terms], corpus[who], Filters(), k)
                floor = stages._rare_floor(cursor, query, dfs, total_len / n, where, params, k=k)
                # 0 when fewer than k readable chunks hold the rarest term: still a valid bound
                assert 0 <= floor <= full[-1].score * (1 + 1e-9), (who, k)
                floors.append(floor)
    assert max(floors) > 0


@pytest.mark.django_db(transaction=True)
def test_postings_are_read_best_first_through_the_impact_index(corpus):
    with connection.cursor() as cursor:
        cursor.execute(
            "SET enable_seqscan = off; SET enable_bitmapscan = off"
        )  # tiny table: force the choice
        cursor.execute(
            f"EXPLAIN SELECT p.chunk_id FROM knowledge_posting p WHERE p.term = 'router' "
            f"ORDER BY {stages.IMPACT_EXPR} DESC LIMIT 5"
        )
        plan = "\n".join(row[0] for row in cursor.fetchall())
        cursor.execute("RESET enable_seqscan; RESET enable_bitmapscan")
    assert "knowledge_posting_impact" in plan and "Sort" not in plan, plan
