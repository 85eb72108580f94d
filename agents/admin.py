from __future__ import annotations

from typing import Any

from django.contrib import admin, messages
from django.db.models import QuerySet
from django.http import HttpRequest

from agents.models import Answer, Conversation, CurationItem, Feedback
from athena.admin import LargeTableAdmin, choices_list_filter
from knowledge.admin import UNREADABLE_DOCUMENT, ReadableDocumentChoices


def _answer_templates() -> list[tuple[str, str]]:
    from agents.classify import TEMPLATES  # the answer templates (not a SELECT DISTINCT over every answer)

    return [(template, template) for template in TEMPLATES]


@admin.register(Conversation)
class ConversationAdmin(LargeTableAdmin):
    list_display = ("id", "user", "title", "created_at", "updated_at", "deleted")
    list_filter = ("deleted",)
    search_fields = ("title", "user__username")
    readonly_fields = ("id", "user", "created_at", "updated_at")

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False  # a conversation is started by asking (its user is read-only here: adding one was a 500)

    def delete_model(self, request: HttpRequest, obj: Conversation) -> None:
        self.delete_queryset(request, Conversation.objects.filter(pk=obj.pk))

    def delete_queryset(self, request: HttpRequest, queryset: QuerySet[Conversation]) -> None:
        from agents.feedback import conversations_delete

        conversations_delete(conversations=queryset)  # locks first: see there


@admin.register(Answer)
class AnswerAdmin(LargeTableAdmin):
    """Answers are a record of what was shown: read-only here."""

    ordering = ("-id",)  # newest first (by the key: created_at has no index); the count is bounded

    list_display = ("id", "user", "question", "abstained", "template", "created_at")
    list_filter = ("abstained", choices_list_filter("template", _answer_templates, "template"))
    search_fields = ("question", "user__username")
    # the stored response quotes documents the admin may not be allowed to read (see the curation API)
    exclude = ("response",)

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def delete_model(self, request: HttpRequest, obj: Answer) -> None:
        self.delete_queryset(request, Answer.objects.filter(pk=obj.pk))

    def delete_queryset(self, request: HttpRequest, queryset: QuerySet[Answer]) -> None:
        from agents.feedback import answers_delete

        answers_delete(answers=queryset)  # locks first: see there


@admin.register(Feedback)
class FeedbackAdmin(LargeTableAdmin):
    list_display = ("id", "answer", "user", "vote", "comment", "created_at")
    # id boxes, not selects of every answer and every user (50k answers made the change form 20 s, 2.8 MiB)
    raw_id_fields = ("answer", "user")
    list_filter = ("vote",)
    search_fields = ("comment", "user__username")

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False


@admin.register(CurationItem)
class CurationItemAdmin(LargeTableAdmin, ReadableDocumentChoices):
    """The curation queue: abstentions and downvotes to resolve with a new or corrected document (one the admin
    may read: a document outside their groups is neither offered nor named)."""

    list_display = ("id", "reason", "question", "resolved", "resolving_document", "created_at")
    # the two reasons curation_enqueue is given (the model's comment): no SELECT DISTINCT over every item
    list_filter = (
        "resolved",
        choices_list_filter("reason", [("abstained", "abstained"), ("downvoted", "downvoted")], "reason"),
    )
    search_fields = ("answer__question", "resolution")
    # an id box for the document (still limited to the ones _choices offers), not a select of every readable
    # one (10k documents: 430 KiB and 5 s a change form)
    raw_id_fields = ("answer", "resolved_document")
    list_select_related = ("answer", "resolved_document")
    document_choice_fields = ("resolved_document",)
    # what the curator decides on: the question as asked and what its askers said of the answer (the answer's text
    # stays out: it quotes documents the admin may not be allowed to read)
    readonly_fields = ("question_asked", "comments", "answer", "reason", "created_at", "resolved_at")
    actions = ["resolve"]

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False  # items come from abstentions and downvotes (its answer is read-only: adding was a 500)

    @admin.display(description="question")
    def question(self, obj: CurationItem) -> str:
        return obj.answer.question[:120]

    def get_fields(self, request: HttpRequest, obj: Any = None) -> Any:
        # the question and its feedback first: read before resolving (Django puts read-only fields last)
        fields = list(super().get_fields(request, obj))
        first = [name for name in ("question_asked", "comments") if name in fields]
        return [*first, *(name for name in fields if name not in first)]

    @admin.display(description="question")
    def question_asked(self, obj: CurationItem) -> str:
        return obj.answer.question

    @admin.display(description="feedback")
    def comments(self, obj: CurationItem) -> str:
        votes = obj.answer.feedback.select_related("user").order_by("created_at")
        said = [
            f"{'not helpful' if vote.vote < 0 else 'helpful'} ({vote.user}): {vote.comment or 'no comment'}"
            for vote in votes
        ]
        return "\n".join(said) or "-"

    def get_queryset(self, request: HttpRequest) -> QuerySet[CurationItem]:
        from knowledge.admin import readable_document_flag

        flag = readable_document_flag(request, "resolved_document_id")
        return super().get_queryset(request).annotate(resolved_readable=flag)

    @admin.display(description="resolved document")
    def resolving_document(self, obj: CurationItem) -> str:
        if obj.resolved_document_id is None:
            return "-"
        if getattr(obj, "resolved_readable", False):
            return str(obj.resolved_document)
        return UNREADABLE_DOCUMENT

    @admin.display(description="resolved document")
    def resolved_document_withheld(self, obj: CurationItem) -> str:
        return UNREADABLE_DOCUMENT

    @admin.action(description="Resolve selected items")
    def resolve(self, request: HttpRequest, queryset: QuerySet[CurationItem]) -> None:
        from agents.feedback import curation_resolve
        from athena.errors import Conflict

        count, taken = 0, 0
        for item in queryset.filter(resolved=False):
            try:
                curation_resolve(
                    item_id=item.pk,
                    actor=request.user,
                    resolution=item.resolution or f"resolved in admin by {request.user}",
                    document_id=item.resolved_document_id,
                )
            except Conflict:
                taken += 1  # resolved by someone else since the list was read: their resolution stays
                continue
            count += 1
        self.message_user(request, f"resolved {count} item(s)", messages.SUCCESS)
        if taken:
            self.message_user(
                request,
                f"{taken} item(s) had been resolved meanwhile by someone else (kept)",
                messages.WARNING,
            )
