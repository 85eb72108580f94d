from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.db.models import Q
from django.http import HttpRequest

from athena.admin import LargeTableAdmin, ReadOnlyAdmin, choices_list_filter
from audit.models import AuditEvent
from audit.selectors import EXPORT_COLUMNS, audit_event_values


def _values_of(field: str) -> Any:
    return lambda: [(value, value) for value in audit_event_values(field)]


@admin.register(AuditEvent)
class AuditEventAdmin(LargeTableAdmin, ReadOnlyAdmin):
    """Read-only: the database refuses changes anyway; the admin does not offer them. Every page costs the
    same at any length of the log: a bounded count, filters listed by index probes, and no date hierarchy
    (it listed the years, months or days present with a SELECT DISTINCT over every event; the compliance page
    searches by date). Search finds an actor, kind or verdict by its exact value, through their indexes (a
    LIKE '%x%' read every event)."""

    list_display = ("id", "created_at", "kind", "actor", "verdict")
    list_filter = (
        choices_list_filter("kind", _values_of("kind"), "kind"),
        choices_list_filter("verdict", _values_of("verdict"), "verdict"),
    )
    search_fields = ("actor", "kind", "verdict")  # as exact values: get_search_results
    ordering = ("-id",)  # newest first: the bounded count reaches the newest pages
    readonly_fields = tuple(column for column in EXPORT_COLUMNS if column != "id")

    def get_search_results(self, request: HttpRequest, queryset: Any, search_term: str) -> Any:
        term = search_term.strip()
        if not term:
            return queryset, False
        return queryset.filter(Q(actor=term) | Q(kind=term) | Q(verdict=term)), False

    def has_view_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        # the audit log is for compliance staff (as its API and pages are), not for every superuser
        from athena.services import ROLE_COMPLIANCE

        user = request.user
        return bool(user.is_active and user.is_staff and user.groups.filter(name=ROLE_COMPLIANCE).exists())

    def has_module_permission(self, request: HttpRequest) -> bool:
        return self.has_view_permission(request)
