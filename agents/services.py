"""The ask service: runs the pipeline (on the realtime Celery queue when configured), stores the answer,
updates memory and writes the audit event. Web processes call this without importing torch."""

from __future__ import annotations

import contextlib
import logging
import time
import uuid
from dataclasses import asdict
from typing import TYPE_CHECKING, Any

from django.conf import settings
from django.contrib.auth.models import User
from django.db import transaction
from django.db.models.functions import Now

from agents.models import Answer, Conversation, CurationItem
from athena.errors import ApplicationError, NotFound, TaskFailed, Unavailable, ValidationFailed
from athena.services import user_held
from athena.throttling import RateLimited
from athena.validators import text_problem

logger = logging.getLogger(__name__)

if TYPE_CHECKING:
    from retrieval.types import SearchConfig


class Blocked(ApplicationError):
    code = "blocked"


class TooManyInFlight(RateLimited):
    """The asker already has ATHENA_USER_MAX_IN_FLIGHT questions waiting (429; Retry-After sent as a header)."""

    code = "too_many_in_flight"

    def __init__(self, message: str, *, details: Any, retry_after: int) -> None:
        super().__init__(message, details=details)
        self.retry_after = retry_after


def _filters(data: dict[str, Any] | None):  # type: ignore[no-untyped-def]
    from datetime import date

    from knowledge.models import AccessTier, DocType
    from knowledge.selectors import metadata_spellings
    from retrieval.types import Filters

    if not data:
        return Filters()
    allowed = {"doc_types", "departments", "vendors", "tiers", "updated_after", "updated_before"}
    unknown = set(data) - allowed
    if unknown:
        raise ValidationFailed(f"unknown filter(s) {sorted(unknown)}; valid: {sorted(allowed)}")
    values: dict[str, Any] = {}
    for key in ("doc_types", "departments", "vendors", "tiers"):
        raw = data.get(key)
        if raw is None:
            raw = []
        elif isinstance(raw, str):
            raw = [raw]
        # false, 0, {} or "" read as "no filter" and searched everything; a blank name matched nothing
        if not isinstance(raw, list) or not all(isinstance(v, str) and v.strip() for v in raw):
            raise ValidationFailed(f"filter {key} must be a list of strings (none of them blank)")
        for value in raw:
            problem = text_problem(value)
            if problem:  # the database refuses it, with a message that names no filter
                raise ValidationFailed(f"filter {key}: {value!r} {problem}")
        values[key] = tuple(raw)
    # names an admin typed are matched as stored, whatever their case ("NOC" finds documents of "noc"); a name
    # that no document has stays as given, so it retrieves nothing (refusing it would tell the asker which
    # departments exist in documents they may not read)
    for key, column in (("departments", "department"), ("vendors", "vendor")):
        if values[key]:
            values[key] = metadata_spellings(column, values[key])
    # a value no document can have is a typo: refused, so it never reads as "the documents don't say"
    for key, choices in (("doc_types", DocType.values), ("tiers", AccessTier.values)):
        wrong = [v for v in values[key] if v not in choices]
        if wrong:
            raise ValidationFailed(f"filter {key}: unknown value(s) {wrong}; valid: {sorted(choices)}")
    for key in ("updated_after", "updated_before"):
        raw = data.get(key)
        if raw is None or raw == "":
            continue
        try:
            if not isinstance(raw, str):  # false was no filter, 20260101 a date
                raise ValueError(raw)
            values[key] = date.fromisoformat(raw)
        except ValueError:
            raise ValidationFailed(f"filter {key} must be a date YYYY-MM-DD") from None
    after, before = values.get("updated_after"), values.get("updated_before")
    if after and before and after > before:
        raise ValidationFailed("filter updated_after is after updated_before")
    return Filters(**values)


def filters_logged(filters: Any) -> dict[str, Any]:
    """The filters a question was searched under, as its audit event keeps them: each one given, the department
    and vendor names as matched (their stored spellings), dates as YYYY-MM-DD; {} when none."""
    logged: dict[str, Any] = {}
    for key, value in asdict(filters).items():
        if isinstance(value, tuple):
            if value:
                logged[key] = list(value)
        elif value is not None:
            logged[key] = value.isoformat()  # a date
    return logged


