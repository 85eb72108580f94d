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


def test_a_worker_killed_while_looking_for_abandoned_tasks_holds_redelivery_back_at_most_30_seconds(
    redis_client,
):
    """A killed worker's tasks come back after the visibility timeout, found by a periodic look that takes a
    Redis lock. A worker killed while holding that lock leaves it until it expires: kombu's 300 s default held
    every redelivery back for five minutes. The broker's own channel takes the project's 30 s, and a lock left
    behind on the real Redis expires within it."""
    import uuid

    from kombu.transport.redis import Mutex

    from athena.celery import app

    with app.connection_for_write() as connection:
        channel = connection.default_channel
        expire = channel.unacked_mutex_expire
        assert expire == 30
        assert expire < channel.visibility_timeout
        name = f"test-unacked-mutex-{uuid.uuid4()}"  # not the workers' own lock
        held = Mutex(channel.client, name, expire)
        held.__enter__()  # taken and never released, as by a process killed inside the look
        try:
            assert 0 < redis_client.ttl(name) <= 30
        finally:
            redis_client.delete(name)
