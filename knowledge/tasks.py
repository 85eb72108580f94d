"""Thin Celery tasks: parse/chunk on `ingest`, embed + index on `embed`, nightly folder sync via beat."""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from datetime import timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any

from celery import shared_task
from django.db import OperationalError

from knowledge import services
from knowledge.indexing import staged_from_json, staged_to_json

if TYPE_CHECKING:
    from athena.sealing import Purpose

logger = logging.getLogger(__name__)

# database hiccups are retried with backoff; a task is acknowledged only once it has run
_RETRYING: dict[str, Any] = {
    "bind": True,
    "autoretry_for": (OperationalError,),
    "retry_backoff": True,
    "max_retries": 5,
    "acks_late": True,
    # nothing reads what an ingest task returns (a run's counts are in the database): a summary's errors, or a
    # failure's message, can quote a file's text or name a restricted file, and would stay in Redis for an hour
    "ignore_result": True,
}


# acks_late + reject_on_worker_lost redeliver a task whose worker died; a file that kills the worker (a
# decompression bomb, a parser crash) would be redelivered forever. Each delivery is counted in Redis and the
# count is cleared when the task ends in Python (success, error or retry), so only deliveries that took the
# worker down stay counted.
CRASH_LIMIT = 2
_CRASH_TTL_SECONDS = 7 * 86_400

# The most chunks one embed task takes (one model batch), so that a process that also answers questions is free
# again within seconds: a worker takes a waiting question before the next batch (the broker's
# queue_order_strategy), but not before the batch it is running ends. An ingest batch of 16 files (about 150
# chunks) held a process for 10-20 s on a busy 2-core machine, and questions asked during an ingest waited that
# long. A document with more chunks is still embedded in one task.
EMBED_TASK_CHUNKS = 32


def crash_key(task_id: str) -> str:
    """The Redis key that counts the unfinished deliveries of task `task_id`."""
    from athena.throttling import key_prefix

    return f"{key_prefix()}:deliveries:{task_id}"


def delivery_start(task_id: str | None) -> int:
    """Count one delivery of `task_id`; returns how many deliveries did not finish, this one included."""
    if not task_id:
        return 1
    from athena.throttling import redis_client

    client = redis_client()
    count = int(client.incr(crash_key(task_id)))
    client.expire(crash_key(task_id), _CRASH_TTL_SECONDS)
    return count


def delivery_end(task_id: str | None) -> None:
    if task_id:
        from athena.throttling import redis_client

        redis_client().delete(crash_key(task_id))


def split_queue(task_id: str | None, parts: int, queue: Callable[[int], object]) -> None:
    """Queue the `parts` of the crashed batch `task_id` (`queue(i)` queues part i), each once over all of the
    task's deliveries: a worker killed while queueing them has the task redelivered, and the redelivery queues
    only the parts not queued yet (a part queued twice would be ingested and counted twice). A part is marked
    in Redis after it is queued, never before: a kill between the two queues that one part again, where marking
    first would lose it."""
    from athena.throttling import key_prefix, redis_client

    client = redis_client() if task_id else None
    for index in range(parts):
        key = f"{key_prefix()}:split:{task_id}:{index}"
        if client is not None and client.exists(key):
            continue
        queue(index)
        if client is not None:
            client.set(key, "1", ex=_CRASH_TTL_SECONDS)


@shared_task(**_RETRYING)
def ingest_files_task(
    self,
    run_id: int | None,
    root: str,
    sealed: list[list[str]] | str,
    options: dict[str, Any],
    force: bool = False,
) -> dict:  # type: ignore[no-untyped-def]
    """Stage a batch of files (CPU work) and hand the staged documents to the embed queue (`force`: unchanged
    files too). A batch that took its worker down CRASH_LIMIT times is split into one task per file; a single
    file that did is marked failed instead of being tried again. `sealed`: the (source, path) pairs
    (files_seal)."""
    files = files_unseal(sealed)
    task_id = self.request.id
    if delivery_start(task_id) > CRASH_LIMIT:
        try:
            return _crashed_batch(task_id, run_id, root, files, options, force)
        finally:
            delivery_end(task_id)
    try:
        return _ingest_files(run_id, root, files, options, force)
    finally:
        delivery_end(task_id)