def answer_compute(
    *,
    user_id: int,
    question: str,
    conversation_id: str,
    filters: dict[str, Any] | None,
    config: SearchConfig | None = None,
) -> dict:
    """The model-heavy part (runs in the realtime worker or in-process). `config`: the retrieval settings
    (`SearchConfig()` when None)."""
    from agents.memory import memory_load
    from agents.pipeline import run_pipeline
    from athena.principals import Principal

    user = User.objects.get(pk=user_id)
    principal = Principal.from_user(user)
    history = memory_load(conversation_id)
    result = run_pipeline(
        question=question, principal=principal, history=history, filters=_filters(filters), config=config
    )
    started = time.perf_counter()
    answer = quoted_text_guard(asdict(result))
    # the groups the answer was computed for: the audit event's ACL snapshot (membership read again once the
    # answer is stored may have changed while the pipeline ran)
    answer["groups"] = sorted(principal.group_names)
    # after the pipeline, so not in its `total`; reported because it can cost more than the pipeline itself
    answer["timings_ms"]["quoted_text_guard"] = round((time.perf_counter() - started) * 1000, 1)
    return answer


def quoted_text_guard(result: dict[str, Any]) -> dict[str, Any]:
    """The output guard on everything of an answer that quotes the knowledge base besides the answer text
    itself (which the pipeline guards): `passages` and each citation's `quote` get PII masked and confidential
    markings removed. Runs where the answer is computed (the realtime worker: Presidio loads spaCy/torch,
    which web processes never import); what is stored, audited and returned is the guarded text."""
    from screening.markings import guard_quoted_text

    guarded: dict[str, str] = {}
    masked: list[str] = []
    marked = False

    def guard(text: str) -> str:
        nonlocal marked
        if text not in guarded:
            clean, kinds, removed = guard_quoted_text(text)
            guarded[text] = clean
            masked.extend(kind for kind in kinds if kind not in masked)
            marked = marked or removed
        return guarded[text]

    result["passages"] = [guard(text) for text in result.get("passages") or []]
    result["citations"] = [
        {**citation, "quote": guard(citation["quote"])} if citation.get("quote") else citation
        for citation in result.get("citations") or []
    ]
    if masked or marked:
        guard_info = dict(result.get("guard") or {})
        guard_info["quoted_text"] = {"masked": masked, "confidential_marking": marked}
        result["guard"] = guard_info
    return result


def passage_text_guard(text: str) -> str:
    """The citation viewer's text through the output guard, on the realtime worker (where Presidio stays
    loaded; web processes never import torch) or in-process when ATHENA_REALTIME_VIA_CELERY is off. When no
    worker answers in time the caller gets `unavailable` rather than unguarded text."""
    from screening.markings import guard_quoted_text

    if not settings.ATHENA_REALTIME_VIA_CELERY:
        return guard_quoted_text(text)[0]
    from celery.exceptions import TimeoutError as ResultTimeout
    from kombu.exceptions import OperationalError
    from redis.exceptions import RedisError

    from agents.realtime import release_mismatch, retry_after_seconds
    from agents.tasks import passage_guard_task
    from athena.sealing import KeyMismatch, Purpose, seal, unseal

    pending = None
    try:
        # sealed both ways: the broker message and the stored result hold the passage only as a token
        pending = passage_guard_task.apply_async(
            args=[seal(text, purpose=Purpose.PASSAGE)],
            kwargs={"sealed": True},
            queue=settings.ATHENA_REALTIME_QUEUE,
        )
        guarded = unseal(
            str(pending.get(timeout=settings.ATHENA_ANSWER_TIMEOUT_SECONDS)), purpose=Purpose.PASSAGE
        )
    except (ResultTimeout, OperationalError):
        raise Unavailable(
            "the passage could not be screened: the answering service did not respond"
        ) from None
    except KeyMismatch as exc:  # one side could not open what the other sealed (athena.sealing)
        logger.error("a passage to screen: the realtime worker holds another secret key: %s", exc)
        raise Unavailable(
            "the passage could not be screened: the answering worker holds another secret key than this "
            "web server; retry shortly",
            retry_after=retry_after_seconds(),
        ) from None
    except Exception as exc:
        if not release_mismatch(exc):
            raise
        # a worker of an earlier release, which does not know `sealed` (deploy/README.md: workers go first)
        logger.error("a passage to screen: the realtime worker runs another release: %s", exc)
        raise Unavailable(
            "the passage could not be screened: the answering worker runs another release than this web "
            "server; retry shortly",
            retry_after=retry_after_seconds(),
        ) from None
    finally:
        # read once, screened or failed (a TaskFailed, raised on to the caller): it does not stay in the result
        # backend for CELERY_RESULT_EXPIRES
        if pending is not None:
            with contextlib.suppress(RedisError):
                pending.forget()
    return guarded


