import uuid

from django.urls import include, path, register_converter

from agents import apis, views


class AnyCaseUuid:
    """A UUID as the ask API accepts it: either case, with or without hyphens (Django's `uuid` converter
    takes only the lower-case hyphenated form, so a conversation id the ask API took could 404 here)."""

    regex = "[0-9a-fA-F]{8}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{12}"

    def to_python(self, value: str) -> uuid.UUID:
        return uuid.UUID(value)

    def to_url(self, value: uuid.UUID | str) -> str:
        return str(value)


register_converter(AnyCaseUuid, "any_uuid")

api_urlpatterns = [
    path("ask", apis.AskApi.as_view(), name="ask"),
    path("ask/queue", apis.AskQueueApi.as_view(), name="ask-queue"),
    path("conversations", apis.ConversationListApi.as_view(), name="conversations"),
    path(
        "conversations/<any_uuid:conversation_id>", apis.ConversationDetailApi.as_view(), name="conversation"
    ),
    path("answers/<int:answer_id>/feedback", apis.FeedbackApi.as_view(), name="answer-feedback"),
    path("curation", apis.CurationListApi.as_view(), name="curation"),
    path("passages/<int:chunk_id>", apis.GuardedPassageApi.as_view(), name="passage"),
    path("curation/<int:item_id>/resolve", apis.CurationResolveApi.as_view(), name="curation-resolve"),
]

page_urlpatterns = [
    path("", views.chat_page, name="chat"),
]

# mounted at the site root by athena/urls.py
urlpatterns = [path("api/v1/", include(api_urlpatterns)), *page_urlpatterns]