def _force_kwargs(force: bool) -> dict[str, bool]:
    """`force` goes with a batch only when set: a worker that predates the argument (not yet restarted after an
    upgrade) still takes every ordinary batch."""
    return {"force": True} if force else {}


def _crashed_batch(
    task_id: str | None,
    run_id: int | None,
    root: str,
    files: list[list[str]],
    options: dict[str, Any],
    force: bool,
) -> dict:
    summary = services.IngestSummary()
    if len(files) > 1:
        # find the file that crashes: each on its own, with the batch's options (a batch without a run keeps
        # the time it was queued at: IngestOptions.requested_at)
        split_queue(
            task_id,
            len(files),
            lambda i: ingest_files_task.apply_async(
                (run_id, root, files_seal([files[i]]), options), _force_kwargs(force)
            ),
        )
        return summary.as_dict()
    ingest_options = services.IngestOptions.from_dict(options)
    for source, path in files:
        services.document_record_failure(
            source=source,
            path=Path(path),
            root=root,
            error=f"the worker died {CRASH_LIMIT} times while processing this file; not retried",
            options=ingest_options,
        )
        summary.failed += 1
        summary.errors[source] = "crashed the worker"
    if run_id is not None:
        services.ingest_run_add(run_id=run_id, summary=summary)
    return summary.as_dict()


def staged_seal(staged: list[dict]) -> str:
    """Staged documents (their chunks' text, terms and entities) sealed for the embed queue (athena.sealing):
    the broker message and its redelivered copies hold no document text."""
    from athena.sealing import Purpose, seal_json

    return seal_json(staged, purpose=Purpose.STAGED)


def staged_unseal(staged: list[dict] | str) -> list[dict]:
    """What embed_index_task was sent: sealed (a token), or a list of staged documents as an ingest worker of
    the earlier release sends them."""
    from athena.sealing import Purpose

    return _batch_opened(staged, Purpose.STAGED)


def files_seal(files: list[list[str]]) -> str:
    """A batch's (source, path) pairs sealed for the ingest queue: a file's name can say as much as a restricted
    document's title, which nobody outside its groups is shown, and Redis keeps every message in its
    append-only file."""
    from athena.sealing import Purpose, seal_json

    return seal_json(files, purpose=Purpose.FILES)


def files_unseal(files: list[list[str]] | str) -> list[list[str]]:
    """What ingest_files_task was sent: sealed (files_seal), or the pairs as a web process or worker of the
    earlier release sends them."""
    from athena.sealing import Purpose

    return _batch_opened(files, Purpose.FILES)


def _batch_opened(items: list | str, purpose: Purpose) -> list:
    from athena.sealing import unseal_json

    return unseal_json(items, purpose=purpose) if isinstance(items, str) else items


def chunk_groups(chunk_counts: Sequence[int], limit: int) -> list[list[int]]:
    """The indexes of documents whose chunk counts are `chunk_counts`, in order, cut into consecutive groups of
    at most `limit` chunks each; a document with more than `limit` chunks makes a group of its own."""
    groups: list[list[int]] = []
    total = 0
    for index, count in enumerate(chunk_counts):
        if groups and total + count <= limit:
            groups[-1].append(index)
            total += count
        else:
            groups.append([index])
            total = count
    return groups


def _ingest_files(
    run_id: int | None, root: str, files: list[list[str]], options: dict[str, Any], force: bool
) -> dict:
    summary, documents = services.files_stage(
        root=root,
        files=[(s, p) for s, p in files],
        options=services.IngestOptions.from_dict(options),
        force=force,
        requested_at=services.ingest_run_requested_at(run_id=run_id) if run_id is not None else None,
    )
    staged = [staged_to_json(document) for document in documents]
    counts = {"new": summary.new, "changed": summary.changed}
    # new/changed are counted when the embed task has indexed them, so --wait ends when all is visible
    summary.new = summary.changed = 0
    # merged before the embed task is queued: a merge that failed after the queueing would retry this task,
    # which would queue the batch again and have it counted twice
    if run_id is not None:
        services.ingest_run_add(run_id=run_id, summary=summary)
    if staged:
        if sum(len(document.chunks) for document in documents) <= EMBED_TASK_CHUNKS:
            embed_index_task.delay(run_id, staged_seal(staged), counts)
        else:
            shares = services.staged_counts_each(documents)
            for group in chunk_groups([len(document.chunks) for document in documents], EMBED_TASK_CHUNKS):
                group_counts: dict[str, int] = {}
                for i in group:
                    for key, value in shares[i].items():
                        group_counts[key] = group_counts.get(key, 0) + value
                embed_index_task.delay(run_id, staged_seal([staged[i] for i in group]), group_counts)
    return summary.as_dict()


