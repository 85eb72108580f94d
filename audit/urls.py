from django.urls import include, path, re_path

from audit import apis, views

api_urlpatterns = [
    path("audit/events", apis.AuditSearchApi.as_view(), name="audit-events"),
    path("audit/events/<int:event_id>", apis.AuditEventApi.as_view(), name="audit-event"),
    re_path(r"^audit/export\.(?P<fmt>csv|jsonl)$", apis.AuditExportApi.as_view(), name="audit-export"),
    path("audit/chain", apis.AuditChainApi.as_view(), name="audit-chain"),
]

page_urlpatterns = [
    path("compliance/", views.audit_search_page, name="compliance"),
    path("compliance/events/<int:event_id>", views.audit_event_page, name="compliance-event"),
]

# mounted at the site root by athena/urls.py
urlpatterns = [path("api/v1/", include(api_urlpatterns)), *page_urlpatterns]
