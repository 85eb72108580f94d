"""Writing and verifying the tamper-evident audit log.

Each event carries HMAC-SHA256(key, prev_hash + canonical JSON of its content): the key comes from the
environment (ATHENA_AUDIT_KEY), so whoever holds the database -- even its owner, who can switch off the
append-only triggers -- cannot re-hash an edited chain. The key id is stored with each event, so keys can be
rotated (the new key signs new events; retired keys stay in ATHENA_AUDIT_OLD_KEYS for verification). Events
written before keys existed (key_id "") carry the plain SHA-256 link and are accepted only before the first
keyed event.

A deleted tail leaves a consistent chain, so the head is also anchored outside the database: signed
checkpoints (head id + hash, HMAC'd, each linked to the previous) are appended to a file under
ATHENA_VAR_DIR (audit_checkpoint_write; a beat task every ATHENA_AUDIT_CHECKPOINT_MINUTES), and audit_verify
checks the chain against the key and the latest checkpoint.
"""

from __future__ import annotations

import fcntl
import hashlib
import hmac
import json
import logging
import os
from dataclasses import asdict, dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.exceptions import ImproperlyConfigured
from django.db import connection, transaction

from athena.validators import json_storable, text_storable
from audit.models import AuditEvent

logger = logging.getLogger(__name__)

AUDIT_CHAIN_LOCK = 7_413_002  # serialises appends so each row links to the true previous one
GENESIS = "0" * 64
# What each event's hash covers (besides prev_hash): the keyword arguments of event_digest.
CONTENT_FIELDS = ("created_at", "kind", "actor", "actor_id", "verdict", "documents", "payload", "key_id")


def canonical_json(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)


def audit_keys() -> dict[str, bytes]:
    """Key id -> secret for every key that verifies: the current one and the retired ones."""
    keys: dict[str, bytes] = {}
    for item in settings.ATHENA_AUDIT_OLD_KEYS:
        key_id, _, secret = item.partition(":")
        if key_id and secret:
            keys[key_id] = secret.encode()
    if settings.ATHENA_AUDIT_KEY:
        keys[settings.ATHENA_AUDIT_KEY_ID] = settings.ATHENA_AUDIT_KEY.encode()
    return keys


def audit_key_fingerprints() -> dict[str, str]:
    """Key id -> a fingerprint of each verifying key (an HMAC of a fixed text under the key, which tells one key
    from another and reveals nothing of it). A backup records them; its restore checks that the environment
    holds the same keys, which the backup never does."""
    return {
        key_id: hmac.new(secret, b"athena audit key fingerprint", hashlib.sha256).hexdigest()[:16]
        for key_id, secret in audit_keys().items()
    }


def audit_key_mismatches(fingerprints: dict[str, str]) -> list[str]:
    """What keeps the events signed with the keys of `fingerprints` (as audit_key_fingerprints gave them where
    they were signed) from verifying here: a key id this environment lacks, or one it holds with another
    secret."""
    here = audit_key_fingerprints()
    problems = []
    for key_id, fingerprint in sorted(fingerprints.items()):
        if key_id not in here:
            problems.append(
                f"audit key id {key_id!r} signed events of the backup, and neither ATHENA_AUDIT_KEY (with "
                "ATHENA_AUDIT_KEY_ID) nor ATHENA_AUDIT_OLD_KEYS holds it here"
            )
        elif here[key_id] != fingerprint:
            problems.append(
                f"the audit key with id {key_id!r} here is not the one the backup was made with: set "
                "ATHENA_AUDIT_KEY (or ATHENA_AUDIT_OLD_KEYS) to that installation's secret"
            )
    return problems


