"""The nightly sync that beat sends runs once per night, even when a restarted beat sends it again."""

import pytest
from django.conf import settings
from django.test import override_settings
from django.utils import timezone

from athena.throttling import redis_client
from knowledge.models import IngestRun
from knowledge.tasks import sync_source_folders_task

pytestmark = [pytest.mark.django_db, pytest.mark.integration]


@pytest.fixture()
def tonight_key():  # type: ignore[no-untyped-def]
    key = f"athena:{settings.DATABASES['default']['NAME']}:nightly-sync:{timezone.localdate().isoformat()}"
    redis_client().delete(key)
    yield key
    redis_client().delete(key)


def test_a_second_copy_from_beat_the_same_night_does_nothing(tmp_path, tonight_key):
    folder = tmp_path / "source"  # empty: the sync creates its run and queues nothing
    folder.mkdir()
    with override_settings(ATHENA_SOURCE_FOLDERS=[str(folder)]):
        first = sync_source_folders_task(once_per_night=True)
        second = sync_source_folders_task(once_per_night=True)
        by_hand = sync_source_folders_task()  # an operator's run is never skipped
    assert len(first) == 1 and second == [] and len(by_hand) == 1
    assert IngestRun.objects.filter(root=str(folder)).count() == 2
    assert redis_client().ttl(tonight_key) > 24 * 3600
