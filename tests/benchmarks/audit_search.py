#!/usr/bin/env python
"""The compliance search's free text (`text=`) on an audit log of production size (a script, not collected by
pytest).

`--fill N` grows the audit table of the database named by ATHENA_DB_NAME to N events (default 300,000; only the
missing ones are added), inserted directly with COPY: 85% question events shaped as agents.services records them
(the question, an answer of 80-120 words, ten retrieved chunks with document names, chunk ids and content hashes,
three citations with quotes, the trace and timings: about 4.6 KB of JSON each), the rest feedback, upload,
guardrail, login_failed and audit_export events. The words come from the sample knowledge base; the document
names are made up. Their `hash` and `prev_hash` are random hex: the chain is not verified here, and this log
will never verify again. The audit table is append-only, so the events can never be taken out: the script
refuses a database whose name does not start with `bench_` unless --any-database is given. `--create` first
creates that database and migrates it (as the owner role).

Then, `--runs` times each after one warm-up, for a rare phrase (in about one event in 20,000), a common word (in
about one question in four), a word that occurs nowhere, each `--text`, and two searches without text (none, one
user): the two statements the compliance API and page ran before audit_event_search_page, the count
(`count_ms`) and the first page (`page_ms`, `[:50]`) and their sum (`total_ms`), and audit_event_search_page
itself (`one_pass_ms`, what they run now; absent from the code before it). Medians in ms. Then audit_record (the
real write path: advisory lock, head read, HMAC, insert, synchronous commit) `--writes` times with a question
event's payload: p50, p95, p99, the slowest and how many took over 50 ms. Last, the bytes the table holds (with
its TOAST) and each of its indexes.

`--index none` drops every index on the payload before measuring, `--index trgm` builds (if missing) the one
that migration audit 0005 builds, with its statements, `--index as-is` (default) measures what is there.
`--explain` prints each statement Django sent and its EXPLAIN ANALYZE. This machine's two cores are shared:
compare medians of runs made one after the other.

    ATHENA_DB_NAME=bench_audit python tests/benchmarks/audit_search.py --create --fill 300000 --index none \
        --text citations --text the --save /tmp/audit-none.json
    ATHENA_DB_NAME=bench_audit python tests/benchmarks/audit_search.py --fill 0 --index trgm --explain \
        --text citations --text the --compare /tmp/audit-none.json
"""

from __future__ import annotations

import argparse
import json
import random
import re
import statistics
import time
import uuid
from datetime import UTC, datetime, timedelta
from importlib import import_module
from pathlib import Path
from typing import Any

from common import ROOT, database_create_migrated, owner_connection, percentile, results_save, setup_django

# what is searched for: a phrase put in about one answer in RARE_EVERY, a word put in about one question in
# COMMON_EVERY, and a word that no event holds (neither word is in the vocabulary, in any case or inside another)
RARE_PHRASE = "Quarterly Recertification of the Jump Hosts"
RARE_EVERY = 20_000
COMMON_WORD = "tunnel"
COMMON_EVERY = 4
ABSENT_WORD = "wolframite"
SEARCHES = {
    "rare_phrase": RARE_PHRASE.lower(),
    "common_word": COMMON_WORD.upper(),
    "absent_word": ABSENT_WORD,
}
PAGE = 50  # audit.views.PAGE_SIZE and the API's default limit

TRGM_INDEX = "audit_payload_trgm"
STEPS = (
    "guard_input",
    "follow_up_rewrite",
    "classify",
    "clarify",
    "decompose",
    "retrieve",
    "evaluate",
    "decide",
    "generate",
    "compose",
    "guard_output",
)


def vocabulary() -> list[str]:
    text = " ".join(
        path.read_text(errors="replace") for path in sorted((ROOT / "knowledge" / "sample_kb").rglob("*.*"))
    )
    # no word holds the searched words: how often each occurs is set by EventMaker alone
    return [
        w
        for w in re.findall(r"[A-Za-z][a-z]{2,14}", text)
        if COMMON_WORD not in w.lower() and ABSENT_WORD not in w.lower()
    ]


