from django.urls import path

from knowledge import apis

urlpatterns = [
    path("documents", apis.DocumentListApi.as_view(), name="documents"),
    path("documents/upload", apis.DocumentUploadApi.as_view(), name="document-upload"),
    path("documents/lookup", apis.DocumentLookupApi.as_view(), name="document-lookup"),
    path("documents/<int:document_id>", apis.DocumentDetailApi.as_view(), name="document-detail"),
    path(
        "documents/<int:document_id>/metadata", apis.DocumentMetadataApi.as_view(), name="document-metadata"
    ),
    path("documents/<int:document_id>/acl", apis.DocumentAclApi.as_view(), name="document-acl"),
    path(
        "documents/<int:document_id>/reingest", apis.DocumentReingestApi.as_view(), name="document-reingest"
    ),
    # passages/<id> is routed in agents/urls.py: its text goes through the output guard (screening.markings)
]