def _withheld_question_record(
    user: Any,
    conversation_id: str | None,
    *,
    question_id: str,
    filters: dict[str, Any],
    verdict: str,
    reason: str,
    why: str,
) -> None:
    """Audit a question that got no answer (`unavailable`: no worker answered; `error`: the pipeline raised).
    Its text is not logged: it has not been screened for personal data."""
    from audit.services import audit_record

    audit_record(
        kind="question",
        actor=user,
        verdict=verdict,
        documents=[],
        payload={
            "question": f"[withheld: not screened, {why}]",
            "question_id": question_id,
            "groups": sorted(user.groups.values_list("name", flat=True)),
            "conversation": conversation_id,
            "filters": filters,
            "error": reason,
        },
    )


def _error_record(
    user: Any,
    conversation_id: str | None,
    question_id: str,
    filters: dict[str, Any],
    exc: Exception,
    why: str,
) -> None:
    _withheld_question_record(
        user,
        conversation_id,
        question_id=question_id,
        filters=filters,
        verdict="error",
        # a worker's failure arrives as TaskFailed (athena.errors): what it was is its `kind`
        reason=exc.kind if isinstance(exc, TaskFailed) else type(exc).__name__,
        why=why,
    )


def _unavailable_record(
    user: Any, conversation_id: str | None, *, question_id: str, filters: dict[str, Any], reason: str
) -> None:
    _withheld_question_record(
        user,
        conversation_id,
        question_id=question_id,
        filters=filters,
        verdict="unavailable",
        reason=reason,
        why="the answering service did not answer",
    )


def _admit(user: Any, question_id: str, logged_filters: dict[str, Any]) -> None:
    """Back-pressure: refuse at once (503 + Retry-After) a question that would wait in the realtime queue
    longer than ATHENA_MAX_QUEUE_WAIT_SECONDS, instead of holding the caller's connection; and (429 +
    Retry-After) a question whose asker already has ATHENA_USER_MAX_IN_FLIGHT questions waiting, so that one
    heavy user's burst cannot fill the queue in front of everyone else."""
    import math

    from redis.exceptions import RedisError

    from agents import realtime

    bound = settings.ATHENA_MAX_QUEUE_WAIT_SECONDS
    cap = settings.ATHENA_USER_MAX_IN_FLIGHT
    try:
        # added before counting, in one script: a burst of questions arriving together each see the ones that
        # came before them (checking first and adding later let a burst of 32 all in)
        admission = realtime.admission_try(question_id=question_id, user_id=user.pk, user_cap=cap)
    except RedisError:
        _unavailable_record(user, None, question_id=question_id, filters=logged_filters, reason="broker_down")
        raise Unavailable(
            "the message broker is not reachable; retry in a few seconds",
            retry_after=realtime.retry_after_seconds(),
        ) from None
    capacity = admission.capacity
    if not admission.admitted:
        try:
            position = realtime.queue_position(user_id=user.pk)
        except RedisError:
            position = realtime.QueuePosition(
                in_flight=admission.in_flight, ahead=None, expected_wait_seconds=None
            )
        # the oldest of the user's questions is answered after its wait plus one answer's time
        retry_after = max(1, math.ceil((position.expected_wait_seconds or 0.0) + capacity.service_seconds))
        _withheld_question_record(
            user,
            None,
            question_id=question_id,
            filters=logged_filters,
            verdict="throttled",
            reason="too_many_in_flight",
            why="the asker had too many questions waiting",
        )
        raise TooManyInFlight(
            f"you already have {admission.in_flight} questions waiting for an answer, the most allowed; "
            f"ask again when one is answered (about {retry_after} s)",
            details={
                "retry_after": retry_after,
                "in_flight": admission.in_flight,
                "limit": cap,
                "ahead": position.ahead,
                "expected_wait_seconds": position.expected_wait_seconds,
            },
            retry_after=retry_after,
        )
    # the bound is on the wait that the questions ahead make (Capacity.queue_wait_seconds); the reply says the
    # whole expected wait
    if bound and capacity.processes and capacity.queue_wait_seconds > bound:
        realtime.pending_remove(question_id, user.pk)
        _unavailable_record(user, None, question_id=question_id, filters=logged_filters, reason="overloaded")
        raise Unavailable(
            f"too many questions are waiting (about {capacity.expected_wait_seconds:.0f} s); retry shortly",
            code="overloaded",
            details={
                "ahead": max(0, capacity.pending - 1),
                "expected_wait_seconds": round(capacity.expected_wait_seconds, 1),
            },
            retry_after=realtime.retry_after_seconds(capacity),
        )


