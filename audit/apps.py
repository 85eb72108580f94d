from __future__ import annotations

from typing import Any

from django.apps import AppConfig


class AuditConfig(AppConfig):
    name = "audit"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from django.contrib.auth.signals import user_login_failed
        from django.db.models.signals import post_migrate

        from athena.db_roles import post_migrate_grant

        user_login_failed.connect(login_failure_record, dispatch_uid="audit_login_failed")
        # after the owner migrated, the application role gets its (audit: INSERT/SELECT only) rights
        post_migrate.connect(post_migrate_grant, sender=self, dispatch_uid="athena_app_role_grants")


def login_failure_record(
    sender: Any, credentials: dict[str, Any], request: Any = None, **kwargs: Any
) -> None:
    """Every failed sign-in is audited with the attempted user name (never the password) and address."""
    from audit.services import audit_record

    username = str(credentials.get("username", ""))[:150]
    address = request.META.get("REMOTE_ADDR", "") if request is not None else ""
    audit_record(
        kind="login_failed",
        actor=username,
        verdict="denied",
        payload={"username": username, "remote_addr": address},
    )
