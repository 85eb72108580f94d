#!/usr/bin/env python
"""How answers read: counts of the text defects a reader trips over, over a predictions file of `devset.py eval`
(or `manage.py evaluate`).

    python tests/benchmarks/answer_text.py PRED.jsonl [--split train|validation|all] [--questions Q.jsonl]
                                          [--save F.json] [--compare OLD.json]

Counts, over the answered runs of the split: words broken across lines ("con- tact"; "pre- and post-" is
written so and not counted), table cell separators shown (" | "), man page headings run into the text
("SYNOPSIS fenceportd"), headings standing alone as a sentence ("DESCRIPTION [3]"), code blocks shown with
their lines, runs of prose of more than LONG_RUN words between two citations (entries of a list run together:
"-q, --quiet Print nothing ... -W, --wide As with the -l option ..."), and the answers' length in words
(median, p95). Only figures are printed, never a question or an answer, so it may be run on the validation
split too. `--questions` names another question file (the extra set: tests/benchmarks/extra_questions.jsonl).
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
from pathlib import Path

from common import DEVSET, percentile, results_save
from devset import load_questions

BROKEN_WORD = re.compile(r"[a-z]{2}- (?!(?:and|or|to|as well)\b)[a-z]{2,}")
CELL_SEPARATOR = " | "
RUN_IN_HEADING = re.compile(r"\b(?:NAME|SYNOPSIS|DESCRIPTION|OPTIONS|EXAMPLES|FILES|SEE ALSO) [a-z]")
CODE_INDENT = "    "  # a code line that keeps its line (agents/layout.py)
BARE_HEADING = re.compile(r"(?:^|\] )[A-Z][A-Z0-9]{3,}(?: [A-Z][A-Z0-9]+){0,4} \[\d+\]")
CITATION = re.compile(r"\[\d+\]")
LONG_RUN = 45  # words of prose between two citations: about two long sentences, or entries run together


def code_blocks(answer: str) -> int:
    """How many runs of code lines the answer shows."""
    lines = answer.split("\n")
    return sum(
        1
        for at, line in enumerate(lines)
        if line.startswith(CODE_INDENT) and (at == 0 or not lines[at - 1].startswith(CODE_INDENT))
    )


def long_runs(answer: str) -> int:
    """How many stretches of prose between two citations hold more than LONG_RUN words (a stretch that shows a
    code block is not counted: its lines are the code's)."""
    return sum(
        1 for run in CITATION.split(answer) if f"\n{CODE_INDENT}" not in run and len(run.split()) > LONG_RUN
    )


def profile(predictions: Path, split: str, questions: Path = DEVSET / "questions.jsonl") -> dict[str, float]:
    asked = {question["id"] for question in load_questions(questions, split)}
    answers = []
    matched = 0
    for line in predictions.read_text().splitlines():
        if not line.strip():
            continue
        run = json.loads(line)
        matched += run.get("id") in asked
        if run.get("id") in asked and not run.get("abstained") and run.get("answer"):
            answers.append(run["answer"])
    if not matched:
        # all zeros would read as "nothing answered": say which file or split does not fit
        raise SystemExit(f"{predictions}: no run answers a question of the {split} split of {questions}")
    words = [len(answer.split()) for answer in answers]
    return {
        "answered": len(answers),
        "broken_words": sum(len(BROKEN_WORD.findall(a)) for a in answers),
        "cell_separators": sum(a.count(CELL_SEPARATOR) for a in answers),
        "run_in_headings": sum(len(RUN_IN_HEADING.findall(a)) for a in answers),
        "bare_headings": sum(len(BARE_HEADING.findall(a)) for a in answers),
        "code_blocks": sum(code_blocks(a) for a in answers),
        "long_runs": sum(long_runs(a) for a in answers),
        "median_words": statistics.median(words) if words else 0.0,
        "p95_words": percentile([float(w) for w in words], 0.95) if words else 0.0,
    }


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("predictions", type=Path)
    parser.add_argument("--split", choices=("train", "validation", "all"), default="train")
    parser.add_argument("--questions", type=Path, default=DEVSET / "questions.jsonl")
    parser.add_argument("--save", type=Path)
    parser.add_argument("--compare", type=Path)
    args = parser.parse_args()
    figures = profile(args.predictions, args.split, args.questions)
    for name, value in figures.items():
        print(f"{name:18s} {value:>8g}")
    results_save(figures, args.save, args.compare)


if __name__ == "__main__":
    main()
