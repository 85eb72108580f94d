"""Role checks. Roles are Django groups (athena.services.ROLE_*), so admins manage them in the admin."""

from __future__ import annotations

from typing import Any

from rest_framework import status
from rest_framework.permissions import BasePermission

from athena.errors import ApplicationError
from athena.services import ROLE_ADMIN, ROLE_COMPLIANCE


def user_in_group(user: Any, group: str) -> bool:
    if not getattr(user, "is_authenticated", False):
        return False
    return user.groups.filter(name=group).exists()


def is_kb_admin(user: Any) -> bool:
    """Knowledge-base admins curate documents; a Django superuser is one too. Being an admin grants no extra
    *reading* rights: questions and document lists stay ACL-filtered like anyone's."""
    return bool(getattr(user, "is_superuser", False)) or user_in_group(user, ROLE_ADMIN)


def is_compliance(user: Any) -> bool:
    """Compliance staff only (not superusers): the audit log holds every user's questions and evidence."""
    return user_in_group(user, ROLE_COMPLIANCE)


class IsKbAdmin(BasePermission):
    message = "this operation is for knowledge-base admins"

    def has_permission(self, request: Any, view: Any) -> bool:
        return is_kb_admin(request.user)


class IsCompliance(BasePermission):
    message = "the audit log is for compliance staff"

    def has_permission(self, request: Any, view: Any) -> bool:
        return is_compliance(request.user)


class PayloadTooLarge(ApplicationError):
    code = "too_large"
    http_status = status.HTTP_413_REQUEST_ENTITY_TOO_LARGE


def body_limit(request: Any, max_bytes: int) -> None:
    """Refuse an oversized JSON body before it is read (DRF streams bodies past Django's own limit)."""
    try:
        length = int(request.META.get("CONTENT_LENGTH") or 0)
    except ValueError:
        length = 0
    if length > max_bytes:
        raise PayloadTooLarge(f"request body too large ({length} bytes; at most {max_bytes})")
