"""`python manage.py export_query_model [--force]` — export the configured embedder's question encoder for ONNX
Runtime (knowledge.onnx_query) from its packaged weights, then load it the way a worker does and say which
runtime will embed questions. Run by `make install` (a worker started without the export embeds questions
with torch, as before, and logs why)."""

from __future__ import annotations

import time
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser


class Command(BaseCommand):
    help = "Export the embedder's question encoder to ONNX (install time; no network)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--force", action="store_true", help="export again even if the file exists")

    def handle(self, *args: Any, **options: Any) -> None:
        from knowledge.embedders import get_embedder
        from knowledge.onnx_query import ExportUnavailable

        embedder = get_embedder()
        query_export = getattr(embedder, "query_export", None)
        if query_export is None:
            self.stdout.write(f"{type(embedder).__name__} has no ONNX export: it embeds questions itself")
            return
        started = time.monotonic()
        try:
            path = query_export(force=options["force"])
        except ExportUnavailable as exc:
            self.stdout.write(f"no ONNX export for this model ({exc}): torch embeds questions")
            return
        except Exception as exc:
            raise CommandError(f"exporting the question encoder failed: {exc}") from exc
        self.stdout.write(f"question encoder at {path} ({time.monotonic() - started:.1f}s)")
        self.stdout.write(f"questions are embedded by: {getattr(embedder, 'query_runtime_used', 'torch')}")
