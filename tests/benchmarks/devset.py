#!/usr/bin/env python
"""Dev-set harness: build/ingest the corpus of ../shared/devset, restrict its three internal documents to
`ops-admins`, create the two evaluation users, run `evaluate` and the official scorer.

    python tests/benchmarks/devset.py ingest [--corpus DIR]     # build (if missing) and ingest
    python tests/benchmarks/devset.py eval [--out PRED.jsonl] [--config JSON] [--compare]
    python tests/benchmarks/devset.py sample [--out PRED.jsonl]   # the sample KB's 30 questions, own database

`sample` is a held-out check: the sample knowledge base (knowledge/sample_kb, our own fictional NOC documents)
and its questions were never tuned on. It uses its own database (ATHENA_SAMPLE_DB_NAME, default
athena_sample), created and migrated when missing, so the dev corpus stays in the default one.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path

from common import DEVSET, ROOT, setup_django

RESTRICTED = [
    "openvpn/management-notes.txt",
    "chrony/FAQ.txt",
    "rsyslog-doc/html/troubleshooting/file_not_written.html",
]


def ingest(corpus: Path) -> None:
    if not (corpus / "corpus_manifest.tsv").exists():
        subprocess.run(["bash", str(DEVSET / "build_corpus.sh"), str(corpus)], check=True)
    setup_django()
    from django.core.management import call_command

    from athena.services import user_create_or_update
    from knowledge.models import Document
    from knowledge.services import document_set_acl

    started = time.perf_counter()
    call_command("ingest", str(corpus), "--inline", "--batch-size", "32")
    print(f"ingest wall time: {time.perf_counter() - started:.1f}s")
    for source in RESTRICTED:
        document = Document.objects.get(source=source)
        document_set_acl(document=document, access_tier="restricted", groups=["ops-admins"], actor=None)
    user_create_or_update(username="dev-user", groups=["employees"])
    user_create_or_update(username="dev-admin", groups=["employees", "ops-admins"])
    print("restricted 3 documents to ops-admins; users dev-user and dev-admin ready")


def evaluate(out: Path, config: str | None, compare: bool, limit: int | None) -> None:
    setup_django()
    from django.core.management import call_command

    args = [str(DEVSET / "questions.jsonl"), "--user", "dev-user", "--allowed-user", "dev-admin"]
    if config:
        args += ["--config", config]
    if limit:
        args += ["--limit", str(limit)]
    if compare:
        call_command("evaluate", *args, "--compare")
        return
    call_command("evaluate", *args, "--out", str(out))
    subprocess.run(
        [
            sys.executable,
            str(DEVSET / "score.py"),
            "--predictions",
            str(out),
            "--questions",
            str(DEVSET / "questions.jsonl"),
        ],
        check=False,
    )


def sample(out: Path) -> None:
    os.environ["ATHENA_DB_NAME"] = os.environ.get("ATHENA_SAMPLE_DB_NAME", "athena_sample")
    setup_django()
    import psycopg
    from django.conf import settings
    from django.core.management import call_command

    from athena.services import user_create_or_update

    db = settings.DATABASES["default"]
    with psycopg.connect(
        dbname="postgres", user=db["USER"], host=db["HOST"], port=db["PORT"], autocommit=True
    ) as conn:
        if not conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", [db["NAME"]]).fetchone():
            conn.execute(f'CREATE DATABASE "{db["NAME"]}"')
    call_command("migrate", verbosity=0)
    kb = ROOT / "knowledge" / "sample_kb"
    call_command("ingest", str(kb / "public"), "--prefix", "public/", "--access-tier", "internal", "--inline")
    call_command(
        "ingest",
        str(kb / "restricted"),
        *("--prefix", "restricted/", "--access-tier", "restricted", "--acl-group", "noc-admins", "--inline"),
    )
    user_create_or_update(username="sample-user", groups=["employees"])
    user_create_or_update(username="sample-admin", groups=["employees", "noc-admins"])
    questions = kb / "questions.jsonl"
    call_command(
        "evaluate",
        str(questions),
        "--user",
        "sample-user",
        "--allowed-user",
        "sample-admin",
        "--out",
        str(out),
    )
    score = [
        sys.executable,
        str(DEVSET / "score.py"),
        "--predictions",
        str(out),
        "--questions",
        str(questions),
    ]
    subprocess.run(score, check=False)


def main() -> None:
    parser = argparse.ArgumentParser()
    sub = parser.add_subparsers(dest="cmd", required=True)
    p_ingest = sub.add_parser("ingest")
    p_ingest.add_argument(
        "--corpus",
        default="/work/devcorpus" if Path("/work/devcorpus").exists() else str(ROOT / "var" / "devcorpus"),
    )
    p_eval = sub.add_parser("eval")
    p_eval.add_argument("--out", default=str(ROOT / "var" / "devset-predictions.jsonl"))
    p_eval.add_argument("--config", default=None)
    p_eval.add_argument("--compare", action="store_true")
    p_eval.add_argument("--limit", type=int, default=None)
    p_sample = sub.add_parser("sample")
    p_sample.add_argument("--out", default=str(ROOT / "var" / "sample-predictions.jsonl"))
    args = parser.parse_args()
    if args.cmd == "ingest":
        ingest(Path(args.corpus))
    elif args.cmd == "sample":
        sample(Path(args.out))
    else:
        evaluate(Path(args.out), args.config, args.compare, args.limit)


if __name__ == "__main__":
    main()