def _answer_on_worker(
    user: Any,
    question: str,
    conversation_id: str,
    filters: Any,
    question_id: str,
    logged_filters: dict[str, Any],
) -> dict:
    """Run the pipeline on the realtime queue under the task id `question_id` (the idempotency key). A worker
    that dies mid-answer gets the question redelivered (agents/realtime.py); when no worker is alive for
    ATHENA_NO_WORKER_GRACE_SECONDS, or none answers within ATHENA_ANSWER_TIMEOUT_SECONDS, or the broker is
    down, the attempt is audited and the caller gets `unavailable` with a Retry-After hint."""
    from kombu.exceptions import OperationalError
    from redis.exceptions import RedisError

    from agents import realtime
    from agents.tasks import answer_task
    from athena.sealing import KeyMismatch, Purpose, seal, unseal_json

    queue, timeout = settings.ATHENA_REALTIME_QUEUE, settings.ATHENA_ANSWER_TIMEOUT_SECONDS
    # sealed: the input guard screens the question on the worker (Presidio needs torch, which web processes
    # never import), so until then the broker and a redelivered copy hold only ciphertext
    args = [user.pk, seal(question, purpose=Purpose.QUESTION), conversation_id, filters]
    # and the answer comes back sealed (it quotes passages): a worker of an earlier release, which cannot seal
    # it, refuses the option as another release's (ReleaseMismatch: 503, never a server error)
    options = {"seal_answer": True}
    try:
        outcome = realtime.answer_wait(
            question_id=question_id,
            publish=lambda: answer_task.apply_async(
                args=args, kwargs=options, queue=queue, task_id=question_id
            ),
            timeout=timeout,
            no_worker_grace=settings.ATHENA_NO_WORKER_GRACE_SECONDS,
        )
    except (OperationalError, RedisError):
        outcome = realtime.WaitOutcome(None, "broker_down")
    if outcome.result is not None:
        try:
            return unseal_json(outcome.result, purpose=Purpose.ANSWER)
        except KeyMismatch as exc:  # the worker sealed it under a key this web process does not hold
            logger.error("question %s: the realtime worker holds another secret key: %s", question_id, exc)
            outcome = realtime.WaitOutcome(None, "key_mismatch", outcome.republished)
    realtime.abandon(question_id)
    _unavailable_record(
        user, conversation_id, question_id=question_id, filters=logged_filters, reason=outcome.reason
    )
    messages = {
        "no_worker": "no worker is consuming the '{queue}' queue (start one: `manage.py stack up`)",
        "timeout": "no worker on the '{queue}' queue answered within {timeout} s",
        "broker_down": "the message broker is not reachable",
        # a rolling upgrade under way in the wrong order (deploy/README.md): never a server error
        "release_mismatch": "the worker on the '{queue}' queue runs another release than this web server",
        # a key rotation rolled out in one step, or a host given another key (deploy/README.md): the worker's
        # log and this server's name it
        "key_mismatch": "the worker on the '{queue}' queue holds another secret key than this web server",
    }
    raise Unavailable(
        messages[outcome.reason].format(queue=queue, timeout=timeout) + "; retry shortly",
        retry_after=realtime.retry_after_seconds(),
    )


def _set_aside(conversation: Conversation) -> None:
    """A conversation that its first question created and that holds nothing (the question was refused, no
    worker answered it, or its pipeline failed) leaves the asker's list, where it would show as an empty
    "(untitled)" entry. The row stays, as a deleted conversation's does, so the question's audit event still
    names an existing conversation."""
    Conversation.objects.filter(pk=conversation.pk).update(deleted=True)


