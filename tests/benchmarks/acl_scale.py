#!/usr/bin/env python
"""Permissions at the size of a real organisation (a script, not collected by pytest).

`--build` adds an organisation to the database named by ATHENA_DB_NAME (grown first with
`retrieval.py --synthetic N`): GROUPS groups `org-gNNNN` in two divisions (the first half, the second half),
USERS users `org-uNNNNN` in 5-15 random groups each, and two wide users: `org-wide` in 300 groups of the second
division, `org-wide-match` in the same 300 and one group of the first. Of the synthetic documents, one in five
is shared with 500 groups of the first division (an all-hands document), one in five is restricted to three
random groups; the documents' groups and their chunks' ACL copies are written together, directly in SQL.

Then, over the first `--queries` dev-set questions, the median and p95 of each search stage (fused, no rerank or
MMR) for three principals: two groups (the retrieval benchmark's), `org-wide`, `org-wide-match`; and of
building each one's Principal from the database. This machine's two cores are shared: compare medians of runs
made one after the other.

    ATHENA_DB_NAME=athena_bench python tests/benchmarks/acl_scale.py --build --queries 30
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
    args = parser.parse_args()
    setup_django()
    if args.build:
        print(build(args.seed))
    run(args.queries)


def run(n: int) -> None:
    from django.contrib.auth import get_user_model
    from django.contrib.auth.models import Group

    from athena.principals import Principal
    from retrieval.search import search
    from retrieval.types import SearchConfig

    users = get_user_model().objects
    principals = {
        "two groups": Principal(
            None,
            "bench",
            tuple(
                sorted(Group.objects.filter(name__in=("employees", "netops")).values_list("pk", flat=True))
            ),
        ),
        "org-wide (300, none shared)": Principal.from_user(users.get(username="org-wide")),
        "org-wide-match (301, one shared)": Principal.from_user(users.get(username="org-wide-match")),
    }
    lines = (DEVSET / "questions.jsonl").read_text().splitlines()
    qs = [json.loads(line)["question"] for line in lines if line.strip()][:n]
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
