"""The Celery application: queues ingest (CPU), embed (model) and realtime (query pipeline)."""

import os

from celery import Celery
from celery.schedules import crontab
from celery.signals import worker_ready, worker_shutting_down

# Servers started outside the project's launcher (gunicorn, celery in deploy/) get production settings unless
# told otherwise; `stack run` / `make run` pass athena.settings.local, the tests athena.settings.test.
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "athena.settings.production")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("DO_NOT_TRACK", "1")

app = Celery("athena")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()


@app.on_after_finalize.connect
def _schedule_nightly_sync(sender: Celery, **_: object) -> None:
    from django.conf import settings

    sync_at = settings.ATHENA_NIGHTLY_SYNC_HOUR * 60 + settings.ATHENA_NIGHTLY_SYNC_MINUTE
    sender.add_periodic_task(
        crontab(hour=sync_at // 60, minute=sync_at % 60),
        sender.signature("knowledge.tasks.sync_source_folders_task", kwargs={"once_per_night": True}),
        name="nightly source folder sync",
    )
    # half an hour before the sync: a repack holds the statistics lock, which ingestion also takes
    repack_at = (sync_at - 30) % (24 * 60)
    sender.add_periodic_task(
        crontab(hour=repack_at // 60, minute=repack_at % 60),
        sender.signature("knowledge.tasks.repack_postings_task"),
        name="nightly posting block repack",
    )
    sender.add_periodic_task(
        crontab(minute=15),
        sender.signature("knowledge.tasks.uploads_expire_task"),
        name="hourly private upload expiry",
    )
    # documents an older analyser indexed (after an upgrade) and no folder ingest meets, a batch at a time
    sender.add_periodic_task(
        600.0,
        sender.signature("knowledge.tasks.documents_reindex_stale_task"),
        name="re-index of documents an older analyser indexed",
    )
    # the audit chain's head, signed, outside the database: a deleted tail is caught by audit_verify
    sender.add_periodic_task(
        settings.ATHENA_AUDIT_CHECKPOINT_MINUTES * 60.0,
        sender.signature("audit.tasks.audit_checkpoint_task"),
        name="audit checkpoint",
    )
    # the exact count of each ended hour of throttled requests / failed sign-ins (aggregated in the chain)
    sender.add_periodic_task(
        crontab(minute="*/5"),
        sender.signature("audit.tasks.audit_aggregates_flush_task"),
        name="audit aggregation windows",
    )


_consumer_beat = None


@worker_ready.connect
def _announce_queues(sender: object, **_: object) -> None:
    """The worker's main process tells the health check which queues it consumes (athena/consumers.py), once its
    consumer is ready: from then on it takes their tasks and answers a ping."""
    global _consumer_beat
    from athena.consumers import ConsumerBeat, worker_queues

    queues = worker_queues(sender.app)  # type: ignore[attr-defined]
    if _consumer_beat is None and queues:
        _consumer_beat = ConsumerBeat(hostname=sender.hostname, queues=queues)  # type: ignore[attr-defined]
        _consumer_beat.start()


@worker_shutting_down.connect
def _retire_queues(**_: object) -> None:
    """A worker that begins to stop takes no new task: its queues are no longer served by it (a warm shutdown
    still finishes the tasks it runs)."""
    if _consumer_beat is not None:
        _consumer_beat.stop()