def _current_key() -> tuple[str, bytes]:
    if not settings.ATHENA_AUDIT_KEY:
        raise ImproperlyConfigured("ATHENA_AUDIT_KEY is not set: the audit log cannot be signed")
    return settings.ATHENA_AUDIT_KEY_ID, settings.ATHENA_AUDIT_KEY.encode()


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
    key_id: str = "",
    key: bytes | None = None,
) -> str:
    """The link of one event: HMAC-SHA256 with `key` (key id included in what is signed), or the plain
    SHA-256 of a legacy event (no key)."""
    content: dict[str, Any] = {
        "created_at": created_at.astimezone(UTC).isoformat(timespec="microseconds"),
        "kind": kind,
        "actor": actor,
        "actor_id": actor_id,
        "verdict": verdict,
        "documents": documents,
        "payload": payload,
    }
    if key_id:
        content["key_id"] = key_id
    message = (prev_hash + canonical_json(content)).encode("utf-8")
    if key is None:
        return hashlib.sha256(message).hexdigest()
    return hmac.new(key, message, hashlib.sha256).hexdigest()


def audit_record(
    *,
    kind: str,
    actor: Any = None,
    payload: dict[str, Any] | None = None,
    verdict: str = "",
    documents: list[str] | None = None,
) -> AuditEvent:
    """Append one event. `actor` is a User, a user name, or None (system)."""
    key_id, key = _current_key()
    actor_name = getattr(actor, "username", None) or (actor if isinstance(actor, str) else "")
    actor_id = getattr(actor, "pk", None)
    # JSON round trip so that the hashed form equals what the database returns later. A refusal quotes what
    # was sent (an unknown field's name, a file name): a character the database cannot hold (NUL, a lone
    # surrogate) is replaced, so the event is written instead of failing, unaudited, with a server error
    payload = json_storable(json.loads(canonical_json(payload or {})))
    documents = sorted(set(json_storable(list(documents or []))))
    actor_name, verdict = text_storable(actor_name), text_storable(verdict)
    with transaction.atomic():
        with connection.cursor() as cursor:
            # an acknowledged audit event survives a crash, whatever the server's default
            cursor.execute("SET LOCAL synchronous_commit = on")
            cursor.execute("SELECT pg_advisory_xact_lock(%s)", [AUDIT_CHAIN_LOCK])
            # the event's time is the database's, read under the chain's lock: the web processes and workers
            # writing to the chain run on hosts whose clocks may disagree, and each host's own time put events
            # out of order along the chain (one an hour ahead: in the future, on another day to a search)
            cursor.execute("SELECT clock_timestamp()")
            created_at = cursor.fetchone()[0]
        last = AuditEvent.objects.order_by("-id").values_list("hash", flat=True).first()
        prev_hash = last or GENESIS
        content: dict[str, Any] = {
            "created_at": created_at,
            "kind": kind,
            "actor": actor_name,
            "actor_id": actor_id,
            "verdict": verdict,
            "documents": documents,
            "payload": payload,
            "key_id": key_id,
        }
        digest = event_digest(prev_hash=prev_hash, key=key, **content)
        event = AuditEvent.objects.create(**content, prev_hash=prev_hash, hash=digest)
        if settings.ATHENA_AUDIT_SYSLOG:
            # only once committed: a rolled-back event must not appear in the remote copy
            transaction.on_commit(lambda: audit_syslog_send(event))
        return event


# --- optional syslog sink ----------------------------------------------------------------------------------
SYSLOG_PRIORITY = 16 * 8 + 6  # facility local0, severity informational


def audit_syslog_message(event: AuditEvent) -> bytes:
    """One RFC 5424 message for `event`: its place in the chain (id, hashes, key id) and who/what/verdict.
    The payload stays in the database: it may quote a question or an answer, and the remote copy exists to
    anchor the chain outside the database (an edited or deleted event no longer matches it), not to copy it."""
    body = canonical_json(
        {
            "id": event.pk,
            "created_at": event.created_at,
            "kind": event.kind,
            "actor": event.actor,
            "verdict": event.verdict,
            "key_id": event.key_id,
            "prev_hash": event.prev_hash,
            "hash": event.hash,
        }
    )
    stamp = event.created_at.astimezone(UTC).isoformat(timespec="microseconds").replace("+00:00", "Z")
    host = os.uname().nodename or "-"
    return f"<{SYSLOG_PRIORITY}>1 {stamp} {host} athena - audit - {body}".encode()


