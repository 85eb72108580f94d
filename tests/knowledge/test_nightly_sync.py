"""The nightly sync that beat sends runs once per night, even when a restarted beat sends it again."""

from datetime import UTC, datetime

import pytest
from django.conf import settings
from django.test import override_settings
from django.utils import timezone

from athena.throttling import redis_client
from knowledge.models import IngestRun
from knowledge.tasks import sync_source_folders_task

pytestmark = [pytest.mark.django_db, pytest.mark.integration]


def _night_keys() -> list[bytes]:
    pattern = f"athena:{settings.DATABASES['default']['NAME']}:nightly-sync:*"
    return list(redis_client().scan_iter(match=pattern))


@pytest.fixture()
def no_night_keys():  # type: ignore[no-untyped-def]
    for key in _night_keys():
        redis_client().delete(key)
    yield
    for key in _night_keys():
        redis_client().delete(key)


def test_a_second_copy_from_beat_the_same_night_does_nothing(tmp_path, no_night_keys):
    folder = tmp_path / "source"  # empty: the sync creates its run and queues nothing
    folder.mkdir()
    with override_settings(ATHENA_SOURCE_FOLDERS=[str(folder)]):
        first = sync_source_folders_task(once_per_night=True)
        second = sync_source_folders_task(once_per_night=True)
        by_hand = sync_source_folders_task()  # an operator's run is never skipped
    assert len(first) == 1 and second == [] and len(by_hand) == 1
    assert IngestRun.objects.filter(root=str(folder)).count() == 2
    (key,) = _night_keys()
    assert redis_client().ttl(key) > 24 * 3600


@override_settings(ATHENA_NIGHTLY_SYNC_HOUR=23, ATHENA_NIGHTLY_SYNC_MINUTE=50)
def test_a_copy_run_after_midnight_counts_for_the_night_it_was_sent_for(tmp_path, no_night_keys, monkeypatch):
    folder = tmp_path / "source"
    folder.mkdir()
    runs = []
    with override_settings(ATHENA_SOURCE_FOLDERS=[str(folder)]):
        for moment in (
            datetime(2026, 3, 9, 23, 50, 0, tzinfo=UTC),  # sent and run on time
            # a second copy of that night's sync (sent again by a restarted beat), run after midnight
            datetime(2026, 3, 10, 0, 5, 0, tzinfo=UTC),
            # the next night's, on a worker whose clock is 3 s behind beat's
            datetime(2026, 3, 10, 23, 49, 57, tzinfo=UTC),
            datetime(2026, 3, 11, 4, 10, 0, tzinfo=UTC),  # a second copy of it, run late
            # the night after's (sent 11 March 23:50), run late: it waited behind a long ingest in its queue
            datetime(2026, 3, 12, 3, 0, 0, tzinfo=UTC),
        ):
            monkeypatch.setattr(timezone, "now", lambda moment=moment: moment)
            runs.append(len(sync_source_folders_task(once_per_night=True)))
    assert runs == [1, 0, 1, 0, 1]
