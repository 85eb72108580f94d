"""`python manage.py train_classifier [--out PATH]` — retrain the question classifier and report accuracy."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from athena.cli import output_file, read_json_lines


class Command(BaseCommand):
    help = (
        "Train the question classifier (template + hop heads) on agents/data/classifier_examples.jsonl, "
        "print held-back accuracy and save agents/data/classifier.joblib."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--out", default=None, help="model path (default: agents/data/classifier.joblib)")
        parser.add_argument("--examples", default=None, help="labelled examples (JSON lines)")

    def handle(self, *args: Any, **options: Any) -> None:
        from agents.classify import train_and_save  # scikit-learn stays out of manage.py start-up

        # checked before training: a missing or malformed examples file, or an --out that cannot be written,
        # is named at once instead of a traceback (the latter after the training)
        examples = Path(options["examples"]) if options["examples"] else None
        if examples is not None:
            read_json_lines(examples, required=("question", "template", "hop"))
        out = output_file(Path(options["out"])) if options["out"] else None
        try:
            metrics = train_and_save(out, examples_path=examples)
        except ValueError as exc:  # a label that is not one of the classifier's, named with its line
            raise CommandError(str(exc)) from None
        self.stdout.write(
            self.style.SUCCESS(
                f"template accuracy {metrics['template_accuracy']:.3f} (model alone "
                f"{metrics['template_accuracy_model']:.3f}), hop accuracy {metrics['hop_accuracy']:.3f} "
                f"(model alone {metrics['hop_accuracy_model']:.3f}) on {metrics['n_test']} held-back questions; "
                f"saved {metrics['path']} ({metrics['size_bytes']:,} bytes)"
            )
        )