def audit_syslog_send(event: AuditEvent) -> None:
    """Send `event` to ATHENA_AUDIT_SYSLOG ("udp://host:port"). A sink that is down loses the datagram (it is
    logged): the database remains the record, and the checkpoints and audit_verify still cover it."""
    import socket
    from urllib.parse import urlsplit

    target = urlsplit(settings.ATHENA_AUDIT_SYSLOG)
    if target.scheme != "udp" or not target.hostname or not target.port:
        logger.error("ATHENA_AUDIT_SYSLOG must look like udp://host:port; event %s not sent", event.pk)
        return
    try:
        with socket.socket(
            socket.AF_INET6 if ":" in target.hostname else socket.AF_INET, socket.SOCK_DGRAM
        ) as sock:
            sock.sendto(audit_syslog_message(event), (target.hostname, target.port))
    except OSError as exc:
        logger.warning(
            "audit syslog sink %s: event %s not sent (%s)", settings.ATHENA_AUDIT_SYSLOG, event.pk, exc
        )


# --- checkpoints outside the database ----------------------------------------------------------------------
def _checkpoint_path() -> Path:
    return Path(settings.ATHENA_AUDIT_CHECKPOINT_FILE)


def _checkpoint_mac(key: bytes, body: dict[str, Any]) -> str:
    return hmac.new(key, canonical_json(body).encode("utf-8"), hashlib.sha256).hexdigest()


@dataclass(frozen=True)
class Checkpoint:
    event_id: int
    hash: str
    written_at: str
    key_id: str
    prev_mac: str
    mac: str


def checkpoints_read() -> tuple[list[Checkpoint], list[str]]:
    """The checkpoints of the file whose signature and link to the previous one hold, and a problem for each
    line that does not (an edited, reordered or forged line)."""
    path = _checkpoint_path()
    if not path.exists():
        return [], []
    keys = audit_keys()
    good: list[Checkpoint] = []
    problems: list[str] = []
    prev_mac = ""
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if not line.strip():
            continue
        try:
            data = json.loads(line)
            checkpoint = Checkpoint(**data)
        except (ValueError, TypeError):
            problems.append(f"checkpoint file line {number} is not a checkpoint")
            continue
        body = {k: v for k, v in data.items() if k != "mac"}
        key = keys.get(checkpoint.key_id)
        if key is None:
            problems.append(
                f"checkpoint file line {number} is signed with unknown key id {checkpoint.key_id!r}"
            )
        elif not hmac.compare_digest(_checkpoint_mac(key, body), checkpoint.mac):
            problems.append(f"checkpoint file line {number} does not match its signature (altered or forged)")
        elif checkpoint.prev_mac != prev_mac:
            problems.append(f"checkpoint file line {number} does not follow the line before (lines removed)")
            prev_mac = checkpoint.mac
        else:
            good.append(checkpoint)
            prev_mac = checkpoint.mac
    return good, problems


