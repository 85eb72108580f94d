"""The embedded PostgreSQL's buffer pool: sized from the machine unless ATHENA_PG_SHARED_BUFFERS says, and reloaded
after a restart (autoprewarm)."""

import os

import psutil
import pytest
from django.conf import settings
from django.db import connection

from athena.stack import StackError, pg_shared_buffers, psql_value

# the sizing rule is pure, the other tests read the running server's settings
pytestmark = [pytest.mark.integration]
EXTERNAL = pytest.mark.skipif(
    "DATABASE_URL" in os.environ, reason="an external PostgreSQL is configured by its owner"
)
UNITS = {"kB": 2**10, "MB": 2**20, "GB": 2**30}


def _bytes(size: str) -> int:
    return int(size[:-2]) * UNITS[size[-2:]]


def test_the_pool_is_an_eighth_of_memory_within_bounds_unless_configured(monkeypatch):
    monkeypatch.delenv("ATHENA_PG_SHARED_BUFFERS", raising=False)
    eighth = psutil.virtual_memory().total // 8
    assert _bytes(pg_shared_buffers()) == min(2 * 2**30, max(256 * 2**20, eighth // 2**20 * 2**20))
    monkeypatch.setenv("ATHENA_PG_SHARED_BUFFERS", "384MB")
    assert pg_shared_buffers() == "384MB"
    for bad in ("1 GB", "lots", "0MB", "1TB", "-1GB"):
        monkeypatch.setenv("ATHENA_PG_SHARED_BUFFERS", bad)
        with pytest.raises(StackError, match="ATHENA_PG_SHARED_BUFFERS"):
            pg_shared_buffers()


@EXTERNAL
@pytest.mark.django_db
def test_the_embedded_server_runs_with_that_pool():
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT setting::bigint * pg_size_bytes(unit) FROM pg_settings WHERE name = 'shared_buffers'"
        )
        running = cursor.fetchone()[0]
    assert running == _bytes(pg_shared_buffers())


@EXTERNAL
def test_the_embedded_server_saves_and_reloads_its_pool():
    # the application role may neither read shared_preload_libraries nor see other roles' backends (least
    # privilege): asked as the cluster's superuser, as the launcher does
    assert "pg_prewarm" in psql_value(settings.PG_PORT, "SHOW shared_preload_libraries").split(",")
    assert psql_value(settings.PG_PORT, "SHOW pg_prewarm.autoprewarm") == "on"
