"""Admin building blocks every app may use (the core registers no model here)."""

from __future__ import annotations

import json
from typing import Any, cast

from django import forms
from django.contrib import admin
from django.core.paginator import Paginator
from django.db import models
from django.http import HttpRequest
from django.utils.functional import cached_property

from athena.validators import json_problem, text_problem


class StorableJSONFormField(forms.JSONField):
    """The admin's box for a JSON column: a value PostgreSQL cannot store (a NUL or lone surrogate escaped as
    "\\u0000" or "\\ud800", a non-finite number) is a form error instead of a server error at the INSERT, and
    is shown again escaped (written out as it was parsed, the lone surrogate could not be sent: another 500)."""

    def validate(self, value: Any) -> None:
        super().validate(value)
        problem = json_problem(value)
        if problem:
            raise forms.ValidationError(f"cannot be stored: the value {problem}", code="unstorable")

    def prepare_value(self, value: Any) -> Any:
        shown = super().prepare_value(value)
        if isinstance(shown, str) and text_problem(shown):
            return json.dumps(value, ensure_ascii=True, cls=self.encoder)
        return shown


# `formfield_overrides` of every ModelAdmin whose model has a JSON column an admin edits
JSON_FORM_FIELDS: dict[type[models.Field], dict[str, Any]] = {
    models.JSONField: {"form_class": StorableJSONFormField}
}


class ReadOnlyAdmin(admin.ModelAdmin):
    """Rows the application makes and keeps consistent (chunks, links, audit events): viewed in the admin, never
    added, changed or deleted by hand."""

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: object = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: object = None) -> bool:
        return False


class BoundedCountPaginator(Paginator):
    """Counts at most `count_limit` + 1 rows (`SELECT COUNT(*) FROM (... LIMIT n)`), so a changelist page of a
    table of millions of rows costs the same as one of a thousand: an exact COUNT(*) read the whole table (or
    every row a search matched) on every page. Past the limit the page says "more than" (the admin's
    pagination.html) and the pages beyond are reached by narrowing the list with its filters."""

    count_limit = 10_000

    @cached_property
    def count(self) -> int:
        rows = cast(models.QuerySet[Any], self.object_list)  # the admin pages querysets
        return rows[: self.count_limit + 1].count()


class LargeTableAdmin(admin.ModelAdmin):
    """A changelist for a table that grows without bound (chunks, audit events, answers): a bounded count, and
    no second count of the whole table beside a filtered one (Django's show_full_result_count)."""

    paginator = BoundedCountPaginator
    show_full_result_count = False

    def changelist_view(self, request: HttpRequest, extra_context: dict[str, Any] | None = None) -> Any:
        response = super().changelist_view(request, extra_context)
        context = getattr(response, "context_data", None) or {}
        changelist = context.get("cl")
        limit = getattr(getattr(changelist, "paginator", None), "count_limit", None)
        if (
            limit
            and changelist is not None
            and "selection_note_all" in context
            and changelist.result_count > limit
        ):
            # Django's "All 10001 selected": the action runs on every row the list holds
            context["selection_note_all"] = f"All (more than {limit}) selected"
        return response


class NamedValuesListFilter(admin.AllValuesFieldListFilter):
    """Django's filter listing a column's values, with the empty value named: Django draws it as a link with no
    text, which a screen reader announces as an unnamed link (axe: link-name)."""

    blank_label = "(blank)"

    def choices(self, changelist: Any) -> Any:
        for choice in super().choices(changelist):
            yield {**choice, "display": self.blank_label} if choice.get("display") == "" else choice


def name_typed_list_filter(lookup: str, title: str) -> type[admin.SimpleListFilter]:
    """A list filter by the exact name of a related row, typed into a box: Django's filter for a relation lists
    every row of it as a link on every changelist page (2,000 groups: 2,000 links, a quarter of the page). The
    filter's parameter is `lookup` itself (e.g. `groups__name`)."""

    class NameTypedListFilter(admin.SimpleListFilter):
        parameter_name = lookup
        template = "admin/name_typed_filter.html"

        def lookups(self, request: HttpRequest, model_admin: Any) -> Any:
            return ()

        def has_output(self) -> bool:
            return True  # no choices to list: the box is the filter

        def queryset(self, request: HttpRequest, queryset: Any) -> Any:
            value = self.value()
            return queryset.filter(**{lookup: value}) if value else queryset

        def choices(self, changelist: Any) -> Any:
            # one entry for the template: the box, the other filters of the page (kept by the box's GET form)
            # and the link that clears this filter
            kept = [
                (name, value)
                for name, values in changelist.filter_params.items()
                if name != self.parameter_name
                for value in values
            ]
            yield {
                "selected": bool(self.value()),
                "parameter": self.parameter_name,
                "value": self.value() or "",
                "kept": kept,
                "clear": changelist.get_query_string(remove=[self.parameter_name]),
            }

    NameTypedListFilter.title = title
    return NameTypedListFilter


def choices_list_filter(field: str, choices: Any, title: str) -> type[admin.SimpleListFilter]:
    """A list filter offering `choices` ((value, label) pairs, or a function returning them) for a column that
    declares none: Django's default filter for such a column lists its values with a SELECT DISTINCT over the
    whole table on every changelist page."""

    class ChoicesListFilter(admin.SimpleListFilter):
        parameter_name = field

        def lookups(self, request: HttpRequest, model_admin: Any) -> Any:
            return list(choices() if callable(choices) else choices)

        def queryset(self, request: HttpRequest, queryset: Any) -> Any:
            value = self.value()
            return queryset.filter(**{field: value}) if value else queryset

    ChoicesListFilter.title = title
    return ChoicesListFilter
