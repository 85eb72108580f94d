#!/usr/bin/env python
"""Dev-set harness: build/ingest the corpus of ../shared/devset, restrict every document an acl question lists
to its allowed group, create the two evaluation users, run `evaluate` and the official scorer.

    python tests/benchmarks/devset.py ingest [--corpus DIR]     # build (if missing) and ingest
    python tests/benchmarks/devset.py eval [--split train|validation|all] [--out PRED.jsonl] [--config JSON]
                                           [--compare] [--questions FILE] [--ablate PART,...]
    python tests/benchmarks/devset.py sample [--out PRED.jsonl]   # the sample KB's 30 questions, own database

`sample` is a held-out check: the sample knowledge base (knowledge/sample_kb, our own fictional NOC documents)
and its questions were never tuned on. It uses its own database (ATHENA_SAMPLE_DB_NAME, default
athena_sample), created and migrated when missing, so the dev corpus stays in the default one.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

from common import DEVSET, ROOT, database_create_migrated, setup_django

SPLITS = ("train", "validation", "all")


def load_questions(path: Path, split: str = "all") -> list[dict]:
    """The questions of one split (a file without `split` fields, such as a curation export, is all train)."""
    if split not in SPLITS:
        raise SystemExit(f"unknown split {split!r}; valid: {', '.join(SPLITS)}")
    questions = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    return [q for q in questions if split == "all" or q.get("split", "train") == split]


def restricted_documents(questions: list[dict]) -> dict[str, str]:
    """Every document an acl question lists -> the group allowed to read it (a document is restricted when any
    list names it)."""
    restricted: dict[str, str] = {}
    for question in questions:
        acl = question.get("acl") or {}
        for source in acl.get("restricted_docs", []):
            restricted[source] = acl.get("allowed_group", "ops-admins")
    return restricted


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
    restricted = restricted_documents(load_questions(DEVSET / "questions.jsonl"))
    for source, group in sorted(restricted.items()):
        document = Document.objects.get(source=source)
        document_set_acl(document=document, access_tier="restricted", groups=[group], actor=None)
    groups = sorted(set(restricted.values()))
    user_create_or_update(username="dev-user", groups=["employees"])
    user_create_or_update(username="dev-admin", groups=["employees", *groups])
    print(
        f"restricted {len(restricted)} documents to {', '.join(groups)}; users dev-user and dev-admin ready"
    )


def evaluate(
    out: Path, config: str | None, compare: bool, limit: int | None, split: str, questions_file: Path
) -> None:
    setup_django()
    from django.core.management import call_command

    chosen = out.with_suffix(f".{split}.questions.jsonl")
    chosen.parent.mkdir(parents=True, exist_ok=True)
    chosen.write_text("".join(json.dumps(q) + "\n" for q in load_questions(questions_file, split)))
    args = [str(chosen), "--user", "dev-user", "--allowed-user", "dev-admin"]
    if config:
        args += ["--config", config]
    if limit:
        args += ["--limit", str(limit)]
    if compare:
        call_command("evaluate", *args, "--compare")
        return
    call_command("evaluate", *args, "--out", str(out))
    if limit:
        # the scorer reads the whole split, where every question not asked counts as a miss
        print(
            f"--limit {limit}: the official scorer is not run (the figures above cover the questions asked)"
        )
        return
    subprocess.run(
        [
            sys.executable,
            str(DEVSET / "score.py"),
            "--predictions",
            str(out),
            "--questions",
            str(questions_file),
            *(["--split", split] if split != "all" else []),
        ],
        check=False,
    )


def sample(out: Path) -> None:
    os.environ["ATHENA_DB_NAME"] = os.environ.get("ATHENA_SAMPLE_DB_NAME", "athena_sample")
    setup_django()
    from django.core.management import call_command

    from athena.services import user_create_or_update

    database_create_migrated()
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
    p_eval.add_argument("--split", default="train", choices=SPLITS)
    p_eval.add_argument("--questions", default=str(DEVSET / "questions.jsonl"))
    p_eval.add_argument(
        "--ablate",
        default="",
        help="comma-separated answering parts to turn off (agents.steps.state.ABLATABLE), e.g. decompose,reformulate",
    )
    p_sample = sub.add_parser("sample")
    p_sample.add_argument("--out", default=str(ROOT / "var" / "sample-predictions.jsonl"))
    args = parser.parse_args()
    if args.cmd == "ingest":
        ingest(Path(args.corpus))
    elif args.cmd == "sample":
        sample(Path(args.out))
    else:
        if args.limit is not None and args.limit < 1:
            parser.error(f"--limit must be at least 1, got {args.limit}")
        if args.ablate and args.compare:
            parser.error("--ablate turns off answering parts, and --compare measures retrieval only")
        if args.ablate:
            os.environ["ATHENA_ABLATE"] = args.ablate  # read by the settings when Django starts
        evaluate(Path(args.out), args.config, args.compare, args.limit, args.split, Path(args.questions))


if __name__ == "__main__":
    main()
