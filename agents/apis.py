"""Ask, conversations, feedback and the curation queue."""

from __future__ import annotations

import logging
import re
import unicodedata
from typing import Any

from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema, extend_schema_field
from rest_framework import exceptions, serializers, status
from rest_framework.fields import empty
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from agents.feedback import conversation_delete, curation_enqueue, curation_resolve, feedback_submit
from agents.models import Answer, Conversation, CurationItem
from agents.selectors import conversation_history, conversation_list, curation_queue, responses_visible
from athena.errors import ErrorSerializer, Unavailable, ValidationFailed, flatten_detail
from athena.http import (  # reject_unknown_fields also refuses bodies over 64 KiB before parsing
    refuse_unknown_params,
    reject_unknown_fields,
)
from athena.pagination import PageParams, page_params
from athena.permissions import IsKbAdmin
from athena.principals import Principal
from athena.throttling import ask_throttle_hit, empty_result_record
from knowledge.apis import PassageApi
from knowledge.models import AccessTier, DocType

logger = logging.getLogger(__name__)


class CitationSerializer(serializers.Serializer):
    ref = serializers.IntegerField()
    document = serializers.CharField(help_text="source id")
    title = serializers.CharField()
    section = serializers.CharField(allow_blank=True)
    page = serializers.IntegerField(allow_null=True)
    chunk_id = serializers.IntegerField()
    updated_at = serializers.CharField(allow_null=True)
    access_tier = serializers.CharField()
    quote = serializers.CharField()


class TraceStepSerializer(serializers.Serializer):
    step = serializers.CharField()
    decision = serializers.CharField(allow_blank=True)
    ms = serializers.FloatField()


class EvidenceSerializer(serializers.Serializer):
    """One retrieved passage the answer was drawn from (agents.pipeline), best first."""

    chunk_id = serializers.IntegerField()
    document = serializers.CharField(help_text="source id")
    title = serializers.CharField(allow_blank=True)
    section = serializers.CharField(allow_blank=True)
    content_hash = serializers.CharField(help_text="the passage's text hash when it was retrieved")
    score = serializers.FloatField()
    scores = serializers.DictField(
        child=serializers.FloatField(),
        help_text="per retrieval source (dense, bm25 relative to the best shown, graph, ...)",
    )


class AskOutputSerializer(serializers.Serializer):
    """The answer contract of DESIGN.md section 8 (shared with `manage.py ask --json`)."""

    answer = serializers.CharField(
        allow_blank=True,
        help_text="plain text, each sentence ending in its [n] citation; a procedure is numbered lines "
        "('1. ...'), a comparison '- ' bullets; a command or configuration snippet keeps its lines, indented by "
        "four spaces after a blank line (a Markdown code block)",
    )
    abstained = serializers.BooleanField()
    template = serializers.CharField(allow_blank=True)
    citations = CitationSerializer(many=True)
    retrieved = serializers.ListField(child=serializers.CharField())
    attribution_score = serializers.FloatField(allow_null=True)
    conversation_id = serializers.UUIDField()
    timings_ms = serializers.DictField(child=serializers.FloatField())
    trace = TraceStepSerializer(many=True)
    answer_id = serializers.IntegerField(allow_null=True)
    # every answer carries these too (agents.services.ask builds one body for the API, history and --json)
    notes = serializers.ListField(child=serializers.CharField())
    evidence = EvidenceSerializer(many=True)
    verdict = serializers.CharField()
    passages = serializers.ListField(child=serializers.CharField())
    audit_event_id = serializers.IntegerField(allow_null=True)


class StrictCharField(serializers.CharField):
    """A string and only a string: DRF would turn 42 or true into "42"/"True" and answer that."""

    def to_internal_value(self, data: Any) -> str:
        if not isinstance(data, str):
            self.fail("invalid")
        return super().to_internal_value(data)


# terminal colour and cursor codes (ESC [ ... letter) in pasted output, and any other control character but
# tab, newline and NUL (which CharField refuses); the words around them are what was asked
_TERMINAL_CODES = re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]|\x1b[@-_]")
_CONTROL = re.compile(r"[\x01-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f]")


