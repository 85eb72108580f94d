"""Realtime queue: the model-heavy answering pipeline runs where the models stay loaded."""

from __future__ import annotations

from typing import Any

from celery import shared_task
from celery.signals import worker_process_init


@shared_task
def answer_task(user_id: int, question: str, conversation_id: str, filters: dict[str, Any] | None) -> dict:
    from agents.services import answer_compute

    return answer_compute(
        user_id=user_id, question=question, conversation_id=conversation_id, filters=filters
    )


@shared_task
def passage_guard_task(text: str) -> str:
    from agents.guardrails import guard_quoted_text

    return guard_quoted_text(text)[0]


@worker_process_init.connect
def _limit_threads_and_warm_up(**_: Any) -> None:
    """torch threads x worker processes must stay <= cores; load the models before the first question so
    that nobody waits seconds for a cold start (set ATHENA_WORKER_WARM_UP=false to skip)."""
    import logging

    from django.conf import settings

    try:
        import torch

        torch.set_num_threads(settings.ATHENA_TORCH_THREADS)
    except ImportError:
        return
    if not settings.ATHENA_WORKER_WARM_UP:
        return
    try:
        from agents import classify, guardrails
        from retrieval.embedders import get_embedder
        from retrieval.rerank import get_reranker

        get_embedder().warm_up()
        get_reranker().warm_up()
        classify.classify("warm up")
        guardrails.warm_up()
    except Exception:  # a failed warm-up only means the first question pays the loading time
        logging.getLogger(__name__).exception("model warm-up failed")