@shared_task(**_RETRYING)
def embed_index_task(self, run_id: int | None, sealed: list[dict] | str, counts: dict[str, int]) -> dict:  # type: ignore[no-untyped-def]
    """Embed every chunk of the batch in one length-sorted call, then index each document atomically. A batch
    that took its worker down CRASH_LIMIT times is split into one task per document, each with its own new or
    changed count; a single document that did is marked failed instead of being tried again (as
    ingest_files_task does). `sealed`: the staged documents (staged_seal)."""
    staged = staged_unseal(sealed)
    documents = [staged_from_json(item) for item in staged]
    task_id = self.request.id
    if delivery_start(task_id) > CRASH_LIMIT:
        try:
            return _crashed_embed_batch(task_id, run_id, staged, documents)
        finally:
            delivery_end(task_id)
    try:
        return _embed_index(run_id, documents, counts)
    finally:
        delivery_end(task_id)


def _crashed_embed_batch(
    task_id: str | None, run_id: int | None, staged: list[dict], documents: list[Any]
) -> dict:
    summary = services.IngestSummary()
    if len(documents) > 1:
        # find the document that crashes: each on its own (each keeps its request time)
        shares = services.staged_counts_each(documents)
        split_queue(
            task_id,
            len(staged),
            lambda i: embed_index_task.delay(run_id, staged_seal([staged[i]]), shares[i]),
        )
        return summary.as_dict()
    for document in documents:
        services.document_record_failure(
            source=document.source,
            path=Path(document.source_path),
            root=document.source_root,
            error=f"the worker died {CRASH_LIMIT} times while embedding this document; not retried",
            options=services.IngestOptions.from_dict(document.options),
        )
        summary.failed += 1
        summary.errors[document.source] = "crashed the worker"
    if run_id is not None:
        services.ingest_run_add(run_id=run_id, summary=summary)
    return summary.as_dict()


def _embed_index(run_id: int | None, documents: list[Any], counts: dict[str, int]) -> dict:
    summary = services.IngestSummary(new=counts.get("new", 0), changed=counts.get("changed", 0))
    services.staged_index(documents, summary)
    if run_id is not None:
        services.ingest_run_add(run_id=run_id, summary=summary)
    return summary.as_dict()


@shared_task
def sync_source_folders_task(once_per_night: bool = False) -> list[int]:
    """Nightly: ingest every configured source folder with its own ACL policy (services.source_folder_parse;
    unchanged files cost a hash each). A folder that cannot be synced (missing, not mounted, misconfigured) is
    logged and audited (services.source_folder_failure_record), and the others go on. Returns the runs' ids.

    Beat sends it with `once_per_night`. Beat saves its schedule right after each send
    (CELERY_BEAT_SYNC_EVERY); one killed between the send and that save sends it again when restarted: the
    second copy finds tonight's key in Redis and does nothing."""
    from django.conf import settings
    from django.utils import timezone

    from athena.throttling import redis_client

    if once_per_night:
        # The night is the date of the scheduled moment a copy was sent for, not of the day it runs: a copy
        # run after midnight (sent again by a restarted beat, or queued behind a long ingest) would otherwise
        # run the sync again and take the next night's key. A night's window opens an hour before its moment,
        # so that a worker whose clock lags beat's does not count the copy for the night before.
        night_starts = timedelta(
            hours=settings.ATHENA_NIGHTLY_SYNC_HOUR, minutes=settings.ATHENA_NIGHTLY_SYNC_MINUTE
        ) - timedelta(hours=1)
        night = (timezone.localtime() - night_starts).date().isoformat()
        key = f"athena:{settings.DATABASES['default']['NAME']}:nightly-sync:{night}"
        if not redis_client().set(key, "1", nx=True, ex=36 * 3600):
            return []
    run_ids = []
    for entry in settings.ATHENA_SOURCE_FOLDERS:
        # each folder on its own: one that is missing (a share not mounted) or misconfigured must not keep the
        # folders after it from their sync
        try:
            folder = services.source_folder_parse(entry)
            run_ids.append(folder_ingest_enqueue(root=folder.path, options=folder.options))
        except Exception as exc:
            logger.exception("the nightly sync of %s failed", entry)
            services.source_folder_failure_record(folder=entry.split("|")[0].strip() or entry, error=str(exc))
    return run_ids