def audit_checkpoint_write() -> Checkpoint | None:
    """Verify the chain, then append a signed checkpoint of its head to the checkpoint file (append-only:
    opened with O_APPEND, flushed and fsynced). Nothing is written for an empty or broken chain -- a
    checkpoint must never bless a tampered head."""
    report = audit_verify()
    if not report.ok:
        return None
    if not AuditEvent.objects.exists():
        return None
    key_id, key = _current_key()
    path = _checkpoint_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    descriptor = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
    try:
        # one writer at a time, from reading the last line to appending the next (the beat task overlapping a
        # slow earlier run, an operator's `audit_verify --checkpoint`): each line links to the one before it,
        # and two writers that read the same last line both linked to it, so that the file read as one with
        # lines removed and every later verification failed. Released when the descriptor is closed
        fcntl.flock(descriptor, fcntl.LOCK_EX)
        head = AuditEvent.objects.order_by("-id").values_list("id", "hash").first()
        existing, _ = checkpoints_read()
        if head is None:
            return None
        if existing and existing[-1].event_id == head[0] and existing[-1].hash == head[1]:
            return existing[-1]  # nothing new since the last checkpoint
        body: dict[str, Any] = {
            "event_id": head[0],
            "hash": head[1],
            "written_at": datetime.now(UTC).isoformat(timespec="seconds"),
            "key_id": key_id,
            "prev_mac": existing[-1].mac if existing else "",
        }
        record = {**body, "mac": _checkpoint_mac(key, body)}
        os.write(descriptor, (canonical_json(record) + "\n").encode("utf-8"))
        os.fsync(descriptor)
    finally:
        os.close(descriptor)
    return Checkpoint(**record)


# --- verification ------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class ChainReport:
    ok: bool
    checked: int
    first_broken_id: int | None
    reason: str
    problems: list[str] = field(default_factory=list)
    checkpoint_event_id: int | None = None
    # events whose hash this call recomputed (all of them for a full check, only the new ones for an
    # incremental one) and the verified event it started after (None: from the genesis)
    verified_now: int = 0
    verified_after_id: int | None = None


@dataclass
class _Walk:
    """Running state of a walk along the chain: the hash the next event must link to."""

    prev_hash: str = GENESIS
    seen_keyed: bool = False
    checked: int = 0
    verified_now: int = 0
    last_id: int | None = None
    first_broken: int | None = None
    reason: str = ""


def _event_problem(event: AuditEvent, walk: _Walk, keys: dict[str, bytes]) -> str:
    """Why `event` does not continue the chain verified so far ('' when it does)."""
    content = {name: getattr(event, name) for name in CONTENT_FIELDS}
    if event.prev_hash != walk.prev_hash:
        return "prev_hash does not match the previous event's hash (a gap: an event was removed or reordered)"
    if event.key_id:
        walk.seen_keyed = True
        key = keys.get(event.key_id)
        if key is None:
            return f"signed with an unknown audit key id {event.key_id!r} (see ATHENA_AUDIT_OLD_KEYS)"
        if not hmac.compare_digest(event_digest(prev_hash=walk.prev_hash, key=key, **content), event.hash):
            if event_digest(prev_hash=walk.prev_hash, **content) == event.hash:
                return "content matches an unkeyed hash, not the audit key (the chain was re-hashed without the key)"
            return "content does not match its hash (event was altered)"
        return ""
    if walk.seen_keyed:
        return "an unkeyed event follows keyed ones (the chain was re-hashed without the key)"
    if event_digest(prev_hash=walk.prev_hash, **content) != event.hash:
        return "content does not match its hash (event was altered)"
    return ""


def _walk_events(events: Any, walk: _Walk, keys: dict[str, bytes]) -> int:
    """Check each event of `events` (ascending id) against the chain so far; stops checking at the first
    broken one. Returns the last event's id (0: none). Nothing is kept per event: the walk used to keep every
    event's hash for the checkpoint comparison, which needs one (a dict of millions of hashes, ~180 bytes an
    event, in a web process); _stored_hash reads that one."""
    log_end = 0
    for event in events:
        log_end = event.pk
        if walk.first_broken is not None:
            continue
        walk.verified_now += 1
        problem = _event_problem(event, walk, keys)
        if problem:
            walk.first_broken, walk.reason = event.pk, problem
            continue
        walk.prev_hash = event.hash
        walk.last_id = event.pk
        walk.checked += 1
    return log_end


def _stored_hash(event_id: int) -> str | None:
    """The stored hash of one event (None: no such event)."""
    return AuditEvent.objects.filter(pk=event_id).values_list("hash", flat=True).first()