class EventMaker:
    """Payloads of the shapes audit_record receives, drawn from a seeded generator."""

    def __init__(self, seed: int) -> None:
        self.rng = random.Random(seed)
        self.words = vocabulary()
        tiers = ("public", "public", "public", "restricted", "confidential")
        kinds = ("runbook", "sop", "config", "incident", "policy", "manual")
        self.documents = [
            f"{self.rng.choice(tiers)}/{self.rng.choice(kinds)}-{self.rng.choice(self.words).lower()}-{n:04d}.md"
            for n in range(10_000)
        ]
        self.users = [f"user{n:04d}" for n in range(3_000)]

    def sentence(self, low: int, high: int) -> str:
        words = self.rng.choices(self.words, k=self.rng.randint(low, high))
        return " ".join(words).capitalize() + "."

    def text(self, words: int) -> str:
        parts: list[str] = []
        while sum(len(p.split()) for p in parts) < words:
            parts.append(self.sentence(8, 20))
        return " ".join(parts)

    def hexdigest(self) -> str:
        return f"{self.rng.getrandbits(256):064x}"

    def question(self) -> tuple[str, str, list[str], dict[str, Any]]:
        rng = self.rng
        question = self.sentence(6, 14)[:-1] + "?"
        if rng.randrange(COMMON_EVERY) == 0:
            question = question[:-1] + f" when the {COMMON_WORD} is down?"
        answer = self.text(rng.randint(80, 120))
        if rng.randrange(RARE_EVERY) == 0:
            answer += f" See the {RARE_PHRASE} procedure."
        hits = rng.sample(self.documents, 10)
        chunks = [
            {"chunk_id": rng.randrange(1, 300_000), "document": source, "content_hash": self.hexdigest()}
            for source in hits
        ]
        abstained = rng.random() < 0.25
        citations = [
            {
                "ref": n + 1,
                "document": chunks[n]["document"],
                "title": self.sentence(2, 6)[:-1],
                "section": self.sentence(1, 4)[:-1],
                "page": None,
                "chunk_id": chunks[n]["chunk_id"],
                "updated_at": "2026-03-01T09:30:00+00:00",
                "access_tier": chunks[n]["document"].split("/")[0],
                "quote": self.sentence(15, 30),
            }
            for n in range(0 if abstained else 3)
        ]
        trace = [
            {"step": step, "decision": self.sentence(1, 4), "ms": round(rng.random() * 90, 1)}
            for step in STEPS
        ]
        payload = {
            "question": question,
            "question_id": str(uuid.UUID(int=rng.getrandbits(128))),
            "rewritten": question,
            "groups": sorted(rng.sample(["employees", "noc-admins", "sre", "finance", "hr"], 2)),
            "conversation": str(uuid.UUID(int=rng.getrandbits(128))),
            "filters": {},
            "retrieved_chunks": chunks,
            "answer": answer,
            "citations": citations,
            "attribution_score": 0.0 if abstained else round(rng.random(), 4),
            "guardrails": {"code": "ok", "output_masked": []},
            "template": rng.choice(["procedure_sop", "factoid", "troubleshooting", "comparison"]),
            "prompt": None,
            "trace": trace,
            "timings_ms": {**{t["step"]: t["ms"] for t in trace}, "total": round(rng.random() * 900, 1)},
        }
        return "abstained" if abstained else "answered", "question", sorted(set(hits)), payload

    def other(self) -> tuple[str, str, list[str], dict[str, Any]]:
        rng = self.rng
        pick = rng.random()
        if pick < 0.4:
            vote = rng.choice([1, -1])
            comment = self.sentence(4, 20) if vote < 0 else ""
            payload = {"answer_id": rng.randrange(1, 10**6), "audit_event_id": rng.randrange(1, 10**6)}
            return "up" if vote > 0 else "down", "feedback", [], {**payload, "vote": vote, "comment": comment}
        if pick < 0.6:
            source = f"uploads/{rng.randrange(1, 3000)}/{rng.choice(self.words).lower()}.md"
            payload = {"document": source, "bytes": rng.randrange(1, 10**6), "expires_at": "", "errors": {}}
            return "indexed", "upload", [source], payload
        if pick < 0.75:
            details = [self.sentence(3, 8)]
            return (
                "injection",
                "guardrail",
                [],
                {"code": "injection", "details": details, "question_event": 1},
            )
        if pick < 0.9:
            return "refused", "login_failed", [], {"username": rng.choice(self.users), "ip": "10.0.0.1"}
        query = {"text": rng.choice(self.words), "kind": "question"}
        return "", "audit_export", [], {"format": rng.choice(["csv", "jsonl"]), "query": query}

    def event(self) -> tuple[str, str, list[str], dict[str, Any]]:
        return self.question() if self.rng.random() < 0.85 else self.other()


def database_guard(any_database: bool) -> str:
    from django.conf import settings

    name = str(settings.DATABASES["default"]["NAME"])
    if not name.startswith("bench_") and not any_database:
        raise SystemExit(
            f"refused: the database {name!r} does not start with bench_; this script adds events that can never "
            "be removed and breaks its audit chain (--any-database to go on anyway)"
        )
    return name


