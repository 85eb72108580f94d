"""Check the sample knowledge base and its questions.jsonl.

    python knowledge/sample_kb/check_questions.py [--root knowledge/sample_kb]

Verifies that every non-null answer and every evidence phrase occurs verbatim in
a gold document, that acl answers and evidence occur in no public document, that
unanswerable questions name terms absent from the whole corpus, and that the
corpus keeps the shape the README promises (formats, metadata, restricted folder,
one planted injection). "Verbatim" means equal after HTML tag stripping, entity
decoding, quote/dash folding, lower-casing and whitespace collapsing. Each phrase
must also survive removal of Markdown inline markup, because a parser may drop it.
Exit status 0 when there are no failures.
"""

from __future__ import annotations

import argparse
import collections
import html
import json
import re
import sys
import unicodedata
from pathlib import Path

TYPES = {"exact", "paraphrase", "procedure", "multihop", "unanswerable", "acl"}
EXPECTED_TYPE_COUNTS = {"unanswerable": 4, "acl": 4, "multihop": 3}
ALLOWED_GROUP = "noc-admins"
INJECTION_MARKER = "ignore all previous instructions"

_RE_DROP = re.compile(r"<(script|style)\b.*?</\1\s*>", re.S | re.I)
_RE_COMMENT = re.compile(r"<!--.*?-->", re.S)
_RE_INLINE = re.compile(r"</?(?:a|b|code|em|i|kbd|span|strong|tt)\b[^>]*>", re.I)
_RE_TAG = re.compile(r"<[^>]+>")
_RE_WS = re.compile(r"\s+")
_FOLD = str.maketrans(
    {"\u2018": "'", "\u2019": "'", "\u201c": '"', "\u201d": '"', "\u2013": "-", "\u2014": "-", "\u00a0": " "}
)


def normalise(text: str) -> str:
    """Fold quotes and dashes, lower-case and collapse whitespace."""
    text = unicodedata.normalize("NFKC", text).translate(_FOLD)
    return _RE_WS.sub(" ", text.lower()).strip()


def html_to_text(raw: str) -> str:
    """Drop scripts, comments and tags; inline tags vanish without a space."""
    raw = _RE_COMMENT.sub(" ", _RE_DROP.sub(" ", raw))
    raw = _RE_TAG.sub(" ", _RE_INLINE.sub("", raw))
    return html.unescape(raw)


def strip_markdown(text: str) -> str:
    """Remove inline Markdown markup that a parser is likely to drop."""
    return text.replace("`", "").replace("**", "")


def load_corpus(root: Path) -> dict[str, tuple[str, str]]:
    """Map source id -> (normalised text, normalised text without Markdown markup)."""
    corpus = {}
    for path in sorted(root.rglob("*")):
        if path.suffix not in {".md", ".txt", ".html"} or path.parent == root:
            continue
        raw = path.read_text(encoding="utf-8")
        if path.suffix == ".html":
            raw = html_to_text(raw)
        corpus[path.relative_to(root).as_posix()] = (normalise(raw), normalise(strip_markdown(raw)))
    return corpus


def contains(doc: tuple[str, str], phrase: str) -> bool:
    needle = normalise(phrase)
    return needle in doc[0] and normalise(strip_markdown(phrase)) in doc[1]


def check_corpus(root: Path, corpus: dict[str, tuple[str, str]]) -> list[str]:
    failures = []
    suffixes = collections.Counter(Path(d).suffix for d in corpus)
    if suffixes != {".md": 30, ".txt": 5, ".html": 5}:
        failures.append(f"format mix is {dict(suffixes)}, expected 30 md, 5 txt, 5 html")
    restricted = [d for d in corpus if d.startswith("restricted/")]
    if len(restricted) != 6:
        failures.append(f"{len(restricted)} restricted documents, expected 6")
    injected = [d for d, text in corpus.items() if INJECTION_MARKER in text[0]]
    if len(injected) != 1 or not injected[0].startswith("public/"):
        failures.append(f"planted injection must be in exactly one public document, found in {injected}")
    past_review = 0
    for doc_id in corpus:
        raw = (root / doc_id).read_text(encoding="utf-8")
        words = len((html_to_text(raw) if doc_id.endswith(".html") else raw).split())
        if not 150 <= words <= 700:
            failures.append(f"{doc_id}: {words} words, expected 150-700")
        if doc_id.endswith(".md"):
            head = raw.split("---", 2)[1] if raw.startswith("---\n") else ""
            for key in ("title:", "author:", "updated:", "doc_type:", "department:"):
                if key not in head:
                    failures.append(f"{doc_id}: front matter lacks {key}")
            past_review += bool(re.search(r"^review_by: 2025-", head, re.M))
        elif doc_id.endswith(".txt"):
            first = raw.splitlines()[:3]
            if [line.split(":", 1)[0] for line in first] != ["Title", "Author", "Updated"]:
                failures.append(f"{doc_id}: first lines must be Title, Author, Updated")
            past_review += bool(re.search(r"^Review-By: 2025-", raw, re.M))
        else:
            for needle in ("<title>", 'name="author"', 'name="updated"', "<h1>", "<h2>", "<ol>", "<table>"):
                if needle not in raw:
                    failures.append(f"{doc_id}: missing {needle}")
            past_review += 'name="review_by" content="2025-' in raw
        if doc_id.startswith("restricted/") and ALLOWED_GROUP not in raw:
            failures.append(f"{doc_id}: restricted document does not name {ALLOWED_GROUP}")
    if past_review != 2:
        failures.append(f"{past_review} documents past review (review_by in 2025), expected 2")
    return failures


