"""Writes around answers: feedback votes, the curation queue, conversation deletion."""

from __future__ import annotations

from typing import Any
from uuid import UUID

from django.db import transaction
from django.db.models import QuerySet
from django.utils import timezone

from agents.memory import memory_drop
from agents.models import Answer, Conversation, CurationItem, Feedback
from agents.selectors import answer_get_for_user, conversation_get
from athena.errors import Conflict, NotFound, ValidationFailed
from athena.principals import Principal

MAX_COMMENT_CHARS = 2000


def curation_enqueue(*, answer: Answer, reason: str) -> CurationItem:
    """Put an answer on the admins' curation queue once (a later reason does not duplicate it).

    Args:
        answer: the abstained or downvoted answer.
        reason: "abstained" or "downvoted".

    Returns:
        the (possibly pre-existing) curation item; a resolved item is reopened by a new downvote.
    """
    item, created = CurationItem.objects.get_or_create(answer=answer, defaults={"reason": reason})
    if not created and item.resolved and reason == "downvoted":
        item.resolved = False
        item.reason = reason
        item.save(update_fields=["resolved", "reason"])
    return item


@transaction.atomic
def feedback_submit(*, user: Any, answer_id: int, vote: int, comment: str | None = None) -> Feedback:
    """Record (or change) the user's vote on an answer they were given; downvotes go to curation.

    Args:
        user: the voter; must be the user the answer was given to.
        answer_id: Answer primary key.
        vote: +1 or -1.
        comment: optional free text (at most 2,000 characters); None keeps the comment of an earlier vote (a
            changed vote with no comment sent does not erase what curators were reading), "" clears it.

    Returns:
        the saved Feedback row.
    """
    from audit.services import audit_record

    if vote not in (Feedback.Vote.UP, Feedback.Vote.DOWN):
        raise ValidationFailed("vote must be 1 (up) or -1 (down)")
    if comment is not None and len(comment) > MAX_COMMENT_CHARS:
        raise ValidationFailed(f"comment too long (at most {MAX_COMMENT_CHARS} characters)")
    answer = answer_get_for_user(user=user, answer_id=answer_id)
    # the answer's row held until this commits: an admin's delete under way (answers_delete,
    # conversations_delete lock the rows first) is waited for and the answer is then missing; one that starts
    # later waits and removes this vote with it. Without it the vote was written beside the delete and failed
    # at commit on the missing answer (a server error)
    if not Answer.objects.select_for_update(no_key=True).filter(pk=answer.pk).exists():
        raise NotFound("no such answer")
    feedback, _ = Feedback.objects.update_or_create(
        answer=answer,
        user=user,
        defaults={"vote": vote} if comment is None else {"vote": vote, "comment": comment},
    )
    if vote == Feedback.Vote.DOWN:
        curation_enqueue(answer=answer, reason="downvoted")
    audit_record(
        kind="feedback",
        actor=user,
        verdict="up" if vote > 0 else "down",
        documents=[c.get("document", "") for c in answer.response.get("citations", []) if c.get("document")],
        payload={
            "answer_id": answer.pk,
            "audit_event_id": answer.audit_event_id,
            "vote": vote,
            "comment": feedback.comment,
        },
    )
    return feedback


@transaction.atomic
def conversation_delete(*, user: Any, conversation_id: UUID | str) -> None:
    """Hide a conversation from its owner. Answers stay for the audit trail and curation (soft delete)."""
    conversation = conversation_get(user=user, conversation_id=conversation_id)
    conversation.deleted = True
    conversation.save(update_fields=["deleted", "updated_at"])
    # its questions and answers leave Redis too (they stayed for ATHENA_MEMORY_TTL_SECONDS)
    transaction.on_commit(lambda: memory_drop(str(conversation.pk)))


@transaction.atomic
def answers_delete(*, answers: QuerySet[Answer]) -> None:
    """Delete answers with their votes and curation items (an admin's delete). The rows are locked before
    Django looks for what hangs on them: a vote being written meanwhile commits first and is deleted with its
    answer, instead of the delete missing it and failing at commit on the vote left pointing at nothing."""
    ids = list(
        Answer.objects.select_for_update().filter(pk__in=answers.values("pk")).values_list("pk", flat=True)
    )
    Answer.objects.filter(pk__in=ids).delete()


