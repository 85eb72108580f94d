"""Realtime queue: the model-heavy answering pipeline runs where the models stay loaded."""

from __future__ import annotations

from typing import Any

from celery import Task, shared_task
from celery.signals import (
    task_postrun,
    task_prerun,
    worker_init,
    worker_process_init,
    worker_shutdown,
    worker_shutting_down,
)

_heartbeat: Any = None
_other_leases: dict[str, Any] = {}  # task id -> OtherTaskLease, in a pool process


# acks_late + reject_on_worker_lost: a pool process killed mid-answer gives the message back to the queue and
# the next pool process answers it (both are also the project-wide defaults; stated here because this task
# relies on them); its result is read by the asker (CELERY_TASK_IGNORE_RESULT is the default otherwise)
@shared_task(bind=True, acks_late=True, reject_on_worker_lost=True, ignore_result=False)
def answer_task(
    self: Task,
    user_id: int,
    sealed_question: str,
    conversation_id: str,
    filters: dict[str, Any] | None,
    *later: Any,
    seal_answer: bool = False,
    **later_options: Any,
) -> dict | str | None:
    """Answer a question for the realtime queue. `sealed_question` is the question sealed by the web process
    (athena.sealing): the broker never holds its text, which the input guard has not screened yet.

    `seal_answer`: the answer is returned sealed (athena.sealing, Purpose.ANSWER), so that the result backend
    holds no passage, title or answer text; a web process of the earlier release, which sends no such option,
    gets it as it did. A pipeline that fails leaves a TaskFailed there (athena.errors), never its exception's
    message or traceback; those go to this worker's log.

    `later`, `later_options`: arguments that a web process of a later release sends (a rolling upgrade whose web
    hosts went first). They are refused, never ignored (this release cannot honour what they ask for): the
    asker gets 503 with Retry-After (agents.realtime.ReleaseMismatch) instead of a server error."""
    import time

    from agents.realtime import AnswerLease, ReleaseMismatch, abandoned, service_time_record
    from agents.services import answer_compute
    from athena.errors import task_failure_sanitized
    from athena.sealing import Purpose, seal_json, unseal

    if later or later_options:
        raise ReleaseMismatch(
            f"answer_task got {len(later)} extra argument(s) and option(s) {sorted(later_options)} "
            "from a later release"
        )
    received = time.perf_counter()
    question_id = str(self.request.id)
    if abandoned(question_id):  # the asker already got the answer, or 503: nobody reads this one
        return None
    stored = self.AsyncResult(question_id)
    if stored.state == "SUCCESS":  # a second copy of a question already answered (see agents/realtime.py)
        return stored.result
    started = time.monotonic()
    # a question this worker cannot open raises KeyMismatch as it is (its message is ours, without text): the
    # asker tells the web and worker's keys apart from a failure of the pipeline (503, not a server error)
    question = unseal(sealed_question, purpose=Purpose.QUESTION)
    with AnswerLease(question_id), task_failure_sanitized(f"answer_task[{question_id}]"):
        result = answer_compute(
            user_id=user_id, question=question, conversation_id=conversation_id, filters=filters
        )
    # the whole run as this process lived it (model contention, database, memory), for the expected wait
    service_time_record(time.monotonic() - started)
    # the task's own time in the worker: what the asker waited beyond it is the broker hop (tests/benchmarks/hop.py)
    result["timings_ms"]["worker"] = round((time.perf_counter() - received) * 1000, 1)
    return seal_json(result, purpose=Purpose.ANSWER) if seal_answer else result


@worker_init.connect
def _announce_realtime_worker(sender: Any, **_: Any) -> None:
    """The worker's main process tells askers it consumes the realtime queue (agents/realtime.py), from the
    moment its queues are set up: its pool processes then load the models (seconds on a slow CPU), and an
    asker whose worker was just restarted keeps waiting for it instead of getting 503 because the heartbeat
    came only once the pool was warm. A worker that dies while starting stops beating like any other."""
    global _heartbeat
    from django.conf import settings

    from agents.realtime import WorkerHeartbeat
    from athena.consumers import worker_queues

    if settings.ATHENA_REALTIME_QUEUE not in worker_queues(sender.app) or _heartbeat is not None:
        return
    concurrency = sender.concurrency if isinstance(sender.concurrency, int) else 1
    _heartbeat = WorkerHeartbeat(
        hostname=sender.hostname, concurrency=max(1, concurrency), finishing=_questions_running
    )
    _heartbeat.start()