class QuestionField(StrictCharField):
    """A question as a person typed or pasted it: terminal escape codes and control characters removed (a
    pasted error line arrives with its colours), then trimmed; nothing left is a blank question (400)."""

    def to_internal_value(self, data: Any) -> str:
        if isinstance(data, str):
            data = re.sub(r" {2,}", " ", _CONTROL.sub(" ", _TERMINAL_CODES.sub("", data)))
        return super().to_internal_value(data)

    def run_validation(self, data: Any = empty) -> Any:
        if isinstance(data, str) and not any(unicodedata.category(ch)[0] in "LNPS" for ch in data):
            # only invisible characters (zero-width spaces, direction marks, lone combining marks): as blank
            # as spaces, but str.strip() keeps them and the question was answered as asked
            data = ""
        return super().run_validation(data)


class StrictUUIDField(serializers.UUIDField):
    """A UUID written as a string: DRF takes a number too (5 or true become UUID(int=...)), which named no
    conversation the asker had and read as 'no such conversation' instead of a wrong type."""

    def to_internal_value(self, data: Any) -> Any:
        if not isinstance(data, str):
            self.fail("invalid", value=data)
        return super().to_internal_value(data)


def _names(choices: list[str] | None = None) -> dict[str, Any]:
    """A list filter's schema: names, or one name alone (null: no filter)."""
    name: dict[str, Any] = {"type": "string", "minLength": 1}
    if choices:
        name["enum"] = choices
    return {"oneOf": [{"type": "array", "items": name}, name], "nullable": True}


def _day() -> dict[str, Any]:
    # days are UTC days: a document's date is compared in UTC (knowledge.index_selectors.visibility_sql)
    return {
        "type": "string",
        "format": "date",
        "nullable": True,
        "description": "YYYY-MM-DD, a UTC day, included",
    }


@extend_schema_field(
    {
        "type": "object",
        "nullable": True,
        "additionalProperties": False,  # an unknown key is refused (agents.services)
        "properties": {
            "doc_types": _names(list(DocType.values)),
            "tiers": _names(list(AccessTier.values)),
            "departments": _names(),
            "vendors": _names(),
            "updated_after": _day(),
            "updated_before": _day(),
        },
    }
)
class AskFiltersField(serializers.DictField):
    """The ask's `filters` object; checked by the answering service (agents.services), typed here for the
    schema: as a bare object, a generated client could not tell which keys and values it takes."""


def _ask_service() -> Any:
    try:
        from agents.services import ask
    except ImportError as exc:  # the answering service ships separately; say so instead of a 500
        logger.error("agents.services.ask unavailable: %s", exc)
        raise Unavailable("the answering service is not installed") from exc
    return ask


TOTAL_COUNT_HEADER = OpenApiParameter(
    "X-Total-Count",
    int,
    OpenApiParameter.HEADER,
    response=[200],
    description="how many there are in all, whatever `limit` and `offset` returned",
)

RETRY_AFTER_HEADER = OpenApiParameter(
    "Retry-After",
    int,
    OpenApiParameter.HEADER,
    response=[429, 503],
    description="seconds before asking again is expected to be admitted",
)


