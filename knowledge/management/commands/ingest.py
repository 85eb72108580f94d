"""`python manage.py ingest PATH [--acl-group G ...] [--access-tier T] [--department D] [--doc-type T]
[--vendor V] [--wait | --inline]` — ingest a folder; document source = path relative to PATH."""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from athena.cli import positive_int
from athena.errors import ApplicationError
from knowledge import services
from knowledge.models import AccessTier, DocType, IngestRun


def run_wait(
    run_id: int,
    *,
    progress: Callable[[int], object] = lambda _: None,
    quiet_seconds: float = 30.0,
    check_seconds: float = 5.0,
) -> IngestRun:
    """Wait for an ingest run to finish, calling `progress` with each increment of files done. A run that has
    made no progress for `quiet_seconds` while the broker holds no ingest or embed task, seen twice
    `check_seconds` apart, has lost its tasks (a Redis restarted without its data): it is marked `lost` and a
    CommandError says so, where the wait (and `make run`, which waits for the demo documents) went on for ever."""
    from knowledge.tasks import ingest_tasks_in_flight

    run = IngestRun.objects.get(pk=run_id)
    done, quiet_since, next_check, idle_seen = 0, time.monotonic(), 0.0, 0
    while True:
        run.refresh_from_db()
        now = services.ingest_run_done(run.counts)
        if now != done:
            progress(now - done)
            done, quiet_since, idle_seen = now, time.monotonic(), 0
        if run.status != "running" or done >= run.total:
            return run
        if time.monotonic() - quiet_since >= quiet_seconds and time.monotonic() >= next_check:
            next_check = time.monotonic() + check_seconds
            idle_seen = 0 if ingest_tasks_in_flight() else idle_seen + 1
            if idle_seen >= 2:
                services.ingest_run_lost(run_id=run_id)
                raise CommandError(
                    f"ingest run {run_id} stopped at {done} of {run.total} file(s): none of its tasks is queued "
                    "or running any more (the broker lost them: Redis restarted without its data?). Run the "
                    "same ingest again: the files already indexed are skipped as unchanged"
                )
        time.sleep(0.5)


