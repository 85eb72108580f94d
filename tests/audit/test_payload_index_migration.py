"""Migration audit 0005 builds the payload's trigram index concurrently (minutes at 300k events, outside a
transaction): a migrate stopped midway leaves an INVALID index of its name, which the next migrate replaces, and
migrating back drops it."""

from __future__ import annotations

import pytest
from django.conf import settings

from tests.knowledge.test_migrations_resume import _manage, _sql, scratch_database

pytestmark = [pytest.mark.integration]

INDEX = (
    "SELECT i.indisvalid || ' ' || pg_get_indexdef(i.indexrelid) FROM pg_index i "
    "JOIN pg_class c ON c.oid = i.indexrelid WHERE c.relname = 'audit_payload_trgm'"
)


@pytest.mark.skipif(not settings.EMBEDDED_POSTGRES, reason="needs the embedded server's superuser")
def test_a_migrate_stopped_while_0005_built_the_payload_index_is_finished_by_the_next_one() -> None:
    with scratch_database() as name:
        before = _manage(name, "migrate", "audit", "0004", "--verbosity", "0")
        assert before.returncode == 0, before.stderr
        # what a stopped build leaves: an index of that name, marked invalid (here on another expression)
        _sql(
            name,
            "CREATE INDEX audit_payload_trgm ON audit_auditevent (id); "
            "UPDATE pg_index SET indisvalid = false WHERE indexrelid = 'audit_payload_trgm'::regclass",
        )
        again = _manage(name, "migrate", "audit", "0005", "--verbosity", "0")
        assert again.returncode == 0, again.stderr[-2000:]
        assert _sql(name, INDEX) == (
            "true CREATE INDEX audit_payload_trgm ON public.audit_auditevent "
            "USING gin (upper((payload)::text) gin_trgm_ops)"
        )
        back = _manage(name, "migrate", "audit", "0004", "--verbosity", "0")
        assert back.returncode == 0, back.stderr[-2000:]
        assert _sql(name, INDEX) == ""
        # the extension, which 0005 created here (no knowledge migration ran), stays: knowledge's indexes use it
        assert _sql(name, "SELECT extname FROM pg_extension WHERE extname = 'pg_trgm'") == "pg_trgm"