class AskApi(APIView):
    """Ask a question; the answer cites only passages the caller may read."""

    class AskInputSerializer(serializers.Serializer):
        question = QuestionField(max_length=1000)
        conversation_id = StrictUUIDField(required=False, allow_null=True)
        filters = AskFiltersField(
            required=False,
            allow_null=True,
            help_text=(
                "Restrict the search: doc_types (sop, manual, runbook, incident, config_guide, other), tiers "
                "(public, internal, restricted, confidential), departments, vendors (lists of strings), "
                "updated_after / updated_before (YYYY-MM-DD, UTC days, both included). An unknown key, doc type "
                "or tier is refused (400); departments and vendors match the stored names whatever their case."
            ),
        )

    @extend_schema(
        request=AskInputSerializer,
        parameters=[RETRY_AFTER_HEADER],
        responses={
            200: AskOutputSerializer,
            400: OpenApiResponse(
                ErrorSerializer,
                description="`invalid`: a blank or over-long question, an unknown field or filter; `blocked`: "
                "the input guard refused the question (personal data, an instruction to the model), audited "
                "(details: guard, audit_event_id); `parse_error`: a body that is not JSON",
            ),
            404: OpenApiResponse(
                ErrorSerializer,
                description="`not_found`: `conversation_id` names no conversation of the caller",
            ),
            429: OpenApiResponse(
                ErrorSerializer,
                description="`too_many_in_flight`: the caller already has ATHENA_USER_MAX_IN_FLIGHT questions "
                "waiting (details: in_flight, limit, ahead, expected_wait_seconds); `throttled`: the hourly "
                "question limit or a pause",
            ),
            503: OpenApiResponse(
                ErrorSerializer,
                description="`overloaded`: the expected wait in the answering queue exceeds "
                "ATHENA_MAX_QUEUE_WAIT_SECONDS (details: ahead, expected_wait_seconds); `unavailable`: no "
                "answering worker, or none answered in time; `dependency_unavailable`: database or broker",
            ),
        },
    )
    def post(self, request: Request) -> Response:
        try:
            # the body first: its size is checked before it is read, and the refusal below reads it (is it a
            # question?), which a refused query parameter must not make it do whatever its size
            reject_unknown_fields(request, self.AskInputSerializer)
            refuse_unknown_params(request)  # conversation_id in the query string started a new conversation
            serializer = self.AskInputSerializer(data=request.data)
            serializer.is_valid(raise_exception=True)
        except (ValidationFailed, exceptions.ValidationError) as exc:
            if isinstance(request.data, dict):  # a JSON object: a question, refused for what it holds
                self.refusal_record(request, exc)
            raise
        data = serializer.validated_data
        ask = _ask_service()
        # counted before answering: refused and failed questions cost the same as answered ones
        ask_throttle_hit(request.user)
        conversation_id = data.get("conversation_id")
        result = ask(
            user=request.user,
            question=data["question"],
            conversation_id=str(conversation_id) if conversation_id else None,
            filters=data.get("filters") or None,
            enumeration_watch=True,
        )
        if not result.get("retrieved"):
            empty_result_record(request.user, data["question"])
        answer_id = result.get("answer_id")
        if result.get("abstained") and answer_id:
            answer = Answer.objects.filter(pk=answer_id, user=request.user).first()
            if answer is not None:
                curation_enqueue(answer=answer, reason="abstained")
        return Response(result)

    @staticmethod
    def refusal_record(request: Request, exc: ValidationFailed | exceptions.ValidationError) -> None:
        """Every question is audited, also one refused before answering (too long, a NUL, an unknown field);
        it counts towards the hourly limit like any other (429 past it), so refusals cannot flood the log."""
        from agents.services import question_refusal_record

        ask_throttle_hit(request.user)
        message = exc.message if isinstance(exc, ValidationFailed) else flatten_detail(exc.detail)
        question_refusal_record(user=request.user, reason=message)


class AskQueueApi(APIView):
    """GET /api/v1/ask/queue: the caller's own place in the answering queue while a question of theirs waits
    (the chat page polls it during an ask). Only the caller's questions are located; of everyone else's the
    caller learns only how many are ahead of theirs."""

    class AskQueueOutputSerializer(serializers.Serializer):
        in_flight = serializers.IntegerField(help_text="the caller's questions waiting or being answered")
        limit = serializers.IntegerField(
            help_text="the most questions the caller may have waiting at once (0: no limit)"
        )
        ahead = serializers.IntegerField(
            allow_null=True,
            help_text="questions published before the caller's oldest one and not yet answered "
            "(null: the caller has none waiting)",
        )
        expected_wait_seconds = serializers.FloatField(
            allow_null=True,
            help_text="expected time before that question starts being answered "
            "(null: none waiting, or no answering worker is alive)",
        )

    @extend_schema(responses={200: AskQueueOutputSerializer})
    def get(self, request: Request) -> Response:
        from django.conf import settings
        from redis.exceptions import RedisError

        from agents.realtime import queue_position, retry_after_seconds

        refuse_unknown_params(request)
        try:
            position = queue_position(user_id=request.user.pk)
        except RedisError:
            raise Unavailable(
                "the message broker is not reachable; retry in a few seconds",
                retry_after=retry_after_seconds(),
            ) from None
        return Response(
            self.AskQueueOutputSerializer(
                {
                    "in_flight": position.in_flight,
                    "limit": settings.ATHENA_USER_MAX_IN_FLIGHT,
                    "ahead": position.ahead,
                    "expected_wait_seconds": position.expected_wait_seconds,
                }
            ).data
        )


