"""The append-only, hash-chained audit log."""

from __future__ import annotations

from django.contrib.postgres.indexes import GinIndex, OpClass
from django.db import models
from django.db.models.functions import Cast, Upper


class AuditEvent(models.Model):
    """One event. Rows are never updated or deleted: triggers in the database refuse UPDATE, DELETE and
    TRUNCATE, and each row carries HMAC-SHA256(audit key, prev_hash + canonical JSON of its content), see
    audit.services."""

    created_at = models.DateTimeField()
    kind = models.CharField(max_length=50, db_index=True)
    actor = models.CharField(max_length=150, blank=True, db_index=True)
    actor_id = models.BigIntegerField(null=True, blank=True)
    verdict = models.CharField(max_length=30, blank=True, db_index=True)
    documents = models.JSONField(default=list, blank=True, help_text="source ids involved (for search)")
    payload = models.JSONField(default=dict)
    key_id = models.CharField(
        max_length=40,
        blank=True,
        help_text="id of the audit key that signed it ('' for unkeyed legacy events)",
    )
    prev_hash = models.CharField(max_length=64)
    hash = models.CharField(max_length=64, unique=True)

    class Meta:
        ordering = ["id"]
        indexes = [
            models.Index(fields=["created_at"]),
            # the compliance search's text (audit.selectors.audit_event_search): trigrams of the payload as the
            # icontains lookup reads it, UPPER(payload::text), so that a phrase few events hold is found without
            # reading every payload (migration 0005 builds it concurrently; tests/benchmarks/audit_search.py)
            GinIndex(
                OpClass(Upper(Cast("payload", models.TextField())), name="gin_trgm_ops"),
                name="audit_payload_trgm",
            ),
        ]

    def __str__(self) -> str:
        return f"#{self.pk} {self.kind} by {self.actor or '-'}"
