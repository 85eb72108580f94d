"""Reads of conversations, answers and the curation queue, always scoped to the requesting user."""

from __future__ import annotations

from typing import Any
from uuid import UUID

from django.db.models import Count, QuerySet

from agents.models import Answer, Conversation, CurationItem
from athena.errors import NotFound


def conversation_list(*, user: Any) -> QuerySet[Conversation]:
    """The user's own conversations, newest activity first, with their number of questions."""
    return (
        Conversation.objects.filter(user=user, deleted=False)
        .annotate(turns=Count("answers"))
        .order_by("-updated_at")
    )


def conversation_get(*, user: Any, conversation_id: UUID | str) -> Conversation:
    """One of the user's live conversations; someone else's and a missing one look the same."""
    conversation = Conversation.objects.filter(user=user, deleted=False, pk=conversation_id).first()
    if conversation is None:
        raise NotFound("no such conversation")
    return conversation


def conversation_history(
    *, user: Any, conversation_id: UUID | str, limit: int, offset: int = 0
) -> tuple[Conversation, list[Answer], int]:
    """A conversation, its newest `limit` answers after skipping the `offset` newest ones (in the order they
    were asked), and how many answers it has. A conversation keeps every turn: read whole, one of 3,000 turns
    was 78 MB in one response."""
    conversation = conversation_get(user=user, conversation_id=conversation_id)
    newest_first = conversation.answers.order_by("-created_at", "-id")
    page = list(newest_first[offset : offset + limit].prefetch_related("feedback"))
    return conversation, page[::-1], newest_first.count()


def answer_get_for_user(*, user: Any, answer_id: int) -> Answer:
    """An answer given to this user in a conversation they have not deleted (only the asker votes on it; a
    deleted conversation's answers are kept for the audit and curation, out of the asker's reach)."""
    answer = Answer.objects.filter(user=user, pk=answer_id).exclude(conversation__deleted=True).first()
    if answer is None:
        raise NotFound("no such answer")
    return answer


def curation_queue(*, resolved: bool | None = False) -> QuerySet[CurationItem]:
    """Abstentions and downvoted answers for admins, oldest first (callers check the admin role)."""
    qs = CurationItem.objects.select_related("answer", "answer__user", "resolved_document").prefetch_related(
        "answer__feedback"
    )
    if resolved is not None:
        qs = qs.filter(resolved=resolved)
    return qs.order_by("created_at", "id")


CURATION_ANSWER_WITHHELD = "[withheld: the answer cites documents you cannot read]"


def _readable(sources: set[str], principal: Any) -> set[str]:
    """Those of `sources` that name a live document `principal` may read now."""
    from knowledge.selectors import document_list_visible

    if not sources:
        return set()
    return set(
        document_list_visible(principal=principal).filter(source__in=sources).values_list("source", flat=True)
    )


def _cited(response: dict[str, Any]) -> set[str]:
    return {str(c.get("document")) for c in response.get("citations") or [] if c.get("document")}


def curation_answers_visible(*, responses: dict[int, dict[str, Any]], principal: Any) -> dict[int, str]:
    """The answer text of each curation item (its stored response, keyed as given) as `principal` may see it:
    an admin outside a cited document's groups gets a placeholder instead of text quoted from that document
    (being a kb-admin grants no read access). Unknown or no longer readable sources count as unreadable (fail
    closed). One query for the documents a whole page of items cites (one per item made a 500-item page of
    the queue 500 queries)."""
    cited = {key: _cited(response) for key, response in responses.items()}
    readable = _readable(set().union(*cited.values()), principal)
    return {
        key: str(response.get("answer", "")) if cited[key] <= readable else CURATION_ANSWER_WITHHELD
        for key, response in responses.items()
    }


HISTORY_ANSWER_WITHHELD = (
    "This answer is withheld: it drew on documents you can no longer read. Ask again for an answer from the "
    "documents you can read now."
)
HISTORY_ANSWER_CHANGED = (
    "This answer is withheld: a passage it showed has since been changed or removed from its document. Ask "
    "again for an answer from the documents as they are now."
)
# what a withheld past answer keeps of its stored response: nothing taken from a document
_WITHHELD_KEEPS = (
    "abstained",
    "template",
    "verdict",
    "conversation_id",
    "answer_id",
    "audit_event_id",
    "timings_ms",
)


def _response_sources(response: dict[str, Any]) -> set[str]:
    """Every document a stored ask response names: cited, named by a note as superseding a cited one, shown as
    evidence or passages, or listed as retrieved."""
    citations = response.get("citations") or []
    named = [c.get("document") for c in citations] + [c.get("superseded_by") for c in citations]
    named += [e.get("document") for e in response.get("evidence") or []]
    named += list(response.get("retrieved") or [])
    return {str(name) for name in named if name}


def _response_passages(response: dict[str, Any]) -> set[tuple[int, str, str]]:
    """The passages a stored ask response shows text of, as (chunk id, document source, text hash): each
    citation's chunk and the first ten evidence chunks (`passages`). Answers stored before the evidence
    recorded text hashes have "" (then only the same chunk id proves the text unchanged)."""
    evidence = [e for e in response.get("evidence") or [] if e.get("chunk_id")]
    digest = {e["chunk_id"]: str(e.get("content_hash") or "") for e in evidence}
    shown = [
        (e["chunk_id"], str(e.get("document") or "")) for e in evidence[: len(response.get("passages") or [])]
    ]
    shown += [
        (c["chunk_id"], str(c.get("document") or ""))
        for c in response.get("citations") or []
        if c.get("chunk_id")
    ]
    return {(int(pk), source, digest.get(pk, "")) for pk, source in shown}


# a note naming a superseding document by its title (agents.steps.compose.stale_notes); answers stored before
# their citations recorded that document's source (`superseded_by`) cannot be checked, and are withheld
_SUPERSEDED_NOTE = " is superseded by '"


def _unverifiable(response: dict[str, Any]) -> bool:
    notes = [str(note) for note in response.get("notes") or []]
    recorded = any("superseded_by" in c for c in response.get("citations") or [])
    return any(_SUPERSEDED_NOTE in note for note in notes) and not recorded


def responses_visible(*, answers: list[Answer], principal: Any) -> dict[int, dict[str, Any]]:
    """Each past answer's stored response as its asker may see it now. Access is checked again on every read:
    an answer that drew on a document the asker can no longer read (they left its group, an admin narrowed
    its access, it was removed or expired) is withheld whole, since its text, quotes, passages, titles and notes
    all come from that document. Unknown sources count as unreadable (fail closed)."""
    from knowledge.selectors import passages_unchanged

    named = {answer.pk: _response_sources(answer.response or {}) for answer in answers}
    readable = _readable(set().union(*named.values()), principal)
    shown = {answer.pk: _response_passages(answer.response or {}) for answer in answers}
    unchanged = passages_unchanged(set().union(*shown.values()))
    visible: dict[int, dict[str, Any]] = {}
    for answer in answers:
        response = answer.response or {}
        if not (named[answer.pk] <= readable and not _unverifiable(response)):
            message = HISTORY_ANSWER_WITHHELD
        elif not {pk for pk, _, _ in shown[answer.pk]} <= unchanged:
            message = HISTORY_ANSWER_CHANGED
        else:
            visible[answer.pk] = response
            continue
        kept = {key: response[key] for key in _WITHHELD_KEEPS if key in response}
        visible[answer.pk] = {
            **kept,
            "answer": message,
            "withheld": True,
            "citations": [],
            "retrieved": [],
            "evidence": [],
            "passages": [],
            "notes": [],
            "trace": [],
            "attribution_score": None,
        }
    return visible
