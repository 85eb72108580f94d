"""An upgrade whose migrate was stopped while knowledge 0016 built its index without locking the table (CREATE INDEX
CONCURRENTLY: minutes at 300k chunks, outside a transaction) is finished by the next migrate. PostgreSQL leaves an
INVALID index of the new name behind, and Django has not recorded the migration: the next `make run` failed on
"relation chunk_acl_expiry_cover already exists" until someone dropped the index by hand."""

from __future__ import annotations

import os
import subprocess
import sys
import uuid
from collections.abc import Iterator
from contextlib import contextmanager

import pytest
from django.conf import settings

from athena.paths import BASE_DIR
from athena.stack import pg_ensure_database, psql_command

pytestmark = [pytest.mark.integration]


def _manage(database: str, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "ATHENA_DB_NAME": database, "DJANGO_SETTINGS_MODULE": "athena.settings.test"}
    return subprocess.run(
        [sys.executable, "manage.py", *args],
        cwd=BASE_DIR,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )


def _sql(database: str, sql: str) -> str:
    return subprocess.run(
        [*psql_command(settings.PG_PORT, database), sql], check=True, capture_output=True, text=True
    ).stdout.strip()


@contextmanager
def scratch_database() -> Iterator[str]:
    """The name of a new, empty database (owned as the stack's own), dropped afterwards."""
    name = f"resume_{uuid.uuid4().hex[:8]}"
    pg_ensure_database(
        name, settings.PG_PORT, owner=settings.EMBEDDED_OWNER_ROLE, app=settings.EMBEDDED_APP_ROLE
    )
    try:
        yield name
    finally:
        subprocess.run(
            [*psql_command(settings.PG_PORT), f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'],
            check=False,
            capture_output=True,
        )


@pytest.mark.skipif(not settings.EMBEDDED_POSTGRES, reason="needs the embedded server's superuser")
def test_a_migrate_stopped_while_0016_built_its_index_is_finished_by_the_next_one() -> None:
    with scratch_database() as name:
        before = _manage(name, "migrate", "knowledge", "0015", "--verbosity", "0")
        assert before.returncode == 0, before.stderr
        # what the stopped build leaves: the index under its new name, marked invalid; the old one still there
        _sql(
            name,
            "CREATE INDEX chunk_acl_expiry_cover ON knowledge_chunk (id); "
            "UPDATE pg_index SET indisvalid = false WHERE indexrelid = 'chunk_acl_expiry_cover'::regclass",
        )
        # to 0016 only: a migrate stopped in 0016 has recorded none of the migrations after it
        again = _manage(name, "migrate", "knowledge", "0016", "--verbosity", "0")
        assert again.returncode == 0, again.stderr[-2000:]
        indexes = _sql(
            name,
            "SELECT c.relname || ' ' || i.indisvalid || ' ' || pg_get_indexdef(i.indexrelid) FROM pg_index i "
            "JOIN pg_class c ON c.oid = i.indexrelid WHERE c.relname IN ('chunk_acl_expiry_cover', 'chunk_acl_cover')",
        ).splitlines()
        assert len(indexes) == 1, indexes
        assert indexes[0].startswith("chunk_acl_expiry_cover true "), indexes
        assert "INCLUDE (active, acl_open, acl_groups, owner_id_acl, expires_at, document_id)" in indexes[0]
        # and a migrate stopped later, after the old index was dropped but before Django recorded 0016, too
        _sql(
            name,
            "DELETE FROM django_migrations WHERE app = 'knowledge' AND name = '0016_chunk_acl_expiry_cover'",
        )
        third = _manage(name, "migrate", "knowledge", "0016", "--verbosity", "0")
        assert third.returncode == 0, third.stderr[-2000:]
        assert _manage(name, "migrate", "--verbosity", "0").returncode == 0  # and on to the latest
