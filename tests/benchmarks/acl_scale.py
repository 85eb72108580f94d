#!/usr/bin/env python
"""Permissions at the size of a real organisation (a script, not collected by pytest).

`--build` adds an organisation to the database named by ATHENA_DB_NAME (grown first with
`retrieval.py --synthetic N`): GROUPS groups `org-gNNNN` in two divisions (the first half, the second half),
USERS users `org-uNNNNN` in 5-15 random groups each, and two wide users: `org-wide` in 300 groups of the second
division, `org-wide-match` in the same 300 and one group of the first. Of the synthetic documents, one in five
is shared with 500 groups of the first division (an all-hands document), one in five is restricted to three
random groups; the documents' groups and their chunks' ACL copies are written together, directly in SQL.

`--delete-groups N` times deleting N groups of the first division (each named by about 200 documents), one at a
time, the way the admin deletes them (knowledge.services.groups_delete: the documents' ACLs, their chunks' copies,
an audited change per document), each in a transaction that is rolled back (the organisation stays as built);
it prints the median and each delete's seconds and chunk rows written.

`--plans N` runs N dev-set questions (dense, BM25 and graph sources, fused) for each principal below and EXPLAINs
every statement on the chunk table just before it runs, on its own connection (the stages run in threads, each
with its settings: iterative HNSW scans, ef_search); it prints how often each index of the chunk table appears
in those plans. Only statements sent through Django's cursor are seen: the binary reads (chunk rows by id,
posting blocks by term) are not, and neither can check the ACL through an index on the groups.

Then, over the first `--queries` dev-set questions, the median and p95 of each search stage (fused, no rerank or
MMR) for four principals: two groups (the retrieval benchmark's), `org-u00001`, `org-wide`, `org-wide-match`; and of
building each one's Principal from the database. This machine's two cores are shared: compare medians of runs
made one after the other.

    ATHENA_DB_NAME=athena_bench python tests/benchmarks/acl_scale.py --build --queries 30
    ATHENA_DB_NAME=athena_bench python tests/benchmarks/acl_scale.py --delete-groups 5 --plans 20 --queries 0
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import time
from typing import Any

from common import DEVSET, owner_connection, percentile, setup_django

GROUPS = 2000
USERS = 20_000
WIDE = 300
SHARED = 500


def build(seed: int) -> dict[str, Any]:
    from django.db import transaction

    rng = random.Random(seed)
    connection = owner_connection()
    half = GROUPS // 2
    with transaction.atomic(using=connection.alias), connection.cursor() as cursor:
        cursor.execute("SELECT count(*) FROM auth_group WHERE name LIKE 'org-g%%'")
        if cursor.fetchone()[0]:
            return {"built": "already"}
        cursor.execute(
            "INSERT INTO auth_group (name) SELECT 'org-g' || lpad(i::text, 4, '0') FROM generate_series(0, %s) i",
            [GROUPS - 1],
        )
        cursor.execute("SELECT id FROM auth_group WHERE name LIKE 'org-g%%' ORDER BY name")
        group_ids = [row[0] for row in cursor.fetchall()]
        cursor.execute(
            "INSERT INTO auth_user (username, password, is_superuser, first_name, last_name, email, is_staff, "
            "is_active, date_joined) SELECT 'org-u' || lpad(i::text, 5, '0'), '!', false, '', '', '', false, "
            "true, now() FROM generate_series(0, %s) i",
            [USERS - 1],
        )
        for name in ("org-wide", "org-wide-match"):
            cursor.execute(
                "INSERT INTO auth_user (username, password, is_superuser, first_name, last_name, email, is_staff,"
                " is_active, date_joined) VALUES (%s, '!', false, '', '', '', false, true, now())",
                [name],
            )
        cursor.execute("SELECT id, username FROM auth_user WHERE username LIKE 'org-%%'")
        users = dict((name, pk) for pk, name in cursor.fetchall())
        pairs = []
        for name, pk in users.items():
            if name.startswith("org-u"):
                pairs += [(pk, g) for g in rng.sample(group_ids, rng.randint(5, 15))]
        wide = rng.sample(group_ids[half:], WIDE)
        pairs += [(users["org-wide"], g) for g in wide]
        pairs += [(users["org-wide-match"], g) for g in [*wide, rng.choice(group_ids[:half])]]
        with cursor.copy("COPY auth_user_groups (user_id, group_id) FROM STDIN") as copy:
            for pair in pairs:
                copy.write_row(pair)
        cursor.execute(
            "SELECT id FROM knowledge_document WHERE source LIKE 'synthetic/%%' AND status = 'indexed' ORDER BY id"
        )
        documents = [row[0] for row in cursor.fetchall()]
        acl: dict[int, list[int]] = {}
        for i, document_id in enumerate(documents):
            if i % 5 == 0:
                acl[document_id] = sorted(rng.sample(group_ids[:half], SHARED))
            elif i % 5 == 1:
                acl[document_id] = sorted(rng.sample(group_ids, 3))
        cursor.execute(
            "DELETE FROM knowledge_document_allowed_groups WHERE document_id = ANY(%s)", [list(acl)]
        )
        with cursor.copy("COPY knowledge_document_allowed_groups (document_id, group_id) FROM STDIN") as copy:
            for document_id, groups in acl.items():
                for g in groups:
                    copy.write_row((document_id, g))
        cursor.execute(
            "UPDATE knowledge_document SET access_tier = 'restricted' WHERE id = ANY(%s)", [list(acl)]
        )
        cursor.execute(
            """
            UPDATE knowledge_chunk c SET acl_open = false, access_tier = 'restricted', acl_groups = x.groups
            FROM (SELECT document_id, array_agg(group_id::bigint ORDER BY group_id) AS groups
                  FROM knowledge_document_allowed_groups WHERE document_id = ANY(%s) GROUP BY 1) x
            WHERE c.document_id = x.document_id
            """,
            [list(acl)],
        )
        chunks = cursor.rowcount
    with connection.cursor() as cursor:
        cursor.execute("VACUUM ANALYZE knowledge_chunk")
        cursor.execute("ANALYZE auth_user_groups")
    return {"memberships": len(pairs), "documents_acl": len(acl), "chunks_acl": chunks}


def summary(values: list[float]) -> str:
    return f"{statistics.median(values):8.1f} {percentile(values, 0.95):8.1f}"


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--build", action="store_true")
    parser.add_argument("--queries", type=int, default=30)
    parser.add_argument("--seed", type=int, default=11)
    parser.add_argument("--delete-groups", type=int, default=0, metavar="N")
    parser.add_argument("--plans", type=int, default=0, metavar="N")
    args = parser.parse_args()
    setup_django()
    if args.build:
        print(build(args.seed))
    if args.delete_groups:
        groups_delete_time(args.delete_groups)
    if args.plans:
        plans_count(args.plans)
    if args.queries:
        run(args.queries)


def groups_delete_time(n: int) -> None:
    from django.contrib.auth.models import Group
    from django.db import connection, transaction

    from knowledge.services import groups_delete

    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT g.id, count(*) FROM auth_group g JOIN knowledge_document_allowed_groups a ON a.group_id = g.id "
            "WHERE g.name LIKE 'org-g%%' AND g.name < %s GROUP BY g.id ORDER BY g.id LIMIT %s",
            [f"org-g{GROUPS // 2:04d}", n],
        )
        picked = cursor.fetchall()
    seconds = []
    for group_id, documents in picked:
        with transaction.atomic():
            with connection.cursor() as cursor:
                cursor.execute(
                    "SELECT n_tup_upd FROM pg_stat_xact_user_tables WHERE relname = 'knowledge_chunk'"
                )
                before = cursor.fetchone()[0]
                t0 = time.perf_counter()
                groups_delete(groups=Group.objects.filter(pk=group_id))
                seconds.append(time.perf_counter() - t0)
                cursor.execute(
                    "SELECT n_tup_upd FROM pg_stat_xact_user_tables WHERE relname = 'knowledge_chunk'"
                )
                written = cursor.fetchone()[0] - before
            transaction.set_rollback(True)
        print(
            f"  group {group_id}: named by {documents} documents, {seconds[-1]:.2f} s, {written} chunk rows written"
        )
    print(f"deleting a group (median of {len(seconds)}): {statistics.median(seconds):.2f} s")


def plans_count(n: int) -> None:
    import re
    from collections import Counter

    from django.db.backends.utils import CursorWrapper

    from retrieval.search import search
    from retrieval.types import SearchConfig

    plans: list[str] = []
    original = CursorWrapper._execute

    def explained(self, sql, params, *ignored):  # type: ignore[no-untyped-def]
        head = sql.lstrip().upper()
        if "knowledge_chunk" in sql and (head.startswith("SELECT") or head.startswith("WITH")):
            original(self, "EXPLAIN " + sql, params, *ignored)
            plans.append("\n".join(row[0] for row in self.cursor.fetchall()))
        return original(self, sql, params, *ignored)

    CursorWrapper._execute = explained  # type: ignore[method-assign]
    config = SearchConfig(rerank=False, mmr=False)
    try:
        for label, principal in principals_named().items():
            plans.clear()
            for q in questions(n):
                search(q, principal, config=config)
            used: Counter[str] = Counter()
            for plan in plans:
                used.update(set(re.findall(r"(?:using|on) (chunk_\w+|knowledge_chunk\w*)", plan)))
            print(f"{label}: {len(plans)} statements on knowledge_chunk; plans naming each index or table:")
            for name, count in sorted(used.items()):
                print(f"  {name:32} {count}")
            print(f"  chunk_acl_groups_gin             {used.get('chunk_acl_groups_gin', 0)}")
    finally:
        CursorWrapper._execute = original  # type: ignore[method-assign]


def principals_named() -> dict[str, Any]:
    from django.contrib.auth import get_user_model
    from django.contrib.auth.models import Group

    from athena.principals import Principal

    users = get_user_model().objects
    return {
        "two groups": Principal(
            None,
            "bench",
            tuple(
                sorted(Group.objects.filter(name__in=("employees", "netops")).values_list("pk", flat=True))
            ),
        ),
        "org-u00001 (5-15 groups)": Principal.from_user(users.get(username="org-u00001")),
        "org-wide (300, none shared)": Principal.from_user(users.get(username="org-wide")),
        "org-wide-match (301, one shared)": Principal.from_user(users.get(username="org-wide-match")),
    }


def questions(n: int) -> list[str]:
    lines = (DEVSET / "questions.jsonl").read_text().splitlines()
    return [json.loads(line)["question"] for line in lines if line.strip()][:n]


def run(n: int) -> None:
    from django.contrib.auth import get_user_model

    from athena.principals import Principal
    from retrieval.search import search
    from retrieval.types import SearchConfig

    users = get_user_model().objects
    principals = principals_named()
    qs = questions(n)
    config = SearchConfig(rerank=False, mmr=False)
    for q in qs[:3]:
        search(q, principals["two groups"], config=config)
    for label, principal in principals.items():
        samples: dict[str, list[float]] = {}
        for q in qs:
            timings = search(q, principal, config=config).timings_ms
            for key in ("dense", "bm25", "graph", "sources", "total"):
                if key in timings:
                    samples.setdefault(key, []).append(timings[key])
        print(f"{label}: {len(principal.group_ids)} groups, {len(qs)} questions (p50 / p95 ms)")
        for key, values in samples.items():
            print(f"  {key:8} {summary(values)}")
    for name in ("org-wide", "org-u00001"):
        user = users.get(username=name)
        times = []
        for _ in range(50):
            t0 = time.perf_counter()
            Principal.from_user(user)
            times.append((time.perf_counter() - t0) * 1000)
        print(f"Principal.from_user({name}): {summary(times)}")


if __name__ == "__main__":
    main()
