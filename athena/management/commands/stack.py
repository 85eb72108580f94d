"""`python manage.py stack up|down|status|run [--only postgres,redis,...]` — the local stack launcher."""

from __future__ import annotations

import signal
import time
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from athena.cli import port_number
from athena.stack import (
    LOG_MAX_BYTES,
    Stack,
    StackError,
    launcher_held,
    logs_trim,
    runner_active,
    runner_forget,
    runner_record,
    runner_refusal,
)

# how long a foreground run waits for another `make run`'s bootstrap (first start: models, migrations, the
# sample knowledge base) before it gives up
BOOTSTRAP_WAIT_SECONDS = 30 * 60


class Command(BaseCommand):
    help = "Start, stop or inspect the local stack (embedded PostgreSQL, Redis, Celery worker/answerer/beat, web)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "action",
            choices=["up", "down", "status", "run"],
            help="up: start in the background; down: stop; status: show; run: start in the foreground (Ctrl-C "
            "stops all)",
        )
        parser.add_argument(
            "--only",
            default=",".join(Stack.ALL),
            help=f"comma-separated components (default: {','.join(Stack.ALL)})",
        )
        parser.add_argument("--port", type=port_number, default=None, help="web port (default: PORT or 8000)")
        parser.add_argument("--check", action="store_true", help="status: exit 1 unless all are running")

    def handle(self, *args: Any, **options: Any) -> None:
        components = [c.strip() for c in options["only"].split(",") if c.strip()]
        try:
            stack = Stack(components=components, port=options["port"])
            action = options["action"]
            if action == "up":
                stack.with_stopped_needs(echo=self.stdout.write).up(echo=self.stdout.write)
            elif action == "down":
                stack.down(echo=self.stdout.write)
            elif action == "status":
                self._print_status(stack, check=options["check"])
            else:
                self._run_foreground(stack)
        except StackError as exc:
            raise CommandError(str(exc)) from exc

    def _print_status(self, stack: Stack, *, check: bool) -> None:
        rows = stack.status()
        for row in rows:
            pid = str(row.pid) if row.pid else "-"
            self.stdout.write(f"{row.name:<9} {row.state:<9} pid={pid:<8} {row.detail}")
        if check and any(row.state not in {"running", "external"} for row in rows):
            raise CommandError("some components are not running")

    def _run_foreground(self, stack: Stack) -> None:
        other = runner_active()
        if other:
            raise StackError(runner_refusal(other))
        # this `make run`'s bootstrap has ended; another one's may still be under way
        with launcher_held("run", wait_for_bootstrap=BOOTSTRAP_WAIT_SECONDS, echo=self.stdout.write):
            self._run_held(stack)

    def _run_held(self, stack: Stack) -> None:
        stopping = False

        def _stop(signum: int, _frame: object) -> None:
            nonlocal stopping
            stopping = True

        signal.signal(signal.SIGINT, _stop)
        signal.signal(signal.SIGTERM, _stop)
        runner_record(stack.components)
        started = False
        try:
            stack.up(echo=self.stdout.write)
            started = True
            self.stdout.write("stack running; Ctrl-C stops everything")
            next_trim = 0.0
            while not stopping:
                time.sleep(1.0)
                if not stopping:
                    stack.restart_dead(echo=self.stdout.write)
                if time.monotonic() >= next_trim:  # logs grow for as long as the stack runs
                    next_trim = time.monotonic() + 60
                    for name in logs_trim():
                        self.stdout.write(f"{name}: over {LOG_MAX_BYTES // 2**20} MB, moved to {name}.1")
        finally:
            try:
                # a start that failed leaves alone what was running before it (`stack up` of another shell)
                if started:
                    self.stdout.write("stopping ...")
                    stack.down(echo=self.stdout.write)
            finally:
                runner_forget()
