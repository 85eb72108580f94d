"""`python manage.py train_answerer [--data F] [--out F]` — fit the answer selector and the abstention threshold.

manage.py train_answerer --collect QUESTIONS.jsonl --user U --allowed-user A [--data F]
    runs the answering pipeline over a dev-set style question file (acl questions as both users) against
    the current database and stores, per run, the feature rows of its candidate sentences and their labels
    (does the sentence state the gold answer?). No question text or document text is stored.
manage.py train_answerer --collect QUESTIONS.jsonl --user U --append [--data F]
    the same over another question file (and usually another database: a knowledge base with more
    documents), its runs added to those already in the data file, its packages numbered after theirs
manage.py train_answerer [--data F] [--out F] [--seed N]
    fits both models on the `train` runs only, picks the threshold by cross-validation with folds by
    package, prints the report (cross-validated and validation AUC, calibration error, abstention
    figures) and writes the artefact. Same data and seed -> the same artefact bytes.
"""

from __future__ import annotations

import gzip
import json
import time
from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from athena.cli import output_file, read_json_lines, user_named

DATA = Path(__file__).resolve().parents[2] / "data" / "answerer_data.jsonl.gz"


class Command(BaseCommand):
    help = "Fit the learned answer selector and the calibrated abstention threshold (agents/answerer.py)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--collect",
            metavar="QUESTIONS",
            default=None,
            help="collect the features of a dev-set style question file into --data instead of fitting",
        )
        parser.add_argument("--user", default=None, help="with --collect: ask as this user")
        parser.add_argument(
            "--allowed-user",
            default=None,
            help="with --collect: a member of the acl questions' group, who asks them too",
        )
        parser.add_argument(
            "--data",
            default=str(DATA),
            help=f"collected features: written by --collect, read when fitting (default {DATA.relative_to(DATA.parents[2])})",
        )
        parser.add_argument(
            "--append", action="store_true", help="with --collect: add the runs to those already in --data"
        )
        parser.add_argument("--out", default=None, help="artefact path (default agents/data/answerer.json)")
        parser.add_argument("--seed", type=int, default=None, help="default 0")
        parser.add_argument("--report", default=None, help="also write the report as JSON here")

    def handle(self, *args: Any, **options: Any) -> None:
        # each option belongs to one of the two jobs: given to the other it would be dropped without a word (a
        # refit that was meant to be a collection overwrites the shipped artefact)
        if options["collect"] is not None:
            wrong = [f"--{name}" for name in ("out", "seed", "report") if options[name] is not None]
            why = "only apply when fitting (without --collect)"
        else:
            wrong = [
                f"--{name.replace('_', '-')}" for name in ("user", "allowed_user", "append") if options[name]
            ]
            why = ("needs" if len(wrong) == 1 else "need") + " --collect"
        if wrong:
            raise CommandError(f"{', '.join(wrong)} {why}")
        if options["collect"] is not None:
            self._collect(
                Path(options["collect"]),
                options["user"],
                options["allowed_user"],
                Path(options["data"]),
                append=options["append"],
            )
            return
        from agents.answerer import ARTEFACT
        from agents.answerer_training import fit_answerer

        data = Path(options["data"])
        if not data.exists():
            raise CommandError(f"{data} does not exist: collect it first (--collect QUESTIONS ...)")
        # checked before fitting: a typo in --out or --report must not cost the fit, nor end in a traceback
        out = output_file(Path(options["out"])) if options["out"] else ARTEFACT
        if options["report"]:
            output_file(Path(options["report"]))
        answerer, report = fit_answerer(_runs(data), seed=options["seed"] or 0)
        out.write_text(json.dumps(answerer.to_json(), indent=1, sort_keys=True) + "\n")
        for line in report.lines():
            self.stdout.write(line)
        if options["report"]:
            Path(options["report"]).write_text(json.dumps(report.as_dict(), indent=1) + "\n")
        self.stdout.write(self.style.SUCCESS(f"saved {out} (version {answerer.version})"))

    def _collect(
        self, questions_path: Path, username: str | None, allowed: str | None, data: Path, *, append: bool
    ) -> None:

        from agents.answerer_training import label_candidates, package_of
        from agents.pipeline import run_pipeline
        from athena.principals import Principal

        questions = read_json_lines(questions_path, required=("id", "question"))
        output_file(data)  # written at the end of a long collection: a typo is refused now
        if not username:
            raise CommandError("--collect needs --user (and --allowed-user for acl questions)")
        users = {}
        for key, name in (("user", username), ("allowed", allowed)):
            if name:
                users[key] = user_named(name)
        packages = sorted({package_of(q) for q in questions})
        if append and not data.exists():
            raise CommandError(f"--append: {data} does not exist yet")
        earlier = _runs(data) if append else []
        # the cross-validation groups of this file's packages come after those already collected
        first_group = max((run["group"] for run in earlier), default=-1) + 1
        runs = []
        started = time.perf_counter()
        for number, question in enumerate(questions, start=1):
            askers = [("user", users["user"])]
            if question.get("acl") and "allowed" in users:
                askers.append(("allowed", users["allowed"]))
            for role, user in askers:
                observed: dict[str, Any] = {}
                run_pipeline(
                    question=question["question"],
                    principal=Principal.from_user(user),
                    history=[],
                    observe=observed,
                )
                gold = [g for g in [question.get("answer"), *question.get("answer_aliases", [])] if g]
                answerable = question.get("type") != "unanswerable" and not (
                    question.get("acl") and role == "user"
                )
                runs.append(
                    {
                        "split": question.get("split", "train"),
                        # the question file, when not the first one collected (its validation runs are
                        # reported apart)
                        **({"source": questions_path.name} if append else {}),
                        "type": question.get("type", ""),
                        "group": first_group + packages.index(package_of(question)),
                        "answerable": answerable,
                        "has_gold_answer": bool(gold) and answerable,
                        "rows": observed.get("rows", []),
                        "labels": label_candidates(
                            observed.get("candidates", []), gold if answerable else []
                        ),
                        "next_labels": label_candidates(
                            [
                                observed.get("next_sentences", {}).get(c, "")
                                for c in observed.get("candidates", [])
                            ],
                            gold if answerable else [],
                        ),
                        "facts": _facts_json(observed.get("facts")),
                    }
                )
            self.stderr.write(
                f"\r{number}/{len(questions)} questions, {time.perf_counter() - started:.0f}s", ending=""
            )
        self.stderr.write("")
        data.parent.mkdir(parents=True, exist_ok=True)
        with gzip.GzipFile(data, "wb", mtime=0) as handle:
            handle.write(
                "".join(json.dumps(run, sort_keys=True) + "\n" for run in [*earlier, *runs]).encode()
            )
        self.stdout.write(
            self.style.SUCCESS(f"collected {len(runs)} runs into {data} ({len(earlier) + len(runs)} in all)")
        )


def _runs(data: Path) -> list[dict[str, Any]]:
    """The runs collected in `data`; a file that is not the gzipped JSON lines --collect writes is refused by
    name (a traceback before)."""
    from agents.answerer_training import load_runs

    try:
        return load_runs(data)
    except (OSError, EOFError, UnicodeDecodeError, ValueError) as exc:  # BadGzipFile is an OSError
        raise CommandError(f"{data} is not a file written by --collect (gzipped JSON lines): {exc}") from None


def _facts_json(facts: Any) -> dict[str, Any]:
    from dataclasses import asdict

    return asdict(facts) if facts is not None else {}