def _checkpoint_problems(stored_hash_of: Any, log_end: int) -> tuple[int | None, list[str]]:
    """The latest good checkpoint's event id and the problems of the checkpoint file and of the head against
    it. `stored_hash_of(event_id)` gives the stored hash of an event (None: no such event)."""
    checkpoints, problems = checkpoints_read()
    if not checkpoints:
        return None, problems
    latest = checkpoints[-1]
    stored = stored_hash_of(latest.event_id)
    if stored is None and latest.event_id > log_end:
        problems.append(
            f"deleted tail: the checkpoint of {latest.written_at} names event {latest.event_id}, "
            f"but the log ends at event {log_end or 'none'}"
        )
    elif stored is None:
        problems.append(f"event {latest.event_id} named by the latest checkpoint is missing (removed)")
    elif stored != latest.hash:
        problems.append(
            f"event {latest.event_id} does not have the hash its checkpoint recorded (the chain was rewritten)"
        )
    return latest.event_id, problems


def _report(walk: _Walk, problems: list[str], checkpoint_id: int | None, after_id: int | None) -> ChainReport:
    ok = walk.first_broken is None and not problems
    if ok:
        reason = "chain intact"
    elif walk.first_broken is None:
        reason = problems[0]
    else:
        reason = walk.reason
    return ChainReport(
        ok, walk.checked, walk.first_broken, reason, problems, checkpoint_id, walk.verified_now, after_id
    )


def audit_verify() -> ChainReport:
    """Recompute every link with the audit keys and compare the head with the latest checkpoint.

    Reports the first broken event (a gap: a back-link that does not match; an edited event; a chain re-hashed
    without the key; an unknown key) and, separately, a deleted tail or a rewritten head that only the
    checkpoint can reveal, and any altered checkpoint line. An intact chain's head is remembered as the
    verified state (audit_verify_incremental starts after it)."""
    walk = _Walk()
    log_end = _walk_events(AuditEvent.objects.order_by("id").iterator(chunk_size=2000), walk, audit_keys())
    checkpoint_id, problems = _checkpoint_problems(_stored_hash, log_end)
    report = _report(walk, problems, checkpoint_id, None)
    if report.ok:
        _broken_report_path().unlink(missing_ok=True)
        if walk.last_id is not None:
            _verified_state_write(event_id=walk.last_id, hash=walk.prev_hash, checked=walk.checked)
    else:
        # forget the verified head, and remember what this check found: until the chain is intact again the
        # pages show it (an edit below the head would otherwise stay invisible on them). They used to run this
        # full check on every load instead, which at millions of events outlasts the request (~27k events/s)
        _verified_state_path().unlink(missing_ok=True)
        _broken_report_write(report)
    return report


# --- incremental verification (compliance pages) -------------------------------------------------------------
# The whole chain is re-verified by audit_verify (the command, and the checkpoint beat task every
# ATHENA_AUDIT_CHECKPOINT_MINUTES); a page load only verifies what was appended since the last verification.
# The remembered state (head id + hash + how many events were verified up to it) is HMAC-signed with the audit
# key like the checkpoints, so editing the file cannot make a page skip events: an unsigned, forged or stale
# state is ignored and the page falls back to a full verification. A full verification that finds the chain
# broken forgets the head and leaves its signed report (broken.json), which the pages show until a full
# verification finds the chain intact again.


def _verified_state_path() -> Path:
    return _checkpoint_path().with_name("verified.json")


@dataclass(frozen=True)
class VerifiedState:
    event_id: int
    hash: str
    checked: int
    key_id: str
    # the hash of the log's first event: a state left by another database (a test database created again
    # under the same name, a restored copy) names event ids of a different log and is ignored
    genesis: str
    mac: str


def _genesis_hash() -> str:
    return AuditEvent.objects.order_by("id").values_list("hash", flat=True).first() or ""


def _verified_state_write(*, event_id: int, hash: str, checked: int) -> None:
    body = {"event_id": event_id, "hash": hash, "checked": checked, "genesis": _genesis_hash()}
    _signed_write(_verified_state_path(), body)


