from django.urls import include, path

from agents import apis, views

api_urlpatterns = [
    path("ask", apis.AskApi.as_view(), name="ask"),
    path("ask/queue", apis.AskQueueApi.as_view(), name="ask-queue"),
    path("conversations", apis.ConversationListApi.as_view(), name="conversations"),
    path("conversations/<uuid:conversation_id>", apis.ConversationDetailApi.as_view(), name="conversation"),
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
