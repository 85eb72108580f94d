"""Per-user question throttle and enumeration detection, both kept in Redis.

* `ask_throttle_hit(user)` counts a question in a fixed one-hour window (key per user and window) and raises
  `RateLimited` (HTTP 429) past `settings.ATHENA_QUESTIONS_PER_HOUR`, recording a "throttled" audit event.
* `empty_result_record(user, question)`, `abstention_record(user, question, ...)` and
  `document_probe_record(user, document_id)` watch for patterns that map out the corpus: many distinct
  questions that retrieve nothing or end abstained, or a burst of requests for document ids the caller
  cannot see. Either blocks the user for a while, records an "enumeration_alert"
  audit event and mails the admins (once per block).

If Redis is unreachable the limiter fails open (logged): it protects the service, it is not an ACL, and
ACLs are enforced in SQL whatever happens here.
"""

from __future__ import annotations

import hashlib
import logging
from functools import lru_cache
from typing import Any

from django.conf import settings
from django.core.mail import mail_admins
from django.dispatch import Signal
from rest_framework import status

from athena.errors import ApplicationError

logger = logging.getLogger(__name__)

WINDOW_SECONDS = 3600
# Enumeration thresholds: a person rephrasing gets a few empty results; a script sweeping the vocabulary
# gets dozens within minutes.
EMPTY_WINDOW_SECONDS = 300
EMPTY_DISTINCT_LIMIT = 20
PROBE_WINDOW_SECONDS = 60
PROBE_DISTINCT_LIMIT = 15
BLOCK_SECONDS = 900


class RateLimited(ApplicationError):
    """429; `retry_after` seconds, when known, is sent as the Retry-After header (athena.errors)."""

    code = "throttled"
    http_status = status.HTTP_429_TOO_MANY_REQUESTS


@lru_cache(maxsize=4)
def _client(url: str) -> Any:
    import redis

    return redis.Redis.from_url(url, socket_connect_timeout=1, socket_timeout=1)


def redis_client() -> Any:
    return _client(settings.REDIS_URL)


def redis_now(client: Any) -> float:
    """The time on the Redis server, in seconds since the epoch: the one clock that the windows kept in Redis
    (rates, enumeration, audit aggregation, realtime heartbeats) are measured on. The web processes and workers
    sharing them run on hosts whose clocks may disagree: a host two minutes ahead dropped from a 60 s window
    every entry the others had just added."""
    seconds, microseconds = client.time()
    return seconds + microseconds / 1_000_000


def key_prefix() -> str:
    # The database name keeps a test run's counters apart from the development server sharing the Redis.
    return f"athena:{settings.DATABASES['default']['NAME']}:rl"


def _user_key(kind: str, user: Any) -> str:
    return f"{key_prefix()}:{kind}:{user.pk}"


# Sent for each throttling or enumeration event (keyword arguments: kind, actor, subject, payload, verdict).
# The audit app records it, aggregated (audit.aggregation.audit_aggregated), from its AppConfig.ready, as it
# records sign-ins from django.contrib.auth's signals: the core layer does not import the audit layer.
security_event = Signal()


def _audit(kind: str, user: Any, payload: dict[str, Any], verdict: str) -> None:
    security_event.send(
        sender=None, kind=kind, actor=user, subject=str(user.pk), payload=payload, verdict=verdict
    )


# --- sign-in throttling ------------------------------------------------------------------------------------
LOGIN_WINDOW_SECONDS = 900


def _login_keys(username: str, address: str) -> tuple[str, str]:
    name = hashlib.sha256(username.strip().lower().encode("utf-8")).hexdigest()[:32]
    return f"{key_prefix()}:loginfail:user:{name}", f"{key_prefix()}:loginfail:addr:{address}"


# Checks both counters and counts the attempt in them in one step: `blocked` when either had reached its limit
# before this attempt (it is counted all the same, as a refused attempt always was)
_LOGIN_ATTEMPT_SCRIPT = """
local blocked = 0
for i = 1, 2 do
  if tonumber(redis.call('GET', KEYS[i]) or '0') >= tonumber(ARGV[i]) then blocked = 1 end
end
for i = 1, 2 do
  redis.call('INCR', KEYS[i])
  redis.call('EXPIRE', KEYS[i], ARGV[3])
end
return blocked
"""


def login_attempt_count(username: str, address: str) -> bool:
    """Count one sign-in attempt for the login name and the client address (15-minute windows), before its
    password is checked; returns whether the password may be checked (False: either had reached its failure
    limit before this attempt). Checked and counted in one step: checking first and counting only once the
    password had failed let every attempt of a burst sent at once find the counters as they were before it,
    and check its password. A successful attempt takes its count back (login_attempt_succeeded)."""
    limits = (settings.ATHENA_LOGIN_FAILURES_PER_NAME, settings.ATHENA_LOGIN_FAILURES_PER_ADDRESS)
    try:
        blocked = redis_client().eval(
            _LOGIN_ATTEMPT_SCRIPT, 2, *_login_keys(username, address), *limits, LOGIN_WINDOW_SECONDS
        )
    except Exception:
        logger.warning("login throttle: redis unavailable, attempt not counted", exc_info=True)
        return True
    return not int(blocked)


