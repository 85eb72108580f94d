"""Conversation memory in Redis: the last N turns per conversation, expiring after a TTL; rebuilt from the
conversation's stored answers where Redis has lost it."""

from __future__ import annotations

import json
import logging
import re
import uuid
from dataclasses import asdict, dataclass
from datetime import timedelta
from typing import Any

from django.conf import settings
from redis.exceptions import RedisError

from athena.sealing import InvalidToken, Purpose, seal_json, unseal_json
from athena.throttling import redis_client

logger = logging.getLogger(__name__)
# The opening of a question that goes on from the one before it ("and on IOS-XR?", "what about the timeout?"):
# a follow-up, whatever else the question names.
CONTINUATION = re.compile(
    r"^(and|what about|how about|also|then|same for|and on|and for|what if)\b", re.IGNORECASE
)
# Words that may point back at the previous turn ("how do I roll it back?", "and the second step?"), but in a
# question that says what it is about point inside it as often ("the process that holds the port", "does the
# daemon need a restart when I change it"). They, and shortness, make a question a follow-up only when it
# names nothing of its own that the previous turn did not (`_own_topic`).
REFERENCE = re.compile(
    r"\b(it|its|that|this|those|these|there)\b"
    r"|\bthe (first|second|third|fourth|fifth|last|next|previous) (step|one|option)\b",
    re.IGNORECASE,
)
# "is there a limit", "there's no lease file": "there" that points at nothing
EXISTENTIAL_THERE = re.compile(
    r"\b(is|are|was|were|isn't|aren't|wasn't|weren't)\s+there\b|\bthere(\s+(is|are|was|were)\b|['’]s\b)",
    re.IGNORECASE,
)
SHORT_WORDS = 4  # a question of at most this many words may be an ellipsis ("default port?")
ORDINALS = {"first": 1, "second": 2, "third": 3, "fourth": 4, "fifth": 5}


@dataclass(frozen=True)
class Turn:
    question: str
    rewritten: str
    answer: str
    template: str
    chunk_ids: list[int]

    @classmethod
    def of(cls, question: str, rewritten: str, template: str, response: dict[str, Any]) -> Turn:
        """The turn an answer makes: `response` is its body (answer text, citations); `rewritten` the question
        as answered, empty when it was the question itself."""
        return cls(
            question=question,
            rewritten=rewritten or question,
            answer=str(response.get("answer", ""))[:1000],
            template=template,
            chunk_ids=[c["chunk_id"] for c in response.get("citations", []) if "chunk_id" in c],
        )


def _key(conversation_id: str) -> str:
    return f"athena:memory:{conversation_id}"


def _stored(turn: Turn) -> str:
    # sealed (athena.sealing): a turn holds a question and an answer quoting passages, and Redis keeps what it
    # holds in its append-only file
    return seal_json(asdict(turn), purpose=Purpose.MEMORY)


def _opened(item: bytes) -> dict[str, Any] | None:
    """A stored turn's fields; None for one that no key opens any more (SECRET_KEY changed twice)."""
    if item.startswith(b"{"):  # stored in plain JSON by an earlier release, within the memory's TTL
        return dict(json.loads(item))
    try:
        return dict(unseal_json(item.decode("ascii"), purpose=Purpose.MEMORY))
    except (InvalidToken, UnicodeDecodeError):
        return None


def memory_load(conversation_id: str) -> list[Turn]:
    """The conversation's last turns, oldest first. Redis holds them; where it holds none (a Redis restarted
    without persistence, flushed, or unreachable) they are rebuilt from the conversation's stored answers, as
    long as the last of those is younger than the memory's TTL: a follow-up keeps its context."""
    try:
        raw = redis_client().lrange(_key(conversation_id), 0, -1)
    except Exception:  # memory is a convenience: a Redis hiccup must not fail the question
        return memory_stored(conversation_id)
    if not raw:
        return memory_stored(conversation_id)
    opened = [fields for fields in map(_opened, raw) if fields is not None]
    if len(opened) < len(raw):
        # said, not raised: the follow-up is answered without those turns' context
        logger.warning(
            "conversation memory (%s): %d of %d turns open under no secret key (ATHENA_SECRET_KEY changed without "
            "the old one in ATHENA_SECRET_KEY_FALLBACKS) and are left out",
            conversation_id,
            len(raw) - len(opened),
            len(raw),
        )
    return [Turn(**fields) for fields in opened]


