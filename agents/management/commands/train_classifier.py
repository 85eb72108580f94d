"""`python manage.py train_classifier [--out PATH]` — retrain the question classifier and report accuracy."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandParser


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

        metrics = train_and_save(options["out"], examples_path=options["examples"])
        self.stdout.write(
            self.style.SUCCESS(
                f"template accuracy {metrics['template_accuracy']:.3f} (model alone "
                f"{metrics['template_accuracy_model']:.3f}), hop accuracy {metrics['hop_accuracy']:.3f} "
                f"(model alone {metrics['hop_accuracy_model']:.3f}) on {metrics['n_test']} held-back questions; "
                f"saved {metrics['path']} ({metrics['size_bytes']:,} bytes)"
            )
        )
