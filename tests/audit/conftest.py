from __future__ import annotations

from collections.abc import Callable

import pytest
from django.db import connection


@pytest.fixture()
def tamper() -> Callable[[str, str, list[object]], None]:
    """Run one statement on the audit table with its guard `trigger` switched off, as the database owner
    (tests run as the superuser) could."""

    def run(trigger: str, sql: str, params: list[object]) -> None:
        with connection.cursor() as cursor:
            cursor.execute(f"ALTER TABLE audit_auditevent DISABLE TRIGGER {trigger}")
            cursor.execute(sql, params)
            cursor.execute(f"ALTER TABLE audit_auditevent ENABLE TRIGGER {trigger}")

    return run