def login_attempt_succeeded(username: str, address: str) -> None:
    """The attempt counted by login_attempt_count signed in: the name's failures are forgotten (as
    login_success_clear does) and the address's count of this attempt is taken back."""
    name_key, address_key = _login_keys(username, address)
    try:
        with redis_client().pipeline() as pipe:
            pipe.delete(name_key)
            pipe.decr(address_key)
            pipe.execute()
    except Exception:
        logger.warning("login throttle: redis unavailable, attempt not taken back", exc_info=True)


def login_counted_over_limit(username: str, address: str) -> bool:
    """Whether the attempt just counted by login_attempt_count came when the name or the address was over its
    limit already (it was refused without a password check)."""
    limits = (settings.ATHENA_LOGIN_FAILURES_PER_NAME, settings.ATHENA_LOGIN_FAILURES_PER_ADDRESS)
    try:
        counts = [int(v or 0) for v in redis_client().mget(_login_keys(username, address))]
    except Exception:
        logger.warning("login throttle: redis unavailable, check skipped", exc_info=True)
        return False
    return any(count > limit for count, limit in zip(counts, limits, strict=True))


def login_blocked_seconds(username: str, address: str) -> int:
    """Seconds until sign-in for this login name and address is allowed again: 0 when neither has had too
    many recent failures. While blocked the password is not even checked (so guessing stops being useful)."""
    keys = _login_keys(username, address)
    limits = (settings.ATHENA_LOGIN_FAILURES_PER_NAME, settings.ATHENA_LOGIN_FAILURES_PER_ADDRESS)
    try:
        client = redis_client()
        counts = [int(v or 0) for v in client.mget(keys)]
        over = [key for key, count, limit in zip(keys, counts, limits, strict=True) if count >= limit]
        return max((max(int(client.ttl(key)), 1) for key in over), default=0)
    except Exception:
        logger.warning("login throttle: redis unavailable, check skipped", exc_info=True)
        return 0


def login_blocked(username: str, address: str) -> bool:
    return login_blocked_seconds(username, address) > 0


def login_success_clear(username: str, address: str) -> None:
    try:
        redis_client().delete(_login_keys(username, address)[0])
    except Exception:
        logger.warning("login throttle: redis unavailable, counter not cleared", exc_info=True)


def user_blocked_seconds(user: Any) -> int:
    """Seconds left on an enumeration block (0 when not blocked)."""
    try:
        ttl = redis_client().ttl(_user_key("block", user))
    except Exception:  # fail open, see module docstring
        logger.warning("throttle: redis unavailable, block check skipped", exc_info=True)
        return 0
    return max(int(ttl or 0), 0)


def ensure_not_blocked(user: Any, *, endpoint: str) -> None:
    left = user_blocked_seconds(user)
    if left:
        _audit(
            "throttled",
            user,
            {"endpoint": endpoint, "reason": "enumeration block", "retry_after": left},
            "blocked",
        )
        raise RateLimited(
            f"requests are paused for {left} s after an unusual access pattern; the admins were notified",
            details={"retry_after": left},
            retry_after=left,
        )


def ask_throttle_hit(user: Any) -> int:
    """Count one question for `user`; return how many remain this hour or raise RateLimited."""
    ensure_not_blocked(user, endpoint="ask")
    limit = settings.ATHENA_QUESTIONS_PER_HOUR
    try:
        client = redis_client()
        now = int(redis_now(client))
        window = now // WINDOW_SECONDS
        key = f"{_user_key('ask', user)}:{window}"
        with client.pipeline() as pipe:
            pipe.incr(key)
            pipe.expire(key, WINDOW_SECONDS + 60)
            count = int(pipe.execute()[0])
    except Exception:
        logger.warning("throttle: redis unavailable, question not counted", exc_info=True)
        return limit
    if count > limit:
        retry_after = (window + 1) * WINDOW_SECONDS - now
        _audit(
            "throttled",
            user,
            {"endpoint": "ask", "limit": limit, "count": count, "retry_after": retry_after},
            "throttled",
        )
        raise RateLimited(
            f"question limit reached ({limit} per hour); try again in {retry_after // 60 + 1} min",
            details={"retry_after": retry_after, "limit": limit},
            retry_after=retry_after,
        )
    return limit - count


