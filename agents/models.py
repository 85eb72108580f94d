"""Conversations, answers and feedback (the curation queue is built from abstentions and downvotes)."""

from __future__ import annotations

import uuid

from django.conf import settings
from django.db import models


class Conversation(models.Model):
    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    # users are deactivated, not deleted: their questions and answers are the record of what was shown
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="conversations")
    title = models.CharField(max_length=200, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)
    deleted = models.BooleanField(default=False)

    class Meta:
        ordering = ["-updated_at"]


class Answer(models.Model):
    conversation = models.ForeignKey(
        Conversation, null=True, blank=True, on_delete=models.CASCADE, related_name="answers"
    )
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="answers")
    question = models.TextField()
    # the question as answered: a follow-up joined to the turn before it (agents.memory.rewrite_follow_up);
    # conversation memory is rebuilt from these when Redis has lost it. A default in the database too, so that
    # a web host of the release before this column, during a rolling upgrade, still stores its answers
    rewritten = models.TextField(blank=True, default="", db_default="")
    response = models.JSONField(default=dict, help_text="the ask API response body")
    abstained = models.BooleanField(default=False)
    template = models.CharField(max_length=40, blank=True)
    audit_event_id = models.BigIntegerField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["created_at"]

    def __str__(self) -> str:
        # what an admin page names an answer by (the curation item's link to it, a feedback row)
        return f"answer {self.pk}: {self.question[:80]}"


class Feedback(models.Model):
    class Vote(models.IntegerChoices):
        DOWN = -1
        UP = 1

    answer = models.ForeignKey(Answer, on_delete=models.CASCADE, related_name="feedback")
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT)
    vote = models.SmallIntegerField(choices=Vote.choices)
    comment = models.TextField(blank=True, max_length=2000)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["answer", "user"], name="feedback_one_per_user")]


class CurationItem(models.Model):
    """An abstention or a downvoted answer waiting for an admin; resolved by a new or corrected document."""

    answer = models.OneToOneField(Answer, on_delete=models.CASCADE, related_name="curation")
    reason = models.CharField(max_length=20)  # abstained | downvoted
    resolved = models.BooleanField(default=False)
    resolution = models.TextField(blank=True)
    resolved_document = models.ForeignKey(
        "knowledge.Document", null=True, blank=True, on_delete=models.SET_NULL
    )
    created_at = models.DateTimeField(auto_now_add=True)
    resolved_at = models.DateTimeField(null=True, blank=True)

    def __str__(self) -> str:
        return f"{self.reason}: {self.answer.question[:80]}"
