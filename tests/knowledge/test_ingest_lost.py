"""An ingest run whose tasks the broker lost (a Redis restarted without its data): `ingest --wait`, and so
`make run`, which waits for the demo documents that way, waited for ever on a run that read `running` for
ever. The wait now tells it apart from a slow run by asking the broker whether any ingest or embed task is
still queued or held by a worker. Its own Redis database, so that the tasks of other test runs on the shared
test database cannot make it look busy."""

from __future__ import annotations

from urllib.parse import urlsplit

import pytest
import redis
from django.core.management.base import CommandError

from knowledge import services
from knowledge.management.commands.ingest import run_wait
from knowledge.models import IngestRun
from knowledge.tasks import ingest_tasks_in_flight

pytestmark = pytest.mark.integration

KEYS = ("ingest", "embed", "unacked")


@pytest.fixture()
def own_broker(settings):  # type: ignore[no-untyped-def]
    settings.CELERY_BROKER_URL = urlsplit(settings.REDIS_URL)._replace(path="/12").geturl()
    client = redis.Redis.from_url(settings.CELERY_BROKER_URL)
    client.delete(*KEYS)
    yield client
    client.delete(*KEYS)


def _run(tmp_path, files: int) -> IngestRun:  # type: ignore[no-untyped-def]
    for i in range(files):
        (tmp_path / f"note-{i}.md").write_text(
            f"# Note {i}\n\nThe pager rota changes every Monday at 09:00.\n"
        )
    run, _ = services.ingest_run_start(root=tmp_path, options=services.IngestOptions())
    return run


def test_a_run_whose_tasks_the_broker_lost_is_marked_lost_and_the_wait_ends_with_why(
    db, tmp_path, own_broker
) -> None:  # type: ignore[no-untyped-def]
    run = _run(tmp_path, 3)  # its tasks never reach the broker: as if Redis had lost them
    with pytest.raises(
        CommandError, match=rf"ingest run {run.pk} stopped at 0 of 3 .* Run the same ingest again"
    ):
        run_wait(run.pk, quiet_seconds=0.5, check_seconds=0.2)
    run.refresh_from_db()
    assert run.status == "lost" and run.finished_at is not None


def test_a_task_queued_or_held_by_a_worker_keeps_the_run_waited_for(db, own_broker) -> None:  # type: ignore[no-untyped-def]
    assert not ingest_tasks_in_flight()
    own_broker.rpush("embed", b"{}")
    assert ingest_tasks_in_flight()
    own_broker.delete("embed")
    own_broker.hset("unacked", "delivery-tag", b"{}")  # taken by a worker, not finished
    assert ingest_tasks_in_flight()


def test_a_finished_run_is_returned_with_its_progress(db, tmp_path, own_broker) -> None:  # type: ignore[no-untyped-def]
    run = _run(tmp_path, 2)
    services.ingest_run_add(run_id=run.pk, summary=services.IngestSummary(new=2))
    steps: list[int] = []
    finished = run_wait(run.pk, progress=steps.append, quiet_seconds=0.5, check_seconds=0.2)
    assert finished.status == "finished" and steps == [2]


def test_a_broker_that_does_not_answer_is_not_taken_for_one_that_lost_the_tasks(settings) -> None:  # type: ignore[no-untyped-def]
    """Redis down for a while (restarting): whether tasks are in flight cannot be told, so the wait goes on
    (the run is not marked lost for it); the check raised the connection error, which ended `ingest --wait`
    (and `make run`) with a traceback once a run had been quiet for 30 s."""
    settings.CELERY_BROKER_URL = "redis://127.0.0.1:1/0"  # nothing listens there
    assert ingest_tasks_in_flight()
