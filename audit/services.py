"""Writing and verifying the hash-chained audit log."""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from django.db import connection, transaction

from audit.models import AuditEvent

AUDIT_CHAIN_LOCK = 7_413_002  # serialises appends so each row links to the true previous one
GENESIS = "0" * 64
# What each event's hash covers (besides prev_hash): the keyword arguments of event_digest.
CONTENT_FIELDS = ("created_at", "kind", "actor", "actor_id", "verdict", "documents", "payload")


def canonical_json(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)


def event_digest(
    *,
    prev_hash: str,
    created_at: datetime,
    kind: str,
    actor: str,
    actor_id: int | None,
    verdict: str,
    documents: list[str],
    payload: dict[str, Any],
) -> str:
    body = canonical_json(
        {
            "created_at": created_at.astimezone(UTC).isoformat(timespec="microseconds"),
            "kind": kind,
            "actor": actor,
            "actor_id": actor_id,
            "verdict": verdict,
            "documents": documents,
            "payload": payload,
        }
    )
    return hashlib.sha256((prev_hash + body).encode("utf-8")).hexdigest()


def audit_record(
    *,
    kind: str,
    actor: Any = None,
    payload: dict[str, Any] | None = None,
    verdict: str = "",
    documents: list[str] | None = None,
) -> AuditEvent:
    """Append one event. `actor` is a User, a user name, or None (system)."""
    actor_name = getattr(actor, "username", None) or (actor if isinstance(actor, str) else "")
    actor_id = getattr(actor, "pk", None)
    # JSON round trip so that the hashed form equals what the database returns later
    payload = json.loads(canonical_json(payload or {}))
    documents = sorted(set(documents or []))
    with transaction.atomic():
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_advisory_xact_lock(%s)", [AUDIT_CHAIN_LOCK])
        last = AuditEvent.objects.order_by("-id").values_list("hash", flat=True).first()
        prev_hash = last or GENESIS
        content: dict[str, Any] = {
            "created_at": datetime.now(UTC),
            "kind": kind,
            "actor": actor_name,
            "actor_id": actor_id,
            "verdict": verdict,
            "documents": documents,
            "payload": payload,
        }
        digest = event_digest(prev_hash=prev_hash, **content)
        return AuditEvent.objects.create(**content, prev_hash=prev_hash, hash=digest)


@dataclass(frozen=True)
class ChainReport:
    ok: bool
    checked: int
    first_broken_id: int | None
    reason: str


def audit_verify() -> ChainReport:
    """Recompute every link; report the first event whose hash or back-link does not match."""
    prev_hash = GENESIS
    checked = 0
    for event in AuditEvent.objects.order_by("id").iterator(chunk_size=2000):
        if event.prev_hash != prev_hash:
            return ChainReport(
                False,
                checked,
                event.pk,
                "prev_hash does not match the previous event's hash (an event was removed or reordered)",
            )
        expected = event_digest(
            prev_hash=event.prev_hash, **{field: getattr(event, field) for field in CONTENT_FIELDS}
        )
        if expected != event.hash:
            return ChainReport(
                False, checked, event.pk, "content does not match its hash (event was altered)"
            )
        prev_hash = event.hash
        checked += 1
    return ChainReport(True, checked, None, "chain intact")