def _enumeration_alert(user: Any, *, pattern: str, evidence: dict[str, Any]) -> bool:
    """Block the user and alert once per block period; returns True when a new alert was raised."""
    try:
        fresh = redis_client().set(_user_key("block", user), pattern, nx=True, ex=BLOCK_SECONDS)
    except Exception:
        logger.warning("throttle: redis unavailable, enumeration alert not stored", exc_info=True)
        fresh = True
    if not fresh:
        return False
    payload = {"pattern": pattern, "blocked_seconds": BLOCK_SECONDS, **evidence}
    _audit("enumeration_alert", user, payload, "blocked")
    mail_admins(
        f"Athena: possible enumeration by {user.username}",
        f"User {user.username} (id {user.pk}) was blocked for {BLOCK_SECONDS} s: {pattern}.\n"
        f"Details: {payload}\nSee the audit log (kind enumeration_alert).",
        fail_silently=True,
    )
    return True


def _distinct_in_window(user: Any, kind: str, member: str, window: int, *, what: str) -> int | None:
    """Add `member` to the user's `kind` window; how many distinct members it holds (None: Redis is down)."""
    key = _user_key(kind, user)
    try:
        client = redis_client()
        now = redis_now(client)
        with client.pipeline() as pipe:
            pipe.zadd(key, {member: now})
            pipe.zremrangebyscore(key, 0, now - window)
            pipe.zcard(key)
            pipe.expire(key, window + 60)
            return int(pipe.execute()[2])
    except Exception:
        logger.warning("throttle: redis unavailable, %s not recorded", what, exc_info=True)
        return None


def _question_digest(question: str) -> str:
    """What the enumeration counters keep of a question to count distinct ones: a keyed hash (HMAC under a key
    derived from SECRET_KEY), so that whoever reads Redis cannot confirm a guessed question by hashing it (a
    plain SHA-256 could be)."""
    from django.utils.crypto import salted_hmac

    return salted_hmac("athena.throttling: question", " ".join(question.lower().split())).hexdigest()[:16]


def empty_result_record(user: Any, question: str) -> bool:
    """Note a question that retrieved nothing; True when it tipped the user into an enumeration alert."""
    digest = _question_digest(question)
    distinct = _distinct_in_window(user, "empty", digest, EMPTY_WINDOW_SECONDS, what="empty result")
    if distinct is None or distinct <= EMPTY_DISTINCT_LIMIT:
        return False
    return _enumeration_alert(
        user,
        pattern=f"more than {EMPTY_DISTINCT_LIMIT} distinct questions "
        f"retrieving nothing within {EMPTY_WINDOW_SECONDS} s",
        evidence={"distinct_empty_questions": distinct},
    )


def abstention_record(user: Any, question: str, *, unreadable_match: bool) -> bool:
    """Note a question that ended abstained; True when it tipped the user into an enumeration alert (more than
    ATHENA_ENUMERATION_ABSTENTIONS distinct ones within ATHENA_ENUMERATION_WINDOW_SECONDS).

    `unreadable_match`: the question named a term that only documents the user cannot read hold. Every
    abstention counts the same towards the block, matched or not: a block that came sooner for probes of
    restricted topics would itself tell the prober that such documents exist. The alert's audit event says how
    many of the window's questions matched (compliance staff read it, the user never does)."""
    digest = _question_digest(question)
    window = settings.ATHENA_ENUMERATION_WINDOW_SECONDS
    member = f"{digest}:{int(unreadable_match)}"
    distinct = _distinct_in_window(user, "abstained", member, window, what="abstention")
    limit = settings.ATHENA_ENUMERATION_ABSTENTIONS
    if distinct is None or distinct <= limit:
        return False
    try:
        members = redis_client().zrange(_user_key("abstained", user), 0, -1)
    except Exception:
        members = []
    matched = sum(1 for m in members if (m.decode() if isinstance(m, bytes) else str(m)).endswith(":1"))
    return _enumeration_alert(
        user,
        pattern=f"more than {limit} distinct questions abstained within {window} s",
        evidence={"distinct_abstained_questions": distinct, "matched_unreadable_documents": matched},
    )


def document_probe_record(user: Any, document_id: int) -> bool:
    """Note a request for a document id the user cannot see (or that does not exist)."""
    distinct = _distinct_in_window(user, "probe", str(document_id), PROBE_WINDOW_SECONDS, what="probe")
    if distinct is None or distinct <= PROBE_DISTINCT_LIMIT:
        return False
    return _enumeration_alert(
        user,
        pattern=f"more than {PROBE_DISTINCT_LIMIT} unknown document ids "
        f"requested within {PROBE_WINDOW_SECONDS} s",
        evidence={"distinct_missing_ids": distinct, "last_id": document_id},
    )


def user_counters_clear(user: Any) -> None:
    """Forget a user's counters and block (admin action, tests)."""
    client = redis_client()
    keys = [_user_key(kind, user) for kind in ("empty", "abstained", "probe", "block")]
    keys += list(client.scan_iter(match=f"{_user_key('ask', user)}:*"))
    keys += list(client.scan_iter(match=f"{_user_key('upload', user)}:*"))  # knowledge.uploads' hourly rate
    client.delete(*keys)
