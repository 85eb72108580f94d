"""Helpers for tests that start the launcher (`manage.py stack ...`) in a var/ folder and on ports of their own,
so that it never touches the stack the test run itself uses."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextmanager
def private_stack_env(name: str) -> Iterator[dict[str, str]]:
    """The environment of a stack in /tmp/athena-`name`-PID on free ports (PostgreSQL and Redis of its own, the
    worker's model warm-up off: the launcher is under test, not the models). On leaving, whatever that stack still
    runs is stopped and its folder removed."""
    var = Path("/tmp") / f"athena-{name}-{os.getpid()}"  # short: the PostgreSQL socket path is limited
    env = dict(os.environ)
    env.pop("REDIS_URL", None)
    env.pop("DATABASE_URL", None)
    env.update(
        {
            "ATHENA_VAR_DIR": str(var),
            "ATHENA_REDIS_PORT": str(free_port()),
            "ATHENA_PG_PORT": str(free_port()),
            "ATHENA_WORKER_WARM_UP": "false",
            "DJANGO_SETTINGS_MODULE": "athena.settings.test",
        }
    )
    try:
        yield env
    finally:
        subprocess.run([sys.executable, "manage.py", "stack", "down"], cwd=ROOT, env=env, capture_output=True)
        subprocess.run(["rm", "-rf", str(var)])


def start_runner(env: dict[str, str], only: str) -> subprocess.Popen[str]:
    """`manage.py stack run --only=<only>` (the foreground runner `make run` ends in), its output on a pipe."""
    return subprocess.Popen(
        [sys.executable, "manage.py", "stack", "run", f"--only={only}"],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
