"""A whole stack of its own for fault injection: embedded PostgreSQL and Redis, a Celery worker and the web
server (beat only where a test starts it), started with `manage.py stack up` in a private var/ folder on free
ports. Faults are injected into these processes only, found through the pid files under that folder."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import psutil
import pytest

from tests.launcher import free_port

ROOT = Path(__file__).resolve().parents[2]
SAMPLE = ROOT / "knowledge" / "sample_kb" / "public"
CORPUS = ("config-cisco-iosxe-bgp.md", "config-postgresql-tuning.md", "config-chrony-ntp.md")
DB_NAME = "athena_faults"
USER = "fault-user"


@dataclass(frozen=True)
class Reply:
    status: int
    body: dict[str, Any]
    headers: dict[str, str]
    seconds: float


@dataclass
class FaultStack:
    var: Path
    env: dict[str, str]
    token: str = ""
    started: list[str] = field(default_factory=list)

    # -- driving the stack as an operator would
    def manage_started(self, *args: str) -> subprocess.Popen[str]:
        """`manage.py <args>` of this stack, started and not waited for (its output, both streams, in stdout)."""
        return subprocess.Popen(
            [sys.executable, "manage.py", *args],
            cwd=ROOT,
            env=self.env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )

    def manage(
        self, *args: str, timeout: float = 300, check: bool = True, env: Mapping[str, str] | None = None
    ) -> subprocess.CompletedProcess[str]:
        """`env` adds to the stack's environment (and so to that of a component this command starts)."""
        result = subprocess.run(
            [sys.executable, "manage.py", *args],
            cwd=ROOT,
            env={**self.env, **(env or {})},
            capture_output=True,
            text=True,
            timeout=timeout,
        )
        if check and result.returncode != 0:
            raise AssertionError(f"manage.py {' '.join(args)} failed:\n{result.stdout}\n{result.stderr}")
        return result

    def up(self, *components: str, env: Mapping[str, str] | None = None) -> None:
        self.manage("stack", "up", "--only", ",".join(components), env=env)

    def log(self, name: str) -> Path:
        """A component's log; every start of it appends to the same file."""
        return self.var / "log" / f"{name}.log"

    def pid(self, name: str) -> int:
        return int((self.var / "run" / f"{name}.pid").read_text())

    def kill_group(self, name: str) -> None:
        """SIGKILL a component and its children (a crash: no clean-up runs). Only this stack's processes."""
        pid = self.pid(name)
        proc = psutil.Process(pid)  # ours, not a neighbour's: started with our var folder, or working in it
        assert proc.environ().get("ATHENA_VAR_DIR") == str(self.var) or proc.cwd().startswith(str(self.var))
        os.killpg(pid, signal.SIGKILL)
        psutil.wait_procs([proc], timeout=10)

    # -- Redis and PostgreSQL of this stack
    def redis(self) -> Any:
        import redis

        password = (
            (self.var / "redis" / "password").read_text().strip()
        )  # athena.paths.embedded_redis_password
        return redis.Redis(
            host="127.0.0.1", port=int(self.env["ATHENA_REDIS_PORT"]), password=password, socket_timeout=5
        )

    def sql(self, query: str, *params: Any) -> list[tuple]:
        import psycopg

        with psycopg.connect(
            host=str(self.var / "run"), port=self.env["ATHENA_PG_PORT"], user="postgres", dbname=DB_NAME
        ) as conn:
            return conn.execute(query, params).fetchall()

    def rt_key(self, suffix: str) -> str:
        return f"athena:{DB_NAME}:rt:{suffix}"

    def realtime_workers(self) -> int:
        return int(self.redis().zcount(self.rt_key("workers"), time.time() - 4, "+inf"))

    def wait_for_worker(self, timeout: float = 180) -> float:
        started = time.monotonic()
        while time.monotonic() - started < timeout:
            if self.realtime_workers():
                return time.monotonic() - started
            time.sleep(0.2)
        raise AssertionError(f"no realtime worker heartbeat in {timeout}s; see {self.var / 'log'}")

    # -- the HTTP API
    def ask(self, question: str, *, timeout: float = 200) -> Reply:
        data = json.dumps({"question": question}).encode()
        return self._request("ask", data, "application/json", timeout=timeout)

    def upload(self, name: str, content: bytes, *, timeout: float = 60) -> Reply:
        """POST /api/v1/documents/upload as the fault user, one file in a multipart body."""
        boundary = "athena-fault-upload"
        body = (
            (
                f'--{boundary}\r\nContent-Disposition: form-data; name="file"; filename="{name}"\r\n'
                "Content-Type: application/octet-stream\r\n\r\n"
            ).encode()
            + content
            + f"\r\n--{boundary}--\r\n".encode()
        )
        return self._request(
            "documents/upload", body, f"multipart/form-data; boundary={boundary}", timeout=timeout
        )

    def get(self, path: str, *, timeout: float = 60) -> Reply:
        """GET /api/v1/PATH as the fault user."""
        return self._request(path, None, "application/json", timeout=timeout)

    def _request(self, path: str, data: bytes | None, content_type: str, *, timeout: float) -> Reply:
        request = urllib.request.Request(
            f"http://127.0.0.1:{self.env['PORT']}/api/v1/{path}",
            data=data,
            headers={"Authorization": f"Token {self.token}", "Content-Type": content_type},
            method="GET" if data is None else "POST",
        )
        started = time.monotonic()
        try:
            with urllib.request.urlopen(request, timeout=timeout) as response:
                status, raw, headers = response.status, response.read(), dict(response.headers)
        except urllib.error.HTTPError as error:
            status, raw, headers = error.code, error.read(), dict(error.headers)
        seconds = time.monotonic() - started
        try:
            body = json.loads(raw)
        except ValueError:
            body = {"raw": raw.decode(errors="replace")[:2000]}
        return Reply(status, body, headers, seconds)

    def questions_started(self) -> set[str]:
        """Ids of the questions a worker has begun (before a new ask, to tell its question apart)."""
        prefix = self.rt_key("starts:")
        return {key.decode()[len(prefix) :] for key in self.redis().scan_iter(match=prefix + "*", count=1000)}

    def lease_pid(self, *, besides: set[str], timeout: float = 60) -> tuple[str, int]:
        """Wait until a process holds the lease of a question not in `besides` (a lease outlives its answer
        by a few seconds); return (question id, pid of the process computing it)."""
        client = self.redis()
        deadline = time.monotonic() + timeout
        prefix = self.rt_key("lease:")
        while time.monotonic() < deadline:
            for key in client.scan_iter(match=prefix + "*", count=100):
                question_id = key.decode()[len(prefix) :]
                raw = client.get(key)
                if raw and question_id not in besides:
                    return question_id, int(json.loads(raw)["pid"])
            time.sleep(0.01)
        raise AssertionError("no worker started answering")

    def audit_events(self, question_id: str) -> list[tuple[str, str]]:
        return self.sql(
            "SELECT kind, verdict FROM audit_auditevent WHERE payload->>'question_id' = %s ORDER BY id",
            question_id,
        )