def _questions_running() -> int:
    """The questions this worker's pool processes are answering now (Celery's record of the requests its main
    process handed to the pool and that have not ended)."""
    from celery.worker import state

    return sum(1 for request in list(state.active_requests) if request.name == answer_task.name)


@worker_shutting_down.connect
def _drain_realtime_worker(**_: Any) -> None:
    """A worker that begins to stop takes no new question: admission stops counting its processes, while the
    askers of the questions it finishes still see it alive (WorkerHeartbeat.drain)."""
    if _heartbeat is not None:
        _heartbeat.drain()


@worker_shutdown.connect
def _retire_realtime_worker(**_: Any) -> None:
    if _heartbeat is not None:
        _heartbeat.stop()


@task_prerun.connect
def _other_task_started(task_id: str, task: Task, **_: Any) -> None:
    """A pool process starting a task of another queue (an embed batch, a parse) tells admission that it
    cannot take a question before that task ends (agents/realtime.py, `others`)."""
    from django.conf import settings

    from agents.realtime import OtherTaskLease

    queue = (task.request.delivery_info or {}).get("routing_key")
    if (
        task.request.is_eager
        or not task.request.hostname
        or not queue
        or queue == settings.ATHENA_REALTIME_QUEUE
    ):
        return  # run in the calling process (eager), or a question
    lease = OtherTaskLease(hostname=task.request.hostname, queue=queue)
    lease.start()
    _other_leases[task_id] = lease


@task_postrun.connect
def _other_task_ended(task_id: str, **_: Any) -> None:
    lease = _other_leases.pop(task_id, None)
    if lease is not None:
        lease.end()


@shared_task(ignore_result=False)  # the web process reads the screened text
def passage_guard_task(text: str, sealed: bool = False) -> str:
    """A passage through the output guard (agents.services.passage_text_guard). `sealed`: `text` is sealed
    (athena.sealing, Purpose.PASSAGE) and so is the guarded text returned; a web process of the earlier release
    sends plain text and gets plain text back. A failure leaves a TaskFailed in the result backend, never the
    exception's message (which may quote the passage)."""
    from athena.errors import task_failure_sanitized
    from athena.sealing import Purpose, seal, unseal
    from screening.markings import guard_quoted_text

    # a passage this worker cannot open raises KeyMismatch as it is (as answer_task's question)
    passage = unseal(text, purpose=Purpose.PASSAGE) if sealed else text
    with task_failure_sanitized("passage_guard_task"):
        guarded = guard_quoted_text(passage)[0]
    return seal(guarded, purpose=Purpose.PASSAGE) if sealed else guarded


@worker_process_init.connect
def _limit_threads_and_warm_up(**_: Any) -> None:
    """torch threads x worker processes must stay <= cores; load the models before the first question so
    that nobody waits seconds for a cold start (set ATHENA_WORKER_WARM_UP=false to skip)."""
    import logging
    import time

    from django.conf import settings

    try:
        import torch

        torch.set_num_threads(settings.ATHENA_TORCH_THREADS)
    except ImportError:
        return
    if not settings.ATHENA_WORKER_WARM_UP:
        return
    started = time.monotonic()
    try:
        from agents import classify, guardrails
        from knowledge.embedders import get_embedder
        from retrieval.rerank import get_reranker

        get_embedder().warm_up()
        get_reranker().warm_up()
        classify.classify("warm up")
        guardrails.warm_up()
    except Exception:  # a failed warm-up only means the first question pays the loading time
        logging.getLogger(__name__).exception("model warm-up failed")
        return
    # Celery says "ready" before its pool processes have loaded the models: this says when one has
    logging.getLogger(__name__).info("models warm in %.1f s", time.monotonic() - started)
