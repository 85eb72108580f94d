"""Shared fixtures: the real PostgreSQL and Redis (started by `make test`), a real worker. Test data is built
by the factories in tests/factories.py, through the services."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("DO_NOT_TRACK", "1")


@pytest.fixture(scope="session")
def django_db_setup(django_db_setup, django_db_blocker):  # type: ignore[no-untyped-def]
    """The stock fixture creates test_athena with all migrations (pgvector extension, triggers included).
    Retrieval's pool threads keep persistent connections; they are closed before the test database is
    dropped (DROP DATABASE refuses while other sessions are connected)."""
    yield
    from django.db import connection

    with django_db_blocker.unblock(), connection.cursor() as cursor:
        cursor.execute(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
            "WHERE datname = current_database() AND pid <> pg_backend_pid()"
        )
    connection.close()


@pytest.fixture(autouse=True)
def audit_checkpoint_file(settings, tmp_path):  # type: ignore[no-untyped-def]
    """Each test gets its own checkpoint file: a checkpoint left by an earlier test names events that the
    database flush removed, which audit_verify would rightly report as a deleted tail."""
    settings.ATHENA_AUDIT_CHECKPOINT_FILE = str(tmp_path / "audit-checkpoints.jsonl")
    return tmp_path / "audit-checkpoints.jsonl"


@pytest.fixture(autouse=True)
def aggregation_counters_clear():  # type: ignore[no-untyped-def]
    """Audit aggregation and sign-in failure counters live in Redis for an hour; a test starts with none (only
    the test database's keys are touched, never a development server's)."""
    from django.conf import settings

    from athena.throttling import key_prefix, redis_client

    if not str(settings.DATABASES["default"]["NAME"]).startswith("test"):
        return
    try:
        client = redis_client()
        for pattern in (f"{key_prefix()}:agg*", f"{key_prefix()}:loginfail:*"):
            keys = list(client.scan_iter(match=pattern, count=500))
            if keys:
                client.delete(*keys)
    except Exception:  # a test that runs without Redis has no counters to clear
        pass


def celery_worker_argv(queues: str, name: str) -> list[str]:
    """A one-process Celery worker of this project consuming `queues` (comma-separated) as `name@host`."""
    return [
        sys.executable,
        "-m",
        "celery",
        "-A",
        "athena",
        "worker",
        "-Q",
        queues,
        "-c",
        "1",
        "-n",
        f"{name}@%h",
    ]


@pytest.fixture()
def broker_down() -> Iterator[None]:
    """The Celery app's broker and result store point at a port where nothing listens (Redis down): Celery
    caches its connection pools and result backend on the app, so those are dropped on the way in and out."""
    from athena.celery import app

    def drop_connections() -> None:
        app._pool = None
        app.amqp._producer_pool = None
        app._local.__dict__.pop("backend", None)

    saved = app.conf.broker_url, app.conf.result_backend
    app.conf.broker_url = app.conf.result_backend = "redis://127.0.0.1:1/15"
    drop_connections()
    try:
        yield
    finally:
        app.conf.broker_url, app.conf.result_backend = saved
        drop_connections()


@pytest.fixture()
def redis_client():  # type: ignore[no-untyped-def]
    import redis
    from django.conf import settings

    client = redis.Redis.from_url(settings.REDIS_URL)
    yield client
    client.close()


@pytest.fixture(scope="session")
def celery_worker_process(django_db_setup, django_db_blocker) -> Iterator[subprocess.Popen]:  # type: ignore[no-untyped-def]
    """A real Celery worker process consuming all queues against the test database."""
    from django.conf import settings

    env = dict(os.environ)
    env.update(
        {
            "DJANGO_SETTINGS_MODULE": "athena.settings.test",
            "ATHENA_DB_NAME": settings.DATABASES["default"]["NAME"],
            "PYTHONUNBUFFERED": "1",
        }
    )
    from athena.paths import var_dir

    log_dir = var_dir() / "log"  # ATHENA_VAR_DIR, like every other log of the stack
    log_dir.mkdir(parents=True, exist_ok=True)
    log = open(log_dir / "test-worker.log", "ab")  # noqa: SIM115
    proc = subprocess.Popen(
        # in the order the stack's worker takes them (questions first)
        [
            *celery_worker_argv("realtime,housekeeping,embed,ingest", f"test-{os.getpid()}"),
            "--loglevel",
            "INFO",
        ],
        cwd=ROOT,
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    from athena.celery import app

    deadline = time.monotonic() + 90
    while time.monotonic() < deadline:
        replies = app.control.ping(timeout=0.5)
        if any(f"test-{os.getpid()}@" in name for reply in replies for name in reply):
            break
        if proc.poll() is not None:
            raise RuntimeError(f"test worker exited; see {log_dir / 'test-worker.log'}")
    else:
        proc.terminate()
        raise RuntimeError("test worker did not answer a ping in 90s")
    yield proc
    proc.terminate()
    try:
        proc.wait(timeout=20)
    except subprocess.TimeoutExpired:
        proc.kill()
    log.close()
