"""`python manage.py ask "QUESTION" --user NAME [--conversation ID] [--json]`."""

from __future__ import annotations

import json
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.test import override_settings

from athena.cli import user_named
from athena.errors import ApplicationError


class Command(BaseCommand):
    help = "Ask the knowledge base a question as a given user."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("question", help="the question, quoted")
        parser.add_argument(
            "--user", required=True, help="ask as this user (their groups decide what is read)"
        )
        parser.add_argument(
            "--conversation", default=None, help="conversation id to continue (a follow-up question)"
        )
        parser.add_argument(
            "--json", action="store_true", help="print the answer as the ask API returns it (JSON)"
        )
        parser.add_argument("--inline", action="store_true", help="run the pipeline here, not on a worker")

    def handle(self, *args: Any, **options: Any) -> None:
        from agents.services import ask

        user = user_named(options["user"], hint=" (create one with `manage.py adduser`)")
        try:
            if options["inline"]:
                with override_settings(ATHENA_REALTIME_VIA_CELERY=False):
                    body = ask(
                        user=user, question=options["question"], conversation_id=options["conversation"]
                    )
            else:
                body = ask(user=user, question=options["question"], conversation_id=options["conversation"])
        except ApplicationError as exc:
            if options["json"]:
                self.stdout.write(json.dumps({"error": {"code": exc.code, "message": exc.message}}))
            raise CommandError(exc.message) from exc
        if options["json"]:
            self.stdout.write(json.dumps(body, indent=2, default=str))
            return
        self.stdout.write(body["answer"])
        for citation in body["citations"]:
            self.stdout.write(
                f"  [{citation['ref']}] {citation['title']} — {citation['section']} ({citation['document']})"
            )
        for note in body["notes"]:
            self.stdout.write(f"  note: {note}")
        self.stdout.write(
            f"  ({body['timings_ms'].get('total', 0):.0f} ms, conversation {body['conversation_id']})"
        )
