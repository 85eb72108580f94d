#!/usr/bin/env python
"""Dev-set harness: build/ingest the corpus of ../shared/devset, restrict its three internal documents to
`ops-admins`, create the two evaluation users, run `evaluate` and the official scorer.

    python tests/benchmarks/devset.py ingest [--corpus DIR]     # build (if missing) and ingest
    python tests/benchmarks/devset.py eval [--out PRED.jsonl] [--config JSON] [--compare]
"""

from __future__ import annotations

import argparse
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
    args = parser.parse_args()
    if args.cmd == "ingest":
        ingest(Path(args.corpus))
    else:
        evaluate(Path(args.out), args.config, args.compare, args.limit)


if __name__ == "__main__":
    main()
