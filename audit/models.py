"""The append-only, hash-chained audit log."""

from __future__ import annotations

from django.db import models


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
        indexes = [models.Index(fields=["created_at"])]

    def __str__(self) -> str:
        return f"#{self.pk} {self.kind} by {self.actor or '-'}"