@shared_task
def uploads_expire_task() -> int:
    """Hourly: every document past its expiry (a private upload, or any document whose expiry an admin set) is
    tombstoned; a private upload's file is deleted too (services.uploads_expire)."""
    return services.uploads_expire()


@shared_task
def repack_postings_task(min_stale: float = 0.1) -> int | None:
    """Nightly: rebuild the BM25 posting blocks when deleted chunks' postings make up `min_stale` of them."""
    from knowledge.indexing import postings_repack_if_stale

    return postings_repack_if_stale(min_stale)[1]


@shared_task
def documents_reindex_stale_task(limit: int = 500) -> int:
    """Every ten minutes: after an upgrade that changed the analyser, the next `limit` documents still indexed by
    the older one are queued again (services.documents_reindex_stale), only while the ingest and embed queues are
    empty, so that a large knowledge base is worked through at the workers' pace instead of queued at once, and
    a folder ingest goes first. Returns how many were queued."""
    if _ingest_queues_busy():
        return 0
    return services.documents_reindex_stale(limit=limit)


def _ingest_queues_busy() -> bool:
    """Whether ingest or embed tasks wait in the broker (ingest_tasks_in_flight also counts the ones workers
    hold, among them the task asking)."""
    import redis
    from django.conf import settings

    client = redis.Redis.from_url(settings.CELERY_BROKER_URL, socket_timeout=5)
    try:
        return any(client.llen(queue) for queue in settings.ATHENA_INGEST_QUEUES)
    finally:
        client.close()


def ingest_tasks_in_flight() -> bool:
    """Whether any ingest or embed task waits in the broker or is held by a worker (taken, not yet
    acknowledged: tasks are acknowledged when they finish). False while a run is unfinished means its remaining
    tasks are gone: a Redis that restarted without its data (no append-only file) lost them. True when the
    broker does not answer (down or restarting): that cannot be told yet, and the caller asks again."""
    import redis
    from django.conf import settings

    # kombu's Redis transport keeps each queue as a list named after it and every delivered, unacknowledged
    # message in one hash
    client = redis.Redis.from_url(settings.CELERY_BROKER_URL, socket_timeout=5)
    try:
        pipe = client.pipeline()
        for queue in settings.ATHENA_INGEST_QUEUES:
            pipe.llen(queue)
        pipe.hlen("unacked")
        return any(pipe.execute())
    except redis.RedisError as exc:
        logger.warning("ingest: the broker did not answer (%s); asking again later", type(exc).__name__)
        return True
    finally:
        client.close()


def folder_ingest_enqueue(
    *, root: Path, options: services.IngestOptions, batch_size: int = 16, force: bool = False
) -> int:
    """Queue a folder's files in batches on the ingest queue (`force`: index unchanged files again too);
    returns the ingest run's id."""
    run, files = services.ingest_run_start(root=root, options=options)
    run.counts["deleted"] = services.folder_tombstone_missing(
        root=run.root, prefix=options.prefix, present={s for s, _ in files}, run_id=run.pk
    )
    run.save(update_fields=["counts"])
    services.ingest_run_finish_if_done(run)
    for batch in services.batches([[s, p] for s, p in files], batch_size):
        ingest_files_task.apply_async(
            (run.pk, run.root, files_seal(batch), options.as_dict()), _force_kwargs(force)
        )
    return run.pk