def _question_check(
    user: Any, question: Any, conversation_id: str | None, filters: dict[str, Any] | None
) -> tuple[dict[str, Any], Conversation | None]:
    """Refuse a question that cannot be asked (ValidationFailed, or NotFound for a conversation that is not the
    asker's); return its filters as logged and the conversation it continues (None: a new one)."""
    if not isinstance(question, str) or not question.strip():
        raise ValidationFailed("question must be a non-empty string")
    if len(question) > settings.ATHENA_MAX_QUESTION_CHARS:
        raise ValidationFailed(
            f"question is {len(question)} characters; the limit is {settings.ATHENA_MAX_QUESTION_CHARS}"
        )
    problem = text_problem(question)
    if problem:  # a command line's undecodable bytes arrive as lone surrogates, which the database refuses
        raise ValidationFailed(f"question {problem}")
    logged_filters = filters_logged(_filters(filters))  # validated before queueing
    if not conversation_id:
        return logged_filters, None
    try:
        conversation = Conversation.objects.get(pk=uuid.UUID(str(conversation_id)), user=user, deleted=False)
    except (ValueError, Conversation.DoesNotExist):
        raise NotFound("no such conversation") from None
    return logged_filters, conversation


def question_refusal_record(*, user: Any, reason: str) -> None:
    """Audit a question refused before it was answered because of what was sent (too long, a character that
    cannot be stored, a filter or conversation that is not valid): every question leaves an event (DESIGN.md
    section 7). Its text, never screened, is withheld; `reason` is the message the asker was given."""
    _withheld_question_record(
        user,
        None,
        question_id=str(uuid.uuid4()),
        filters={},
        verdict="invalid",
        reason=reason,
        why="refused as invalid",
    )