def _signed_write(path: Path, fields: dict[str, Any]) -> None:
    """Write `fields` to `path` with the current audit key's id and an HMAC of the whole body (read back by
    _signed_read)."""
    try:
        key_id, key = _current_key()
    except ImproperlyConfigured:
        return
    body: dict[str, Any] = {**fields, "key_id": key_id}
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_name(f".{path.name}.{os.getpid()}")
    try:
        temporary.write_text(canonical_json({**body, "mac": _checkpoint_mac(key, body)}), encoding="utf-8")
        os.replace(temporary, path)  # atomic: a concurrent reader sees the old or the new state, whole
    except OSError:
        # only a shortcut: without it the next page load verifies the whole chain again
        logger.warning("audit: %s not written", path, exc_info=True)


def _signed_read(path: Path) -> dict[str, Any] | None:
    """What _signed_write wrote to `path` (with its key_id and mac), or None when there is nothing there or its
    signature does not hold."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(data, dict):
        return None
    key = audit_keys().get(str(data.get("key_id")))
    body = {k: v for k, v in data.items() if k != "mac"}
    if key is None or not hmac.compare_digest(_checkpoint_mac(key, body), str(data.get("mac"))):
        return None
    return data


def verified_state_read() -> VerifiedState | None:
    """The remembered verified head, or None when there is none or its signature does not hold."""
    data = _signed_read(_verified_state_path())
    try:
        return VerifiedState(**data) if data is not None else None
    except TypeError:
        return None


def _broken_report_path() -> Path:
    return _checkpoint_path().with_name("broken.json")


def _broken_report_write(report: ChainReport) -> None:
    _signed_write(_broken_report_path(), {"report": asdict(report), "genesis": _genesis_hash()})


def broken_report_read() -> ChainReport | None:
    """What the last full verification found wrong with this log, or None when it found nothing (or there is
    no such report, or its signature does not hold, or it was made for another log). Nothing of it was
    recomputed now: verified_now is 0."""
    data = _signed_read(_broken_report_path())
    if data is None or data.get("genesis") != _genesis_hash() or not isinstance(data.get("report"), dict):
        return None
    try:
        return replace(ChainReport(**data["report"]), verified_now=0)
    except TypeError:
        return None


def audit_verify_incremental() -> ChainReport:
    """What the compliance pages show: verify only the events appended after the remembered verified head
    (a full audit_verify when there is none), and check that the head and the latest checkpoint still have
    the hashes they were verified with. An edit to an older event is left to the full verification."""
    state = verified_state_read()
    if state is None or state.genesis != _genesis_hash():
        # no verified head: the break the last full verification found, else a full verification now
        return broken_report_read() or audit_verify()
    anchor = AuditEvent.objects.filter(pk=state.event_id).values_list("hash", "key_id").first()
    walk = _Walk(prev_hash=state.hash, checked=state.checked, last_id=state.event_id)
    if anchor is None or anchor[0] != state.hash:
        walk.first_broken = state.event_id
        walk.reason = (
            "the last verified event is missing (removed)"
            if anchor is None
            else "the last verified event no longer has the hash it was verified with (altered)"
        )
        return _report(walk, [], None, state.event_id)
    walk.seen_keyed = bool(anchor[1])  # an unkeyed event may not follow a keyed one
    newer = AuditEvent.objects.filter(pk__gt=state.event_id).order_by("id").iterator(chunk_size=2000)
    log_end = _walk_events(newer, walk, audit_keys()) or state.event_id
    checkpoint_id, problems = _checkpoint_problems(_stored_hash, log_end)
    report = _report(walk, problems, checkpoint_id, state.event_id)
    if report.ok and walk.last_id != state.event_id and walk.last_id is not None:
        _verified_state_write(event_id=walk.last_id, hash=walk.prev_hash, checked=walk.checked)
    return report
