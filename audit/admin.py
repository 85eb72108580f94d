from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.http import HttpRequest

from athena.admin import ReadOnlyAdmin
from audit.models import AuditEvent
from audit.selectors import EXPORT_COLUMNS


@admin.register(AuditEvent)
class AuditEventAdmin(ReadOnlyAdmin):
    """Read-only: the database refuses changes anyway; the admin does not offer them."""

    list_display = ("id", "created_at", "kind", "actor", "verdict")
    list_filter = ("kind", "verdict")
    search_fields = ("actor", "kind", "verdict")
    date_hierarchy = "created_at"
    readonly_fields = tuple(column for column in EXPORT_COLUMNS if column != "id")

    def has_view_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        # the audit log is for compliance staff (as its API and pages are), not for every superuser
        from athena.services import ROLE_COMPLIANCE

        user = request.user
        return bool(user.is_active and user.is_staff and user.groups.filter(name=ROLE_COMPLIANCE).exists())

    def has_module_permission(self, request: HttpRequest) -> bool:
        return self.has_view_permission(request)