# one stack for the whole fault suite: every test leaves its components running again
@pytest.fixture(scope="session")
def fault_stack() -> Iterator[FaultStack]:
    var = Path("/tmp") / f"athena-faults-{os.getpid()}"  # short: the PostgreSQL socket path is limited
    shutil.rmtree(var, ignore_errors=True)
    env = dict(os.environ)
    for name in ("DATABASE_URL", "REDIS_URL"):
        env.pop(name, None)
    env.update(
        {
            "ATHENA_VAR_DIR": str(var),
            "ATHENA_PG_PORT": str(free_port()),
            "ATHENA_REDIS_PORT": str(free_port()),
            "PORT": str(free_port()),
            "ATHENA_DB_NAME": DB_NAME,
            "DJANGO_SETTINGS_MODULE": "athena.settings.local",
            "ATHENA_WORKER_CONCURRENCY": "1",  # two cores shared with the rest of the machine
            "ATHENA_QUESTIONS_PER_HOUR": "10000",
            # messages of a worker killed outright come back after this (production: an hour, see settings);
            # every task here takes seconds
            "ATHENA_BROKER_VISIBILITY_TIMEOUT": "30",
            "HF_HUB_OFFLINE": "1",
            "TRANSFORMERS_OFFLINE": "1",
            "DO_NOT_TRACK": "1",
            # the nightly sync's folder (empty until the beat test puts a file in it): the worker reads it
            "ATHENA_SOURCE_FOLDERS": f"{var / 'sources' / 'nightly'}|tier=internal|prefix=nightly/",
        }
    )
    stack = FaultStack(var=var, env=env)
    try:
        stack.up("postgres", "redis")
        stack.manage("migrate", "--verbosity", "0")
        stack.manage("adduser", USER, "--group", "employees")
        stack.token = stack.manage("drf_create_token", USER).stdout.split()[2]
        (var / "sources" / "nightly").mkdir(parents=True)
        corpus = var / "corpus"
        corpus.mkdir()
        for name in CORPUS:
            shutil.copy(SAMPLE / name, corpus / name)
        stack.manage("ingest", str(corpus), "--inline")
        stack.up("worker", "web")
        stack.wait_for_worker()
        warm = stack.ask("What BGP keepalive and hold timers do we configure on IOS-XE routers?")
        assert warm.status == 200, warm
        yield stack
    finally:
        stack.manage("stack", "down", check=False)
        if not os.environ.get("ATHENA_FAULTS_KEEP"):  # set it to read the stack's logs after a failure
            shutil.rmtree(var, ignore_errors=True)