def ask(
    *,
    user: Any,
    question: str,
    conversation_id: str | None = None,
    filters: dict[str, Any] | None = None,
    enumeration_watch: bool = False,
    config: SearchConfig | None = None,
) -> dict[str, Any]:
    """Answer a question for `user`; returns the ask response body (DESIGN.md §8).

    `enumeration_watch`: count an abstained answer towards the user's enumeration alert
    (athena.throttling.abstention_record); the ask API sets it, an operator's `manage.py evaluate` does not.
    `config`: retrieval settings other than the defaults, for an operator's measurement (`manage.py evaluate
    --config`); answered in this process only, since the realtime worker always runs the defaults."""
    from agents.memory import Turn, memory_append, memory_forget
    from audit.services import audit_record

    if config is not None and settings.ATHENA_REALTIME_VIA_CELERY:
        raise ValueError("a retrieval config other than the default is answered in-process only")
    try:
        logged_filters, conversation = _question_check(user, question, conversation_id, filters)
    except (ValidationFailed, NotFound) as exc:
        question_refusal_record(user=user, reason=exc.message)  # a refused question is audited too
        raise
    # the question's idempotency key: its task id on the realtime queue (a redelivered copy runs under the same
    # id and is answered once) and the `question_id` of its audit event
    question_id = str(uuid.uuid4())
    if settings.ATHENA_REALTIME_VIA_CELERY:
        _admit(user, question_id, logged_filters)  # counts the question as waiting from here on
    try:
        # a new conversation only once admitted (a refused question leaves none behind), and untitled until the
        # input guard has screened the question (a refused one never names it)
        if conversation is None:
            with transaction.atomic():
                # an admin deleting the asker meanwhile: the question is refused, not a server error at commit
                user_held(user_id=user.pk)
                conversation = Conversation.objects.create(user=user, title="")
        if settings.ATHENA_REALTIME_VIA_CELERY:
            result = _answer_on_worker(
                user, question, str(conversation.pk), filters, question_id, logged_filters
            )
        else:
            result = answer_compute(
                user_id=user.pk,
                question=question,
                conversation_id=str(conversation.pk),
                filters=filters,
                config=config,
            )
    except Exception as exc:
        if not conversation_id and conversation is not None:
            _set_aside(conversation)
        if isinstance(exc, Unavailable):
            raise  # audited where it was detected
        # every question is audited, also one whose pipeline failed
        conversation_ref = str(conversation.pk) if conversation is not None else None
        _error_record(
            user, conversation_ref, question_id, logged_filters, exc, "the answering pipeline failed"
        )
        raise
    finally:
        if settings.ATHENA_REALTIME_VIA_CELERY:
            from agents.realtime import pending_remove

            pending_remove(question_id, user.pk)

    blocked = result["verdict"] == "blocked"
    guard = result.get("guard") or {}
    # a new turn moves the conversation to the top of its asker's list (update() skips auto_now); the time is the
    # database's: the asker's turns reach web hosts whose clocks may disagree, and one behind left it lower
    changes: dict[str, Any] = {"updated_at": Now()}
    if not conversation_id and not blocked:
        changes["title"] = question[:200]
    # a refused question is logged without its text when it carried PII
    logged_question = "[withheld: contained personal data]" if guard.get("code") == "pii" else question
    groups = result.get("groups")
    if groups is None:  # an answer from a worker of an earlier release: membership as it is now
        groups = sorted(user.groups.values_list("name", flat=True))
    # the audit event, the answer as stored, its curation item and the conversation's turn commit together:
    # an event never records an answer that history and curation lack, nor the reverse
    turn: Turn | None = None
    try:
        with transaction.atomic():
            # the UPDATE also holds the conversation until this commits: an admin's delete under way
            # (conversations_delete) is waited for, and then the conversation is missing as in any other
            # question to it; one that starts later waits and deletes this answer with it. Without the check the
            # answer was written beside the delete and failed at commit (a server error)
            if not Conversation.objects.filter(pk=conversation.pk).update(**changes):
                raise NotFound("no such conversation")
            event = audit_record(
                kind="question",
                actor=user,
                verdict=result["verdict"],
                documents=result["retrieved"],
                payload={
                    "question": logged_question,
                    "question_id": question_id,
                    "rewritten": result["rewritten"] if not blocked else "",
                    "groups": groups,
                    "conversation": str(conversation.pk),
                    "filters": logged_filters,
                    "retrieved_chunks": result["retrieved_chunks"],
                    "answer": result["answer"],
                    "citations": result["citations"],
                    "attribution_score": result["attribution_score"],
                    "guardrails": guard,
                    "template": result["template"],
                    "prompt": result.get("prompt"),
                    "trace": result["trace"],
                    "timings_ms": result["timings_ms"],
                },
            )
            answer_row = None
            if not blocked:
                answer_row = Answer.objects.create(
                    conversation=conversation,
                    user=user,
                    question=question,
                    rewritten=result["rewritten"] if result["rewritten"] != question else "",
                    abstained=result["abstained"],
                    template=result["template"],
                    audit_event_id=event.pk,
                    response={},
                )
                if result["verdict"] == "abstained":
                    CurationItem.objects.create(answer=answer_row, reason="abstained")
            body = {
                "answer": result["answer"],
                "abstained": result["abstained"],
                "template": result["template"],
                "verdict": result["verdict"],
                "citations": result["citations"],
                "retrieved": result["retrieved"],
                "attribution_score": result["attribution_score"],
                "conversation_id": str(conversation.pk),
                "answer_id": answer_row.pk if answer_row else None,
                "notes": result["notes"],
                "timings_ms": result["timings_ms"],
                "trace": result["trace"],
                "evidence": result["evidence"],
                "passages": result["passages"],
                "audit_event_id": event.pk,
            }
            if answer_row is not None:
                Answer.objects.filter(pk=answer_row.pk).update(response=body)
                # remembered while the UPDATE above holds the conversation: two questions answered at once in
                # one conversation are remembered in the order they are stored (after commit, the second could
                # be remembered first, and a follow-up read the older turn as the last)
                turn = Turn.of(question, result["rewritten"], result["template"], result)
                memory_append(str(conversation.pk), turn)
            if blocked:
                if not conversation_id:
                    _set_aside(conversation)
                audit_record(
                    kind="guardrail",
                    actor=user,
                    verdict=guard.get("code", "blocked"),
                    payload={
                        "code": guard.get("code"),
                        "details": guard.get("details", []),
                        "question_event": event.pk,
                    },
                )
    except Exception as exc:
        # nothing of it was kept: the attempt is audited as an error (where the database still answers)
        if turn is not None:
            memory_forget(str(conversation.pk), turn)
        if not conversation_id:
            _set_aside(conversation)
        _error_record(
            user, str(conversation.pk), question_id, logged_filters, exc, "the answer could not be stored"
        )
        raise
    if enumeration_watch and result["verdict"] == "abstained":
        from athena.throttling import abstention_record

        abstention_record(user, question, unreadable_match=bool(result.get("unreadable_terms")))
    if blocked:
        raise Blocked(result["answer"], details={"guard": guard.get("code"), "audit_event_id": event.pk})
    return body
