from __future__ import annotations

from typing import Any

from django.contrib import admin, messages
from django.db.models import QuerySet
from django.http import HttpRequest

from knowledge.models import Chunk, Document, DocumentLink, Entity, IngestRun, Synonym, Vendor


def _readable_ids(request: HttpRequest) -> Any:
    from athena.principals import Principal
    from knowledge.selectors import documents_readable

    return documents_readable(principal=Principal.from_user(request.user)).values("pk")


@admin.register(Document)
class DocumentAdmin(admin.ModelAdmin):
    list_display = (
        "source",
        "title",
        "doc_type",
        "access_tier",
        "status",
        "version",
        "chunk_count",
        "injection_flags",
        "source_updated_at",
        "review_by",
    )
    list_filter = ("status", "access_tier", "doc_type", "department", "vendor", "allowed_groups")
    search_fields = ("source", "title", "author")
    filter_horizontal = ("allowed_groups",)
    readonly_fields = (
        "content_hash",
        "version",
        "status",
        "error",
        "attempts",
        "ingested_at",
        "chunk_count",
        "injection_flags",
        "source_path",
        "source_root",
        "created_at",
    )
    actions = ["reingest", "tombstone"]

    def get_queryset(self, request: HttpRequest) -> QuerySet[Document]:
        # being staff or a superuser grants no read access: only documents the admin's groups may read are
        # listed (an ACL can still be set on any document through PUT /api/v1/documents/<id>/acl)
        return super().get_queryset(request).filter(pk__in=_readable_ids(request))

    def save_related(self, request: HttpRequest, form, formsets, change: bool) -> None:  # type: ignore[no-untyped-def]
        super().save_related(request, form, formsets, change)
        # ACL or metadata edits must reach the denormalised chunk columns used by retrieval at once.
        from knowledge.services import document_acl_sync

        document_acl_sync(document=form.instance, actor=request.user)

    def delete_model(self, request: HttpRequest, obj: Document) -> None:
        # chunks must leave through the service so BM25 statistics and graph weights stay exact
        from knowledge.services import document_tombstone

        document_tombstone(document=obj)
        super().delete_model(request, obj)

    def delete_queryset(self, request: HttpRequest, queryset: QuerySet[Document]) -> None:
        for document in queryset:
            self.delete_model(request, document)

    @admin.action(description="Re-ingest selected documents from their source files")
    def reingest(self, request: HttpRequest, queryset: QuerySet[Document]) -> None:
        from knowledge.services import document_reingest

        count = 0
        for document in queryset:
            document_reingest(document=document)
            count += 1
        self.message_user(request, f"queued {count} document(s) for re-ingestion", messages.SUCCESS)

    @admin.action(description="Tombstone (exclude from retrieval)")
    def tombstone(self, request: HttpRequest, queryset: QuerySet[Document]) -> None:
        from knowledge.services import document_tombstone

        for document in queryset:
            document_tombstone(document=document)
        self.message_user(request, "tombstoned", messages.SUCCESS)


@admin.register(Chunk)
class ChunkAdmin(admin.ModelAdmin):
    list_display = (
        "id",
        "document",
        "ordinal",
        "section_path",
        "page",
        "token_count",
        "injection_flag",
        "active",
    )
    list_filter = ("injection_flag", "active", "access_tier")
    search_fields = ("document__source", "text")
    exclude = ("embedding", "tsv")

    def get_queryset(self, request: HttpRequest) -> QuerySet[Chunk]:
        return super().get_queryset(request).filter(document_id__in=_readable_ids(request))

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: object = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: object = None) -> bool:
        return False


@admin.register(Vendor)
class VendorAdmin(admin.ModelAdmin):
    list_display = ("name", "kind", "aliases")
    search_fields = ("name",)


@admin.register(Synonym)
class SynonymAdmin(admin.ModelAdmin):
    list_display = ("term", "expansions")
    search_fields = ("term",)


@admin.register(Entity)
class EntityAdmin(admin.ModelAdmin):
    list_display = ("kind", "name", "display")
    list_filter = ("kind",)
    search_fields = ("name",)


@admin.register(DocumentLink)
class DocumentLinkAdmin(admin.ModelAdmin):
    list_display = ("source", "target_ref", "target", "kind")


@admin.register(IngestRun)
class IngestRunAdmin(admin.ModelAdmin):
    list_display = ("id", "root", "status", "started_at", "finished_at", "total", "counts")