def fill(target: int, seed: int) -> dict[str, Any]:
    from django.db import connection, transaction

    from audit.models import AuditEvent

    have = AuditEvent.objects.count()
    missing = max(0, target - have)
    if not missing:
        return {"added": 0, "events": have}
    maker = EventMaker(seed + have)
    started = time.perf_counter()
    first = datetime(2024, 1, 1, tzinfo=UTC)
    step = timedelta(days=730) / max(target, 1)
    columns = "created_at, kind, actor, actor_id, verdict, documents, payload, key_id, prev_hash, hash"
    batch = 20_000
    for offset in range(0, missing, batch):
        with (
            transaction.atomic(),
            connection.cursor() as cursor,
            cursor.copy(f"COPY audit_auditevent ({columns}) FROM STDIN") as copy,
        ):
            for n in range(have + offset, have + min(offset + batch, missing)):
                verdict, kind, documents, payload = maker.event()
                actor = maker.rng.choice(maker.users)
                copy.write_row(
                    (
                        first + step * n,
                        kind,
                        actor,
                        None,
                        verdict,
                        json.dumps(documents, ensure_ascii=False),
                        json.dumps(payload, ensure_ascii=False),
                        "1",
                        maker.hexdigest(),
                        maker.hexdigest(),
                    )
                )
        print(f"  {have + offset + min(batch, missing - offset):,} events", flush=True)
    owner = owner_connection()
    with owner.cursor() as cursor:
        cursor.execute("VACUUM ANALYZE audit_auditevent")
    return {"added": missing, "events": have + missing, "fill_s": round(time.perf_counter() - started, 1)}


def payload_indexes() -> list[str]:
    with owner_connection().cursor() as cursor:
        cursor.execute(
            "SELECT indexname FROM pg_indexes WHERE tablename = 'audit_auditevent' AND indexdef LIKE '%payload%'"
        )
        return [row[0] for row in cursor.fetchall()]


def index_set(mode: str) -> dict[str, Any]:
    """Drop (`none`) or build (`trgm`) the payload's trigram index; returns how long that took."""
    owner = owner_connection()
    started = time.perf_counter()
    with owner.cursor() as cursor:
        if mode == "none":
            for name in payload_indexes():
                cursor.execute(f'DROP INDEX IF EXISTS "{name}"')
        elif mode == "trgm" and TRGM_INDEX not in payload_indexes():
            # the statements of the migration that builds it (concurrently, as on a live log)
            for statement in import_module("audit.migrations.0005_audit_payload_trgm").CREATE:
                cursor.execute(statement)
            cursor.execute("ANALYZE audit_auditevent")
        else:
            return {}
    return {"index_change_s": round(time.perf_counter() - started, 1)}


def sizes() -> dict[str, int]:
    with owner_connection().cursor() as cursor:
        cursor.execute(
            "SELECT pg_relation_size('audit_auditevent'), pg_table_size('audit_auditevent'), "
            "pg_indexes_size('audit_auditevent')"
        )
        heap, table, indexes = cursor.fetchone()
        out = {"heap_bytes": heap, "table_with_toast_bytes": table, "all_indexes_bytes": indexes}
        cursor.execute(
            "SELECT c.relname, pg_relation_size(c.oid) FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid "
            "WHERE i.indrelid = 'audit_auditevent'::regclass ORDER BY c.relname"
        )
        for name, size in cursor.fetchall():
            out[f"index_bytes.{name}"] = size
    return out


def timed_ms(once: Any) -> float:
    started = time.perf_counter()
    once()
    return (time.perf_counter() - started) * 1000