@transaction.atomic
def conversations_delete(*, conversations: QuerySet[Conversation]) -> None:
    """Delete conversations with their answers (an admin's delete; the asker's own deletion only hides one:
    conversation_delete). The conversations, then their answers, are locked before Django looks for what hangs
    on them, in the order a question's answer (the conversation) and a vote (the answer) take them."""
    ids = list(
        Conversation.objects.select_for_update()
        .filter(pk__in=conversations.values("pk"))
        .values_list("pk", flat=True)
    )
    answers_delete(answers=Answer.objects.filter(conversation_id__in=ids))
    Conversation.objects.filter(pk__in=ids).delete()


@transaction.atomic
def curation_resolve(
    *, item_id: int, actor: Any, resolution: str, document_id: int | None = None
) -> CurationItem:
    """Close a curation item, optionally pointing at the new or corrected document that answers it.

    The document must be one the actor may read now, or the one the item already points at (the admin's
    "resolve" action keeps it): being a kb-admin grants no read access, and a document the actor cannot
    read answers as a missing one, so the call tells nothing of which restricted documents exist."""
    from audit.services import audit_record
    from knowledge.selectors import document_by_id, document_list_visible
    from knowledge.services import document_lock_for_reference

    # the document first, locked until this commits, in the order a delete takes them (the document, then the
    # items pointing at it): a delete under way is waited for and the document is then missing; one that
    # starts later waits, then sees this item and clears its pointer (without the lock the item was written
    # beside the delete and failed at commit on the missing document: a server error)
    present = document_id is None or document_lock_for_reference(document_id=document_id)
    item = CurationItem.objects.select_for_update().filter(pk=item_id).first()
    if item is None:
        raise NotFound("no such curation item")
    if not resolution.strip():
        raise ValidationFailed("say how the item was resolved")
    document = None
    if document_id is not None:
        readable = document_list_visible(principal=Principal.from_user(actor)).filter(pk=document_id).exists()
        if present and (readable or document_id == item.resolved_document_id):
            document = document_by_id(document_id=document_id)
        if document is None:
            raise ValidationFailed("no such document")
    if item.resolved:
        # decided under the row lock: of two resolutions sent at once (two admins, a double submit, the API
        # and the admin's action) the second finds the first committed. The same resolution again is a repeat
        # and changes nothing; another one would silently replace what the first admin recorded
        if item.resolution == resolution[:MAX_COMMENT_CHARS] and item.resolved_document_id == document_id:
            return item
        raise Conflict(
            "this item was resolved already (reopened by a new downvote, it can be resolved again)",
            details={"resolution": item.resolution, "resolved_at": item.resolved_at},
        )
    item.resolved = True
    item.resolution = resolution[:MAX_COMMENT_CHARS]
    item.resolved_document = document
    item.resolved_at = timezone.now()
    item.save()
    audit_record(
        kind="curation_resolved",
        actor=actor,
        documents=[document.source] if document else [],
        payload={"item": item.pk, "answer_id": item.answer_id, "resolution": item.resolution},
    )
    return item


def curation_export_questions() -> list[dict[str, Any]]:
    """Resolved curation items that point at a document, as questions in the dev set's schema, so that the
    organisation's own failures become its regression set (`manage.py curation_export`, then
    `tests/benchmarks/devset.py eval --questions F` or `train_answerer --collect F`).

    The admin's resolution text is the expected answer when it occurs verbatim in the document (after the dev
    set's normalisation); otherwise the question is scored on retrieval only (`answer: null`). A document
    readable by some groups only becomes an acl question for its first group.
    """
    from agents.answerer_training import label_candidates
    from knowledge.selectors import document_chunk_texts

    items = (
        CurationItem.objects.filter(resolved=True, resolved_document__isnull=False)
        .select_related("answer", "resolved_document")
        .prefetch_related("resolved_document__allowed_groups")
        .order_by("pk")
    )
    questions = []
    for item in items:
        document = item.resolved_document
        assert document is not None
        text = " ".join(document_chunk_texts(document=document))
        resolution = item.resolution.strip()
        answer = resolution if resolution and label_candidates([text], [resolution]) == [1] else None
        groups = sorted(g.name for g in document.allowed_groups.all())
        questions.append(
            {
                "id": f"curation-{item.pk}",
                "split": "train",
                "type": "curated",
                "question": item.answer.question,
                "answer": answer,
                "gold": [document.source],
                "evidence": answer or "",
                "acl": {"restricted_docs": [document.source], "allowed_group": groups[0]} if groups else None,
                "reason": item.reason,
            }
        )
    return questions
