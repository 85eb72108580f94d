"""The embedded PostgreSQL and Redis that the stack starts keep what they acknowledged across a crash."""

import pytest
from django.db import connection

pytestmark = pytest.mark.integration


@pytest.mark.django_db
def test_postgresql_flushes_every_commit_to_disk():
    with connection.cursor() as cursor:
        settings = {}
        for name in ("synchronous_commit", "fsync", "full_page_writes"):
            cursor.execute(f"SHOW {name}")
            settings[name] = cursor.fetchone()[0]
    assert settings == {"synchronous_commit": "on", "fsync": "on", "full_page_writes": "on"}


def test_redis_keeps_queued_tasks_in_an_append_only_file_flushed_every_second(redis_client):
    assert redis_client.config_get("appendonly") == {"appendonly": "yes"}
    assert redis_client.config_get("appendfsync") == {"appendfsync": "everysec"}