def searches(runs: int, explain: bool, extra: list[str]) -> dict[str, Any]:
    """Per case: `count` and `page` ([:50]) as two statements (what the API and the page ran before
    audit_event_search_page), `total` their sum, and `one_pass` audit_event_search_page (what they run now)."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from audit import selectors
    from audit.selectors import AuditQuery, audit_event_search

    cases = {
        **{label: AuditQuery(text=text) for label, text in SEARCHES.items()},
        **{f"text_{n}": AuditQuery(text=text) for n, text in enumerate(extra, 1)},
        # no text: what the page shows first, and one asker's events (no payload read)
        "no_filter": AuditQuery(),
        "one_user": AuditQuery(user="user0042"),
    }
    one_pass = getattr(selectors, "audit_event_search_page", None)  # absent from the code before it
    out: dict[str, Any] = {}
    for label, query in cases.items():
        qs = audit_event_search(query=query)
        with CaptureQueriesContext(connection) as sent:  # also the warm-up
            found = qs.count()
            list(qs[:PAGE])
            if one_pass:
                one_pass(query=query, offset=0, limit=PAGE)
        timings: dict[str, list[float]] = {"count_ms": [], "page_ms": [], "total_ms": [], "one_pass_ms": []}
        for _ in range(runs):
            count_ms = timed_ms(qs.count)
            page_ms = timed_ms(lambda: list(qs[:PAGE]))  # noqa: B023 - called at once
            timings["count_ms"].append(count_ms)
            timings["page_ms"].append(page_ms)
            timings["total_ms"].append(count_ms + page_ms)
            if one_pass:
                timings["one_pass_ms"].append(timed_ms(lambda: one_pass(query=query, offset=0, limit=PAGE)))  # noqa: B023
        out[label] = {"matches": found} | {
            name: round(statistics.median(values), 1) for name, values in timings.items() if values
        }
        asked = {name: value for name, value in vars(query).items() if value}
        print(f"  {label:12s} {asked}: {found:,} events, {out[label]}", flush=True)
        if explain:
            # the statements as Django sent them (parameters bound), explained as they ran
            for name, sent_query in zip(
                ("count", "page", "one pass", "its rows"), sent.captured_queries, strict=False
            ):
                print(f"    {name} SQL: {sent_query['sql']}")
                with connection.cursor() as cursor:
                    cursor.execute(f"EXPLAIN (ANALYZE, BUFFERS) {sent_query['sql']}")
                    for (line,) in cursor.fetchall():
                        print(f"      {line}")
    return out


def writes(count: int, seed: int) -> dict[str, float | int]:
    from audit.services import audit_record

    maker = EventMaker(seed)
    values = []
    for _ in range(count):
        verdict, kind, documents, payload = maker.question()
        started = time.perf_counter()
        audit_record(kind=kind, actor="bench", verdict=verdict, documents=documents, payload=payload)
        values.append((time.perf_counter() - started) * 1000)
    return {
        "p50_ms": round(percentile(values, 0.5), 2),
        "p95_ms": round(percentile(values, 0.95), 2),
        "p99_ms": round(percentile(values, 0.99), 2),
        "max_ms": round(max(values), 2),
        # GIN's pending list taken into the index by the write that fills it (every hundred writes or so)
        "over_50ms": sum(value > 50 for value in values),
        "mean_ms": round(statistics.fmean(values), 2),
    }


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--create", action="store_true", help="create and migrate the database first")
    parser.add_argument(
        "--fill", type=int, default=300_000, help="events the table should hold (0: add none)"
    )
    parser.add_argument("--index", choices=["as-is", "none", "trgm"], default="as-is")
    parser.add_argument(
        "--runs", type=int, default=5, help="timed runs of each search after one warm-up (0: none)"
    )
    parser.add_argument("--writes", type=int, default=200, help="audit_record calls timed (0: none)")
    parser.add_argument("--text", action="append", default=[], help="another text to search for (repeatable)")
    parser.add_argument(
        "--explain", action="store_true", help="print the SQL and EXPLAIN ANALYZE of each search"
    )
    parser.add_argument("--seed", type=int, default=41)
    parser.add_argument("--any-database", action="store_true", help="run on a database not named bench_*")
    parser.add_argument("--save", type=Path, help="write the figures to this JSON file")
    parser.add_argument("--compare", type=Path, help="print the figures against a saved run")
    args = parser.parse_args()

    setup_django()
    name = database_guard(args.any_database)
    if args.create:
        database_create_migrated()
    results: dict[str, Any] = {"database": name}
    # dropped before the fill and built after it: COPY into a table with the trigram index is much slower
    changed = index_set("none") if args.index == "none" else {}
    if args.fill:
        print(f"fill to {args.fill:,} events", flush=True)
        results["fill"] = fill(args.fill, args.seed)
    if args.index == "trgm":
        changed = index_set("trgm")
    results["index"] = {"mode": args.index, **changed, "payload_indexes": payload_indexes()}
    print(f"payload indexes: {results['index']['payload_indexes'] or 'none'}", flush=True)
    if args.runs:
        print(f"searches (median of {args.runs} runs, ms):", flush=True)
        results["search"] = searches(args.runs, args.explain, args.text)
    if args.writes:
        results["audit_record"] = writes(args.writes, args.seed + 1)
        print(f"audit_record x{args.writes}: {results['audit_record']}", flush=True)
    results["sizes"] = sizes()
    for key, value in results["sizes"].items():
        print(f"  {key:45s} {value / 2**20:10.1f} MiB")
    results_save(results, args.save, args.compare)


if __name__ == "__main__":
    main()