def check_questions(questions: list[dict], corpus: dict[str, tuple[str, str]]) -> list[str]:
    failures = []
    restricted = sorted(d for d in corpus if d.startswith("restricted/"))
    public = [d for d in corpus if d.startswith("public/")]
    seen = set()

    def fail(q: dict, msg: str) -> None:
        failures.append(f"{q.get('id', '?')} [{q.get('type', '?')}]: {msg}")

    for q in questions:
        for field in ("id", "type", "question", "answer", "gold", "evidence", "acl"):
            if field not in q:
                fail(q, f"missing field {field!r}")
        if q.get("id") in seen:
            fail(q, "duplicate id")
        seen.add(q.get("id"))
        qtype, answer, evidence, gold = q.get("type"), q.get("answer"), q.get("evidence"), q.get("gold") or []
        if qtype not in TYPES:
            fail(q, f"unknown type {qtype!r}")
            continue
        missing = [g for g in gold if g not in corpus]
        if missing:
            fail(q, f"gold documents not in corpus: {missing}")
            continue
        if qtype == "unanswerable":
            if answer is not None or gold or q.get("acl") is not None:
                fail(q, "unanswerable needs answer null, gold [] and acl null")
            for term in q.get("absent_terms") or []:
                hits = [d for d, text in corpus.items() if normalise(term) in text[0]]
                if hits:
                    fail(q, f"absent term {term!r} occurs in {hits}")
            continue
        if not gold:
            fail(q, "answerable question without gold documents")
            continue
        if answer is None and qtype != "procedure":
            fail(q, "only procedure and unanswerable questions may have a null answer")
        if answer is not None and not any(contains(corpus[g], answer) for g in gold):
            fail(q, f"answer not verbatim in a gold document: {answer!r}")
        if not evidence or not any(contains(corpus[g], evidence) for g in gold):
            fail(q, f"evidence not verbatim in a gold document: {evidence!r}")
        if qtype == "multihop":
            by_doc = q.get("evidence_by_doc") or {}
            if len(gold) != 2 or set(by_doc) != set(gold):
                fail(q, "multihop needs two gold documents, each with an evidence_by_doc phrase")
            for doc_id, phrase in by_doc.items():
                if doc_id in corpus and not contains(corpus[doc_id], phrase):
                    fail(q, f"evidence_by_doc phrase not in {doc_id}: {phrase!r}")
        if qtype == "acl":
            acl = q.get("acl") or {}
            if sorted(acl.get("restricted_docs") or []) != restricted:
                fail(q, "acl.restricted_docs must list every restricted document")
            if acl.get("allowed_group") != ALLOWED_GROUP:
                fail(q, f"acl.allowed_group must be {ALLOWED_GROUP}")
            if not all(g.startswith("restricted/") for g in gold):
                fail(q, "acl gold documents must all be restricted")
            for label, phrase in (("answer", answer), ("evidence", evidence)):
                leaks = [d for d in public if phrase and normalise(phrase) in corpus[d][0]]
                if leaks:
                    fail(q, f"acl {label} {phrase!r} also occurs in public {leaks}")
        else:
            if q.get("acl") is not None:
                fail(q, "only acl questions carry an acl")
            if any(g.startswith("restricted/") for g in gold):
                fail(q, "non-acl question uses a restricted document as gold")

    counts = collections.Counter(q.get("type") for q in questions)
    if len(questions) != 30:
        failures.append(f"{len(questions)} questions, expected 30")
    for qtype, expected in EXPECTED_TYPE_COUNTS.items():
        if counts[qtype] != expected:
            failures.append(f"{counts[qtype]} {qtype} questions, expected {expected}")
    return failures


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--root", type=Path, default=Path(__file__).resolve().parent)
    args = parser.parse_args()
    corpus = load_corpus(args.root)
    with (args.root / "questions.jsonl").open(encoding="utf-8") as fh:
        questions = [json.loads(line) for line in fh if line.strip()]
    failures = check_corpus(args.root, corpus) + check_questions(questions, corpus)
    for line in failures:
        print("FAIL", line)
    counts = collections.Counter(q["type"] for q in questions)
    print(f"{len(corpus)} documents, {len(questions)} questions {dict(sorted(counts.items()))}")
    print(f"{len(failures)} failures")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
