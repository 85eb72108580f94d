"""Background work of the audit log: periodic signed checkpoints of the chain's head, and the closing totals of
aggregated (flood-proof) events."""

from __future__ import annotations

import logging

from celery import shared_task

logger = logging.getLogger(__name__)


@shared_task(name="audit.tasks.audit_checkpoint_task")
def audit_checkpoint_task() -> int | None:
    from audit.services import audit_checkpoint_write

    checkpoint = audit_checkpoint_write()
    if checkpoint is None:
        logger.error(
            "audit checkpoint not written: the chain is empty or failed verification (run audit_verify)"
        )
        return None
    return checkpoint.event_id


@shared_task(name="audit.tasks.audit_aggregates_flush_task")
def audit_aggregates_flush_task() -> int:
    """Write the exact total of each ended aggregation window (throttled requests, failed sign-ins)."""
    from audit.aggregation import audit_aggregates_flush

    return audit_aggregates_flush()