class ConversationSerializer(serializers.ModelSerializer):
    turns = serializers.IntegerField(read_only=True)

    class Meta:
        model = Conversation
        fields = ["id", "title", "created_at", "updated_at", "turns"]


class ConversationListApi(APIView):
    @extend_schema(parameters=[PageParams, TOTAL_COUNT_HEADER], responses=ConversationSerializer(many=True))
    def get(self, request: Request) -> Response:
        """The caller's conversations, newest first: `limit` (default 200) from `offset`; the total is in the
        X-Total-Count header."""
        refuse_unknown_params(request, PageParams)
        limit, offset = page_params(request, default_limit=200)
        qs = conversation_list(user=request.user)
        response = Response(ConversationSerializer(qs[offset : offset + limit], many=True).data)
        response["X-Total-Count"] = str(qs.count())
        return response


class TurnSerializer(serializers.Serializer):
    answer_id = serializers.IntegerField(source="pk")
    question = serializers.CharField()
    created_at = serializers.DateTimeField()
    response = serializers.SerializerMethodField()
    vote = serializers.SerializerMethodField()

    def get_response(self, obj: Answer) -> dict[str, Any]:
        # as the asker may see it now (agents.selectors.responses_visible), computed once for the conversation
        return dict(self.context["responses"][obj.pk])

    def get_vote(self, obj: Answer) -> int | None:
        votes = [f.vote for f in obj.feedback.all() if f.user_id == obj.user_id]
        return votes[0] if votes else None


class ConversationHistorySerializer(serializers.Serializer):
    id = serializers.UUIDField()
    title = serializers.CharField()
    created_at = serializers.DateTimeField()
    turns = TurnSerializer(many=True)


class ConversationDetailApi(APIView):
    @extend_schema(parameters=[PageParams, TOTAL_COUNT_HEADER], responses=ConversationHistorySerializer)
    def get(self, request: Request, conversation_id: Any) -> Response:
        """The conversation with its newest `limit` turns (default 200) after skipping the `offset` newest
        ones, in the order they were asked; the number of turns is in the X-Total-Count header."""
        refuse_unknown_params(request, PageParams)
        limit, offset = page_params(request, default_limit=200)
        conversation, answers, total = conversation_history(
            user=request.user, conversation_id=conversation_id, limit=limit, offset=offset
        )
        responses = responses_visible(answers=answers, principal=Principal.from_user(request.user))
        response = Response(
            ConversationHistorySerializer(
                {
                    "id": conversation.pk,
                    "title": conversation.title,
                    "created_at": conversation.created_at,
                    "turns": answers,
                },
                context={"responses": responses},
            ).data
        )
        response["X-Total-Count"] = str(total)
        return response

    @extend_schema(responses={204: None})
    def delete(self, request: Request, conversation_id: Any) -> Response:
        refuse_unknown_params(request)
        conversation_delete(user=request.user, conversation_id=conversation_id)
        return Response(status=status.HTTP_204_NO_CONTENT)


class FeedbackApi(APIView):
    """Thumbs up/down with an optional comment on an answer the caller was given."""

    class FeedbackInputSerializer(serializers.Serializer):
        vote = serializers.ChoiceField(choices=[("up", "up"), ("down", "down")])
        comment = StrictCharField(required=False, allow_blank=True, max_length=2000)

    class FeedbackOutputSerializer(serializers.Serializer):
        answer_id = serializers.IntegerField()
        vote = serializers.CharField()
        comment = serializers.CharField(allow_blank=True)
        queued_for_curation = serializers.BooleanField()

    @extend_schema(request=FeedbackInputSerializer, responses={201: FeedbackOutputSerializer})
    def post(self, request: Request, answer_id: int) -> Response:
        refuse_unknown_params(request)
        reject_unknown_fields(request, self.FeedbackInputSerializer)
        serializer = self.FeedbackInputSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        vote = 1 if serializer.validated_data["vote"] == "up" else -1
        feedback = feedback_submit(
            user=request.user,
            answer_id=answer_id,
            vote=vote,
            comment=serializer.validated_data.get("comment"),  # absent: an earlier vote's comment stays
        )
        queued = CurationItem.objects.filter(answer_id=answer_id, resolved=False).exists()
        return Response(
            self.FeedbackOutputSerializer(
                {
                    "answer_id": answer_id,
                    "vote": serializer.validated_data["vote"],
                    "comment": feedback.comment,
                    "queued_for_curation": queued,
                }
            ).data,
            status=status.HTTP_201_CREATED,
        )


