"""`python manage.py curation_export --out F.jsonl` — resolved curation items as dev-set style questions."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandParser

from athena.cli import output_file


class Command(BaseCommand):
    help = (
        "Write resolved curation items that point at a document as questions in the dev set's schema "
        "(a regression set of the organisation's own failures)."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--out", required=True, help="JSON lines file to write")

    def handle(self, *args: Any, **options: Any) -> None:
        from agents.feedback import curation_export_questions

        out = output_file(Path(options["out"]))
        questions = curation_export_questions()
        out.write_text("".join(json.dumps(q, sort_keys=True) + "\n" for q in questions))
        with_answer = sum(1 for q in questions if q["answer"])
        self.stdout.write(
            self.style.SUCCESS(
                f"wrote {len(questions)} question(s) to {out} ({with_answer} with an expected answer, "
                f"{len(questions) - with_answer} scored on retrieval only)"
            )
        )
