from __future__ import annotations

from typing import Any

from django.apps import AppConfig


class AuditConfig(AppConfig):
    name = "audit"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from django.contrib.auth.signals import user_logged_in, user_login_failed
        from django.db.models.signals import post_migrate

        from athena.db_roles import append_only_table_register, post_migrate_grant
        from athena.throttling import security_event
        from audit.models import AuditEvent

        user_login_failed.connect(login_failure_record, dispatch_uid="audit_login_failed")
        security_event.connect(security_event_record, dispatch_uid="audit_security_event")
        user_logged_in.connect(login_success_record, dispatch_uid="audit_login_succeeded")
        # after the owner migrated, the application role gets its (audit: INSERT/SELECT only) rights
        append_only_table_register(AuditEvent._meta.db_table)
        post_migrate.connect(post_migrate_grant, sender=self, dispatch_uid="athena_app_role_grants")


def login_failure_record(
    sender: Any, credentials: dict[str, Any], request: Any = None, **kwargs: Any
) -> None:
    """Every failed sign-in (counted for sign-in throttling before its password was checked, by
    athena.auth.ThrottledModelBackend) is audited with the attempted user name (never the password) and
    address -- aggregated: per login name and hour the 1st, 10th, 100th ... failure is written with the count,
    so guessing cannot flood the chain."""
    from athena.auth import client_address
    from athena.throttling import login_counted_over_limit
    from audit.aggregation import audit_aggregated

    username = str(credentials.get("username", ""))[:150]
    address = client_address(request)
    # counted already, before its password was checked (athena.auth.ThrottledModelBackend)
    blocked = login_counted_over_limit(username, address)
    audit_aggregated(
        kind="login_failed",
        actor=username,
        subject=username,
        verdict="blocked" if blocked else "denied",
        payload={"username": username, "remote_addr": address, "throttled": blocked},
    )


def login_success_record(sender: Any, request: Any = None, user: Any = None, **kwargs: Any) -> None:
    from athena.auth import client_address
    from athena.throttling import login_success_clear

    if user is not None:
        login_success_clear(user.get_username(), client_address(request))


def security_event_record(
    sender: Any, *, kind: str, actor: Any, subject: str, payload: dict[str, Any], verdict: str, **kwargs: Any
) -> None:
    """A throttling or enumeration event raised by athena.throttling, audited aggregated per subject and hour."""
    from audit.aggregation import audit_aggregated

    audit_aggregated(kind=kind, actor=actor, subject=subject, payload=payload, verdict=verdict)
