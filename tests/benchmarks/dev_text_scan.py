#!/usr/bin/env python
"""Find dev-set text in our own files: runs of words shared with a dev document or a dev question, dev question
ids and dev document names, which may not appear in code, comments or tests (issue 16: tune on the train split,
never write the dev set into the system).

    python tests/benchmarks/dev_text_scan.py --corpus /work/devcorpus [--words 6] [--questions FILE]

Every text file git tracks is read (UTF-8, no NUL byte), except this folder's README (the tuning log names dev
documents on purpose), the extra question set and the sample knowledge base (ours). A hit is a run of at least
`--words` words (lower-cased, punctuation ignored, read across line breaks) that a dev document or a dev
question's question, answer or evidence also holds (runs found in 50 or more dev documents are ordinary English,
and runs mostly of numbers or one- and two-letter pieces are no text), a dev question's id, or a dev document's
name (see `document_names`). Prints one line per hit (file:line: what) and exits 1 when there is any, 2 on bad
arguments, so it can gate a change.
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
from html import unescape
from pathlib import Path

from common import DEVSET, ROOT

WORD = re.compile(r"[a-z0-9_]+")
TAG = re.compile(r"<[^>]+>")
SKIPPED = ("tests/benchmarks/README.md", "tests/benchmarks/extra_questions.jsonl")
SKIPPED_FOLDERS = ("knowledge/sample_kb/",)
COMMON_IN = 50  # documents: a run found in this many is ordinary English
SHINGLE = 5  # words per hashed run; a hit of N words is N - SHINGLE + 1 shingles in a row


def words_of(text: str) -> list[str]:
    return WORD.findall(text.lower())


def shingles(words: list[str]) -> list[int]:
    return [hash(tuple(words[at : at + SHINGLE])) for at in range(len(words) - SHINGLE + 1)]


def dev_shingles(corpus: Path, questions: list[dict]) -> set[int]:
    """The hashed word runs of the dev corpus and questions, less those in COMMON_IN documents or more."""
    seen_in: dict[int, int] = {}
    texts = []
    for path in sorted(p for p in corpus.rglob("*") if p.is_file() and p.suffix != ".tsv"):
        text = path.read_text(errors="ignore")
        texts.append(unescape(TAG.sub(" ", text)) if path.suffix in (".html", ".htm") else text)
    for question in questions:
        fields = [question.get(k) for k in ("question", "answer", "evidence")]
        texts.append(" ".join(str(f) for f in [*fields, *(question.get("answer_aliases") or [])] if f))
    for text in texts:
        for shingle in set(shingles(words_of(text))):
            seen_in[shingle] = seen_in.get(shingle, 0) + 1
    return {shingle for shingle, documents in seen_in.items() if documents < COMMON_IN}


def our_texts() -> dict[str, str]:
    """Every file git tracks that is text (UTF-8, no NUL byte), but the skipped ones: name -> text."""
    listed = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True, check=True).stdout
    texts = {}
    for name in listed.splitlines():
        if name in SKIPPED or name.startswith(SKIPPED_FOLDERS) or not (ROOT / name).is_file():
            continue
        raw = (ROOT / name).read_bytes()
        if b"\0" in raw:
            continue
        try:
            texts[name] = raw.decode("utf-8")
        except UnicodeDecodeError:
            continue
    return texts


def document_names(corpus: Path, questions: list[dict]) -> set[str]:
    """What names a dev document: its path in the corpus ("pkg/man8/tool.8.txt"), the gold paths of the
    questions, and its file name where that is its own ("lb-pool.8.txt", "SPOOL_README.html": a digit, '_' or
    '-' in the name, or two dots) and not a plain word that names other things too ("index.html", "FAQ.txt")."""
    paths = {
        p.relative_to(corpus).as_posix() for p in corpus.rglob("*") if p.is_file() and p.suffix != ".tsv"
    }
    paths |= {gold for question in questions for gold in question.get("gold") or []}
    own = {
        name
        for name in (path.rsplit("/", 1)[-1] for path in paths)
        if name.count(".") >= 2 or re.search(r"[\d_-]", name.split(".", 1)[0])
    }
    return paths | own


def file_hits(text: str, dev: set[int], least: int) -> list[tuple[int, str]]:
    """The runs of at least `least` words of `text` that the dev set holds, read across line breaks (a comment
    or a string wrapped over lines), each with the number of the line it starts on; a run whose words are
    mostly numbers or one- and two-letter pieces (a vector, an address, a regex's class) is no text."""
    lowered = text.lower()
    found = [(m.group(0), m.start()) for m in WORD.finditer(lowered)]
    words = [word for word, _ in found]
    marks = [shingle in dev for shingle in shingles(words)]
    hits, at = [], 0
    while at < len(marks):
        if not marks[at]:
            at += 1
            continue
        end = at
        while end + 1 < len(marks) and marks[end + 1]:
            end += 1
        run = words[at : end + SHINGLE]
        if (
            len(run) >= least
            and sum(1 for word in run if len(word) > 2 and not word.isdigit()) > len(run) // 2
        ):
            hits.append((lowered.count("\n", 0, found[at][1]) + 1, " ".join(run)))
        at = end + 1
    return hits


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--corpus", type=Path, required=True, help="the built dev corpus (build_corpus.sh)")
    parser.add_argument("--questions", type=Path, default=DEVSET / "questions.jsonl")
    parser.add_argument("--words", type=int, default=6, help="shortest run reported (at least 5)")
    args = parser.parse_args()
    if args.words < SHINGLE:
        parser.error(f"--words must be at least {SHINGLE}")
    if not (args.corpus / "corpus_manifest.tsv").exists():
        parser.error(f"{args.corpus} is not a built dev corpus (no corpus_manifest.tsv)")
    try:
        questions = [json.loads(line) for line in args.questions.read_text().splitlines() if line.strip()]
    except (OSError, ValueError) as exc:
        parser.error(f"cannot read the questions {args.questions}: {exc}")
    dev = dev_shingles(args.corpus, questions)
    ids = [str(q["id"]) for q in questions if q.get("id")]
    id_pattern = re.compile(r"\b(?:" + "|".join(map(re.escape, ids)) + r")\b") if ids else None
    names = sorted(document_names(args.corpus, questions))
    files = our_texts()
    found = 0
    for name, text in files.items():
        reports = [(number, f"words: {hit}") for number, hit in file_hits(text, dev, args.words)]
        for number, line in enumerate(text.splitlines(), 1):
            if id_pattern is not None:
                reports += [(number, f"question id: {m.group(0)}") for m in id_pattern.finditer(line)]
            reports += [(number, f"document name: {n}") for n in names if n in line]
        for number, report in sorted(reports):
            print(f"{name}:{number}: {report}")
        found += len(reports)
    print(f"{found} hit(s) in {len(files)} files", file=sys.stderr)
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
