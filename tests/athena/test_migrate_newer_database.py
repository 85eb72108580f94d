"""`manage.py migrate` (and so `bootstrap`, `make run` and the deploy/ migrate jobs) refuses a database that a newer
release migrated: older code on it writes rows without the columns the newer schema requires (a NOT NULL column
added since fails every ingest: the old `make run` waited for its sample documents for ever, the worker log full
of IntegrityErrors), and reads answers and documents its code does not know the shape of."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.db import connection

pytestmark = [pytest.mark.integration, pytest.mark.django_db(transaction=True)]


@pytest.fixture()
def applied_rows() -> Iterator[list[tuple[str, str]]]:
    """Rows to add to django_migrations for one test (removed afterwards: the test database is shared)."""
    rows: list[tuple[str, str]] = []
    yield rows
    with connection.cursor() as cursor:
        for app, name in rows:
            cursor.execute("DELETE FROM django_migrations WHERE app = %s AND name = %s", [app, name])


def _record_applied(rows: list[tuple[str, str]], app: str, name: str) -> None:
    rows.append((app, name))
    with connection.cursor() as cursor:
        cursor.execute(
            "INSERT INTO django_migrations (app, name, applied) VALUES (%s, %s, now())", [app, name]
        )


def test_a_database_migrated_by_a_newer_release_is_refused(applied_rows: list[tuple[str, str]]) -> None:
    _record_applied(applied_rows, "knowledge", "9017_from_a_newer_release")
    _record_applied(applied_rows, "audit", "9005_from_a_newer_release")
    with pytest.raises(CommandError) as refused:
        call_command("migrate", interactive=False, verbosity=0)
    message = str(refused.value)
    assert "newer release" in message
    assert "audit.9005_from_a_newer_release" in message and "knowledge.9017_from_a_newer_release" in message


def test_the_rows_of_migrations_deleted_after_a_squash_are_no_newer_release(
    applied_rows: list[tuple[str, str]],
) -> None:
    """Django leaves the rows of migrations that a squashed one replaced after their files are deleted: they are
    numbered below the migrations this code has, and are not taken for a newer release's."""
    _record_applied(applied_rows, "knowledge", "0000_deleted_after_a_squash")
    call_command("migrate", interactive=False, verbosity=0)  # nothing to apply, nothing refused