def memory_stored(conversation_id: str) -> list[Turn]:
    """The turns memory would hold, read from the conversation's stored answers: the last ATHENA_MEMORY_TURNS,
    oldest first, or none when the last is older than ATHENA_MEMORY_TTL_SECONDS (Redis's key would have
    expired; each turn renews it) or the conversation was deleted. A database error is logged, not raised."""
    from django.db import Error as DatabaseError  # InterfaceError too (a connection closed under it)
    from django.utils import timezone

    from agents.models import Answer

    try:
        uuid.UUID(conversation_id)
    except ValueError:
        return []
    try:
        rows = list(
            Answer.objects.filter(conversation_id=conversation_id, conversation__deleted=False)
            # stored in order under the conversation's row lock (agents.services.ask): the key orders them,
            # where the hosts' clocks that stamped created_at may disagree
            .order_by("-pk")
            .only("question", "rewritten", "template", "response", "created_at")[
                : settings.ATHENA_MEMORY_TURNS
            ]
        )
    except DatabaseError as exc:
        logger.warning("conversation memory not rebuilt (%s): %s", conversation_id, type(exc).__name__)
        return []
    if not rows or timezone.now() - rows[0].created_at > timedelta(
        seconds=settings.ATHENA_MEMORY_TTL_SECONDS
    ):
        return []
    return [Turn.of(row.question, row.rewritten, row.template, row.response) for row in reversed(rows)]


def memory_append(conversation_id: str, turn: Turn) -> None:
    """Remember `turn`. An unreachable Redis is logged, not raised: the answer, stored and audited in the
    transaction that calls this (agents.services.ask: memory_forget takes the turn back if that fails), still
    goes out; only the next follow-up loses its context."""
    key = _key(conversation_id)
    try:
        pipe = redis_client().pipeline()
        pipe.rpush(key, _stored(turn))
        pipe.ltrim(key, -settings.ATHENA_MEMORY_TURNS, -1)
        pipe.expire(key, settings.ATHENA_MEMORY_TTL_SECONDS)
        pipe.execute()
    except RedisError as exc:
        logger.warning("conversation memory not saved (%s): %s", conversation_id, type(exc).__name__)


def memory_forget(conversation_id: str, turn: Turn) -> None:
    """Take back a turn that memory_append added for an answer whose storing then failed: memory holds only
    answers the conversation's history has. Logged, not raised, as memory_append."""
    key, wanted = _key(conversation_id), asdict(turn)
    try:
        client = redis_client()
        # a sealed turn differs from any other sealing of it (each token has its own IV): found by its fields
        for item in reversed(client.lrange(key, 0, -1)):
            if _opened(item) == wanted:
                client.lrem(key, -1, item)
                break
    except RedisError as exc:
        logger.warning("conversation memory not taken back (%s): %s", conversation_id, type(exc).__name__)


def memory_drop(conversation_id: str) -> None:
    """Forget a conversation's turns (its questions and answers): a deleted conversation is never continued,
    and its memory would otherwise stay in Redis until the TTL. Logged, not raised, as memory_append."""
    try:
        redis_client().delete(_key(conversation_id))
    except RedisError as exc:
        logger.warning("conversation memory not dropped (%s): %s", conversation_id, type(exc).__name__)


def rewrite_follow_up(
    question: str, history: list[Turn], *, max_chars: int = 1000
) -> tuple[str, dict[str, Any]]:
    """Resolve a follow-up against the previous turn. Returns (rewritten question, decision details).

    The rewritten question is at most `max_chars` long (the input limit) and is scanned for prompt injection
    as a whole; a combination that would be blocked is not made (the question stands alone)."""
    if not history:
        return question, {"follow_up": False}
    previous = history[-1]
    cue = follow_up_cue(question)
    if cue is None:
        return question, {"follow_up": False}
    own = _own_topic(question, previous) if cue != "continuation" else []
    if own and _asks_of_it_elsewhere(question, own):
        own = []
    if own:
        # a question about something else, however short, is asked as it stands
        return question, {"follow_up": False, "own_topic": own}
    ordinal = re.search(r"\b(first|second|third|fourth|fifth)\b (step|one|option)", question, re.IGNORECASE)
    details: dict[str, Any] = {"follow_up": True, "cue": cue, "previous": previous.rewritten}
    if ordinal and previous.template == "procedure_sop":
        details["step"] = ORDINALS[ordinal.group(1).lower()]
    rewritten = _bounded_join(previous.rewritten, question, limit=max_chars)
    # each turn passed the input guard alone; an instruction split across turns must not pass combined
    from screening.injection import detect_injection

    combined = detect_injection(rewritten)
    if combined.flagged:
        return question, {
            "follow_up": False,
            "combination_refused": "injection",
            "matches": list(combined.matches),
        }
    return rewritten, details


