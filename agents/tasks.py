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


@worker_process_init.connect
def _limit_threads(**_: Any) -> None:
    # torch threads x worker processes must stay <= cores; models load lazily on the first task
    from django.conf import settings

    try:
        import torch

        torch.set_num_threads(settings.ATHENA_TORCH_THREADS)
    except ImportError:
        pass
