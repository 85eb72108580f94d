from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.http import HttpRequest

from audit.models import AuditEvent
from audit.selectors import EXPORT_COLUMNS


@admin.register(AuditEvent)
class AuditEventAdmin(admin.ModelAdmin):
    """Read-only: the database refuses changes anyway; the admin does not offer them."""

    list_display = ("id", "created_at", "kind", "actor", "verdict")
    list_filter = ("kind", "verdict")
    search_fields = ("actor", "kind", "verdict")
    date_hierarchy = "created_at"
    readonly_fields = tuple(column for column in EXPORT_COLUMNS if column != "id")

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False