def follow_up_cue(question: str) -> str | None:
    """What may make `question` a follow-up: "continuation" (it goes on from the previous question: a follow-up
    whatever it names), "reference" (a word that may point back) or "short"; None when nothing does.

    A reference word or shortness alone is a weak cue: at 3 a.m. an engineer asks "unbound cache size?" right
    after a question about the firewall, and "is there a limit on X?" or "the command that prints Y" point
    at nothing earlier. Joined to the previous question, such a question would be searched with the other
    topic's words and answered from its documents: `rewrite_follow_up` joins it only when it names no topic
    of its own (`_own_topic`)."""
    if CONTINUATION.search(question):
        return "continuation"
    if _refers_back(question):
        return "reference"
    if len(question.split()) <= SHORT_WORDS:
        return "short"
    return None


def _refers_back(question: str) -> bool:
    """A word that may refer to something earlier, other than an existential "there"."""
    return bool(REFERENCE.search(EXISTENTIAL_THERE.sub(" ", question)))


def _own_topic(question: str, previous: Turn) -> list[str]:
    """The terms by which `question` names a topic the previous turn (its question as answered and its answer)
    does not: identifiers and words that are not everyday English (product, tool and option names: "unbound",
    "conntrack", "max_wal_size"; agents.steps.retrieve.is_everyday), other than chat words, numbers and
    words of one or two letters. Empty for a question in everyday words ("how do I roll it back?") or one
    that names only what the previous turn named."""
    from agents.steps.retrieve import INFORMAL, everyday_terms
    from knowledge.text import STOPWORDS, analyze

    # a sentence's first word is capitalised as a matter of course when it is a question word or a word of
    # grammar ("Is", "Which", "How"), not when it names something ("Apache log location?")
    plain = re.sub(
        r"(^|[.?!]\s+)([A-Z][a-z]+\b)",
        lambda m: m.group(1) + (m.group(2).lower() if m.group(2).lower() in STOPWORDS else m.group(2)),
        question.strip(),
    )
    everyday = everyday_terms(plain)
    earlier = f"{previous.question} {previous.rewritten} {previous.answer}"
    # an identifier's parts too: "lb-02" is named by an earlier "lb-01/lb-02", "IOS-XE" by "IOS XE"
    known = set(analyze(earlier)) | set(analyze(_IDENTIFIER_SEPARATORS.sub(" ", earlier)))
    own = []
    for term in dict.fromkeys(analyze(question)):
        word = term.removeprefix("=")
        if term in known or term in everyday or term in INFORMAL or word.isdigit():
            continue
        if not term.startswith("=") and len(word) <= 2:
            continue
        if term.startswith("=") and set(analyze(_IDENTIFIER_SEPARATORS.sub(" ", word))) <= known:
            continue
        own.append(term)
    return own


_IDENTIFIER_SEPARATORS = re.compile(r"[-_/.,:=]+")
# "it" or "they" as what the question is about: the subject after an auxiliary ("is it", "does it") or the
# object at the end or before a place ("restart it", "restart it on lb-03")
_IT_ASKED_OF = re.compile(
    r"\b(?:is|was|does|do|did|can|could|will|would|should)\s+(?:it|they)\b"
    r"|\b(?:it|them)\s+(?:on|in|for|with|at|under|from|across)\b|\b(?:it|them)\W*$",
    re.IGNORECASE,
)
_PLACE = re.compile(r"\b(?:on|in|for|with|at|under|from|across)\s+", re.IGNORECASE)


def _asks_of_it_elsewhere(question: str, own: list[str]) -> bool:
    """ "Is it the same on Ubuntu?", "does it work on IOS-XR?", "how do I restart it on lb-03?": the question
    asks about the previous turn's subject ("it") in another place, and names nothing of its own but that
    place (its terms all in the phrase after the last on/in/for/with ...). "is it possible to run chrony on a
    VM?" names chrony outside it and stands alone."""
    from knowledge.text import analyze

    places = list(_PLACE.finditer(question))
    if not places or not _IT_ASKED_OF.search(question):
        return False
    return set(own) <= set(analyze(question[places[-1].end() :]))


def _bounded_join(context: str, question: str, *, limit: int) -> str:
    """`context question`, at most `limit` characters: the question whole, the context cut from the left at a
    word boundary (the most recent words matter most), so follow-ups cannot grow past the input limit."""
    room = limit - len(question) - 1
    if room <= 0:
        return question[:limit]
    if len(context) > room:
        context = context[len(context) - room :]
        context = context.split(" ", 1)[1] if " " in context else ""
    return f"{context} {question}".strip()