class Command(BaseCommand):
    help = "Ingest a folder of documents (HTML, Markdown, text, DOCX, PDF) into the knowledge base."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "path", help="folder to ingest; a document's source id is its path relative to it"
        )
        parser.add_argument(
            "--acl-group",
            action="append",
            default=[],
            dest="acl_groups",
            help="group allowed to read these documents (repeatable)",
        )
        parser.add_argument(
            "--access-tier",
            default="",
            choices=AccessTier.values,
            help="default: internal for new documents (a document's own Access-Tier field may raise it); an "
            "existing document keeps its tier unless this one is stricter (access only tightens here)",
        )
        parser.add_argument(
            "--department", default="", help="department of these documents (else their own metadata's)"
        )
        parser.add_argument(
            "--doc-type",
            default="",
            choices=["", *DocType.values],
            help="document type of these documents (else their own metadata's, else other)",
        )
        parser.add_argument(
            "--vendor", default="", help="vendor of these documents (else their own metadata's)"
        )
        parser.add_argument("--prefix", default="", help="prepended to every source id (e.g. 'public/')")
        mode = parser.add_mutually_exclusive_group()
        mode.add_argument("--wait", action="store_true", help="queue on Celery and wait, showing progress")
        mode.add_argument("--inline", action="store_true", help="run in this process, without a worker")
        parser.add_argument("--batch-size", type=positive_int, default=16, help="files per task (default 16)")
        parser.add_argument("--force", action="store_true", help="index unchanged files again too")

    def handle(self, *args: Any, **options: Any) -> None:
        root = Path(options["path"])
        opts = services.IngestOptions(
            acl_groups=tuple(options["acl_groups"]),
            access_tier=options["access_tier"],
            department=options["department"],
            doc_type=options["doc_type"],
            vendor=options["vendor"],
            prefix=options["prefix"],
        )
        try:
            if options["inline"]:
                self._inline(root, opts, options["batch_size"], options["force"])
            else:
                self._queued(root, opts, options["batch_size"], options["force"], wait=options["wait"])
        except ApplicationError as exc:
            raise CommandError(exc.message) from exc

    def _inline(self, root: Path, opts: services.IngestOptions, batch_size: int, force: bool) -> None:
        from tqdm import tqdm

        run, files = services.ingest_run_start(root=root, options=opts)
        total = services.IngestSummary()
        total.deleted = services.folder_tombstone_missing(
            root=run.root, prefix=opts.prefix, present={s for s, _ in files}, run_id=run.pk
        )
        # on the run's record too, as the queued sync keeps it (batches add only what they indexed)
        run.counts["deleted"] = total.deleted
        run.save(update_fields=["counts"])
        started = time.perf_counter()
        with tqdm(total=len(files), unit="doc", file=sys.stderr, disable=None) as bar:
            for batch in services.batches(files, batch_size):
                summary = services.files_ingest(root=run.root, files=batch, options=opts, force=force)
                services.ingest_run_add(run_id=run.pk, summary=summary)
                total.add(summary)
                bar.update(len(batch))
        total.seconds = time.perf_counter() - started
        services.ingest_run_finish_if_done(run)
        self._report(total.as_dict(), len(files), total.seconds, opts)

    def _queued(
        self, root: Path, opts: services.IngestOptions, batch_size: int, force: bool, *, wait: bool
    ) -> None:
        from athena.celery import app
        from knowledge.tasks import folder_ingest_enqueue

        started = time.perf_counter()
        if wait:
            deadline = time.monotonic() + 60
            while not app.control.ping(timeout=1.0):
                if time.monotonic() > deadline:
                    raise CommandError(
                        "no Celery worker is running (start the stack with `make run`, or use "
                        "--inline to ingest in this process)"
                    )
        run_id = folder_ingest_enqueue(root=root, options=opts, batch_size=batch_size, force=force)
        run = IngestRun.objects.get(pk=run_id)
        self.stdout.write(f"ingest run {run_id}: {run.total} file(s) queued")
        if not wait:
            return
        from tqdm import tqdm

        with tqdm(total=run.total, unit="doc", file=sys.stderr, disable=None) as bar:
            run = run_wait(run_id, progress=bar.update)
        self._report(run.counts, run.total, time.perf_counter() - started, opts)

    def _report(
        self, counts: dict[str, Any], total: int, seconds: float, opts: services.IngestOptions
    ) -> None:
        chunks = counts.get("chunks", 0)
        reused = f" ({counts['reused']} with stored vectors)" if counts.get("reused") else ""
        self.stdout.write(
            f"documents: {counts.get('new', 0)} new, {counts.get('changed', 0)} changed, "
            f"{counts.get('unchanged', 0)} unchanged, {counts.get('deleted', 0)} deleted, "
            f"{counts.get('failed', 0)} failed (of {total}); chunks: {chunks}{reused}; "
            f"{seconds:.1f}s, {total / seconds if seconds else 0:.1f} docs/s, "
            f"{chunks / seconds if seconds else 0:.1f} chunks/s"
        )
        stages = counts.get("stage_seconds") or {}
        if stages:
            self.stdout.write(
                "stage seconds: " + ", ".join(f"{k} {v:.1f}" for k, v in sorted(stages.items()))
            )
        for source, error in sorted((counts.get("errors") or {}).items()):
            self.stderr.write(f"failed: {source}: {error}")
        given = [
            flag
            for flag, value in (
                ("--acl-group", opts.acl_groups),
                ("--access-tier", opts.access_tier),
                ("--department", opts.department),
                ("--doc-type", opts.doc_type),
                ("--vendor", opts.vendor),
            )
            if value
        ]
        if given and counts.get("unchanged"):
            # an unchanged file is skipped before any option applies: say so, or a re-run meant to restrict a
            # folder looks as if it had
            self.stderr.write(
                f"note: {', '.join(given)} did not reach the {counts['unchanged']} unchanged document(s), which "
                "keep their access and metadata; --force indexes them again with these options, where access "
                "only tightens (a higher tier; groups only for a document that has none), and the admin changes "
                "a document's access"
            )