class CurationItemSerializer(serializers.ModelSerializer):
    question = serializers.CharField(source="answer.question")
    asked_by = serializers.CharField(source="answer.user.username")
    answer = serializers.SerializerMethodField()
    comments = serializers.SerializerMethodField()

    class Meta:
        model = CurationItem
        fields = [
            "id",
            "reason",
            "question",
            "asked_by",
            "answer",
            "comments",
            "resolved",
            "resolution",
            "resolved_document",
            "created_at",
            "resolved_at",
        ]

    def get_answer(self, obj: CurationItem) -> str:
        from agents.selectors import CURATION_ANSWER_WITHHELD

        # computed for the whole page by the view (agents.selectors.curation_answers_visible)
        answers = self.context.get("answers")
        if answers is None or obj.pk not in answers:
            return CURATION_ANSWER_WITHHELD  # nobody to check the citations against: fail closed
        return str(answers[obj.pk])

    def get_comments(self, obj: CurationItem) -> list[str]:
        return [f.comment for f in obj.answer.feedback.all() if f.comment]


def _curation_answers(items: list[CurationItem], request: Request) -> dict[int, str]:
    """Each item's answer text as the requesting admin may see it, for the whole page in one query."""
    from agents.selectors import curation_answers_visible

    responses = {item.pk: item.answer.response or {} for item in items}
    return curation_answers_visible(responses=responses, principal=Principal.from_user(request.user))


class CurationListApi(APIView):
    """Admins: the curation queue (abstentions and downvotes)."""

    permission_classes = [IsKbAdmin]

    class CurationListFilterSerializer(serializers.Serializer):
        resolved = serializers.BooleanField(required=False, default=False)

    @extend_schema(
        parameters=[CurationListFilterSerializer, PageParams, TOTAL_COUNT_HEADER],
        responses=CurationItemSerializer(many=True),
    )
    def get(self, request: Request) -> Response:
        """`limit` (default 500) items from `offset`; the total is in the X-Total-Count header."""
        refuse_unknown_params(request, self.CurationListFilterSerializer, PageParams)
        params = self.CurationListFilterSerializer(data=request.query_params)
        params.is_valid(raise_exception=True)
        limit, offset = page_params(request, default_limit=500)
        qs = curation_queue(resolved=params.validated_data["resolved"])
        items = list(qs[offset : offset + limit])
        context = {"answers": _curation_answers(items, request)}
        response = Response(CurationItemSerializer(items, many=True, context=context).data)
        response["X-Total-Count"] = str(qs.count())
        return response


class CurationResolveApi(APIView):
    permission_classes = [IsKbAdmin]

    class CurationResolveInputSerializer(serializers.Serializer):
        resolution = serializers.CharField(max_length=2000)
        document_id = serializers.IntegerField(required=False, allow_null=True, min_value=1)

    @extend_schema(
        request=CurationResolveInputSerializer,
        responses={
            200: CurationItemSerializer,
            409: OpenApiResponse(
                ErrorSerializer,
                description="`conflict`: the item was resolved already with another resolution (the same "
                "resolution sent again answers 200 and changes nothing)",
            ),
        },
    )
    def post(self, request: Request, item_id: int) -> Response:
        refuse_unknown_params(request)
        reject_unknown_fields(request, self.CurationResolveInputSerializer)
        serializer = self.CurationResolveInputSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        item = curation_resolve(
            item_id=item_id,
            actor=request.user,
            resolution=serializer.validated_data["resolution"],
            document_id=serializer.validated_data.get("document_id"),
        )
        return Response(
            CurationItemSerializer(item, context={"answers": _curation_answers([item], request)}).data
        )


class GuardedPassageApi(PassageApi):
    """GET /api/v1/passages/<id>: the citation viewer's passage, its text through the output guard (PII
    masked and confidential markings removed, as in answers)."""

    def guard_text(self, text: str) -> str:
        from agents.services import passage_text_guard

        return passage_text_guard(text)
