"""Admin building blocks every app may use (the core registers no model here)."""

from __future__ import annotations

import json
from typing import Any

from django import forms
from django.contrib import admin
from django.db import models
from django.http import HttpRequest

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
