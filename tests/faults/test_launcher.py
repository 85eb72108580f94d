"""The foreground launcher (`make run` is `bootstrap` then `stack run`) when a server it runs crashes: it brings
that server back and keeps the others running. A stack of its own (PostgreSQL and Redis only, no models) in a
private var/ folder on free ports, as tests/athena/test_stack.py drives it."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest

from tests.launcher import ROOT, private_stack_env, start_runner

pytestmark = [pytest.mark.faults, pytest.mark.integration, pytest.mark.slow]


@pytest.fixture()
def launcher_env() -> Iterator[dict[str, str]]:
    with private_stack_env("launcher") as env:
        yield env


def _postmaster(var: Path) -> int | None:
    try:
        return int((var / "pg" / "postmaster.pid").read_text().splitlines()[0])
    except (FileNotFoundError, IndexError, ValueError):
        return None


def _answers(var: Path, port: str) -> bool:
    import psycopg

    try:
        with psycopg.connect(host=str(var / "run"), port=port, user="postgres", dbname="postgres") as conn:
            return conn.execute("SELECT 1").fetchone() == (1,)
    except psycopg.OperationalError:
        return False


def test_postgresql_killed_under_the_foreground_run_is_restarted_and_the_rest_keeps_running(launcher_env):
    """PostgreSQL killed outright (the kernel's OOM killer takes the postmaster, say): the runner restarts it.
    It used to try once, at once, while the dead server's lock files still named a process not yet reaped;
    that start failed and the runner stopped the whole stack (Redis, the worker, the web server) and exited."""
    var = Path(launcher_env["ATHENA_VAR_DIR"])
    runner = start_runner(launcher_env, "postgres,redis")
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and not (
            (var / "run" / "redis.pid").exists() and _answers(var, launcher_env["ATHENA_PG_PORT"])
        ):
            time.sleep(0.5)
        first = _postmaster(var)
        redis = int((var / "run" / "redis.pid").read_text())
        assert first and psutil.pid_exists(redis)

        os.kill(first, signal.SIGKILL)  # the postmaster alone: its backends find it gone by themselves
        killed_at = time.monotonic()
        while time.monotonic() - killed_at < 120 and runner.poll() is None:
            again = _postmaster(var)
            if again and again != first and _answers(var, launcher_env["ATHENA_PG_PORT"]):
                break
            time.sleep(0.5)
        recovered = time.monotonic() - killed_at
        print(f"\n[fault] postmaster SIGKILL under stack run: answering again after {recovered:.1f}s")
        assert runner.poll() is None, runner.communicate(timeout=60)[0]
        assert _answers(var, launcher_env["ATHENA_PG_PORT"]) and _postmaster(var) != first
        assert psutil.pid_exists(redis) and int((var / "run" / "redis.pid").read_text()) == redis

        down = subprocess.run(
            [sys.executable, "manage.py", "stack", "down", "--only=postgres,redis"],
            cwd=ROOT,
            env=launcher_env,
            capture_output=True,
            text=True,
            timeout=180,
        )
        assert down.returncode == 0, down.stderr
        output, _ = runner.communicate(timeout=60)
        assert runner.returncode == 0, output
        assert "postgres: dead" in output and "restarting" in output
        print("\n".join(line for line in output.splitlines() if line.startswith("postgres:")))
    finally:
        if runner.poll() is None:
            runner.kill()
            runner.wait()
