"""The application's database role has only the rights it needs: it cannot rewrite or hide audit history.

The test database is created and migrated by the owner role (as `manage.py migrate` is); these tests connect
as the application role (settings.ATHENA_DB_APP_ROLE), as the web and workers do, and try each attack.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator

import psycopg
import psycopg.sql
import pytest
from django.conf import settings
from django.contrib.auth.models import Group
from django.db import connection, transaction

from audit.services import audit_record

pytestmark = [pytest.mark.integration, pytest.mark.django_db(transaction=True)]


@pytest.fixture()
def app_db() -> Iterator[psycopg.Connection]:
    params = connection.settings_dict
    role = settings.ATHENA_DB_APP_ROLE
    # a single-role installation is the gap these tests exist to catch, not a case to skip: the application
    # must never connect as the role that owns (and can alter) the tables
    assert role != params["USER"], (
        f"the application role {role!r} is the owner role: set DATABASE_URL to a separate application role "
        "and ATHENA_MIGRATE_DATABASE_URL to the owner (deploy/roles.sql)"
    )
    conn = psycopg.connect(
        dbname=params["NAME"],
        user=role,
        host=params["HOST"],
        port=params["PORT"] or None,
        password=params.get("PASSWORD") or None,
        autocommit=True,
    )
    yield conn
    conn.close()


def _refused(conn: psycopg.Connection, sql: str) -> None:
    with pytest.raises(psycopg.errors.InsufficientPrivilege), conn.cursor() as cursor:
        cursor.execute(sql)


def test_the_application_role_is_no_superuser_and_owns_nothing(app_db) -> None:  # type: ignore[no-untyped-def]
    with app_db.cursor() as cursor:
        cursor.execute(
            "SELECT rolsuper, rolcreatedb, rolcreaterole, rolbypassrls FROM pg_roles WHERE rolname = current_user"
        )
        assert cursor.fetchone() == (False, False, False, False)
        cursor.execute(
            "SELECT count(*) FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace "
            "WHERE n.nspname = 'public' AND c.relowner = (SELECT oid FROM pg_roles WHERE rolname = current_user)"
        )
        assert cursor.fetchone() == (0,)


def test_the_application_role_can_append_and_read_the_audit_log(app_db) -> None:  # type: ignore[no-untyped-def]
    event = audit_record(kind="question", actor="alice", payload={"question": "q"})
    with app_db.cursor() as cursor:
        cursor.execute("SELECT hash FROM audit_auditevent WHERE id = %s", [event.pk])
        assert cursor.fetchone() == (event.hash,)
        cursor.execute(
            "INSERT INTO audit_auditevent (created_at, kind, actor, verdict, documents, payload, key_id, prev_hash, hash) "
            "VALUES (now(), 'probe', '', '', '[]', '{}', '', %s, %s)",
            [event.hash, "f" * 64],
        )
        # and it does its ordinary work on the other tables
        cursor.execute(
            "INSERT INTO knowledge_vendor (name, kind, aliases) VALUES ('ProbeCo', 'vendor', '{}')"
        )
        cursor.execute("UPDATE knowledge_vendor SET name = 'ProbeCo 2' WHERE name = 'ProbeCo'")
        cursor.execute("DELETE FROM knowledge_vendor WHERE name = 'ProbeCo 2'")


def test_the_application_role_may_analyze_the_index_but_not_the_audit_log(app_db) -> None:  # type: ignore[no-untyped-def]
    """An ingest refreshes the planner's statistics of the index it rewrote (MAINTAIN); the audit log gets no such
    right. The project's PostgreSQL (embedded, 18) has MAINTAIN; an older server would fail here, which is the
    point: there the ingest's ANALYZE is skipped with a warning and the statistics wait for autovacuum."""
    with app_db.cursor() as cursor:
        cursor.execute(
            "SELECT has_table_privilege(current_user, 'knowledge_chunk', 'MAINTAIN'), "
            "has_table_privilege(current_user, 'knowledge_posting', 'MAINTAIN'), "
            "has_table_privilege(current_user, 'audit_auditevent', 'MAINTAIN'), "
            "has_table_privilege(current_user, 'knowledge_document', 'MAINTAIN')"
        )
        assert cursor.fetchone() == (True, True, False, False)
        # the table was emptied before this test, which leaves it without statistics (-1); the application
        # role's ANALYZE takes effect (a skipped one would leave the -1)
        cursor.execute("SELECT reltuples FROM pg_class WHERE relname = 'knowledge_chunk'")
        assert cursor.fetchone() == (-1,)
        cursor.execute("ANALYZE knowledge_chunk")
        cursor.execute("SELECT reltuples FROM pg_class WHERE relname = 'knowledge_chunk'")
        assert cursor.fetchone() == (0,)


@pytest.mark.parametrize(
    "attack",
    [
        "UPDATE audit_auditevent SET payload = '{}'",
        "DELETE FROM audit_auditevent",
        "TRUNCATE audit_auditevent",
        "ALTER TABLE audit_auditevent DISABLE TRIGGER ALL",
        "ALTER TABLE audit_auditevent DISABLE TRIGGER audit_no_delete",
        "ALTER TABLE audit_auditevent ADD COLUMN note text",
        "DROP TABLE audit_auditevent",
        "DROP TRIGGER audit_no_delete ON audit_auditevent",
        "SET session_replication_role = replica",
        "TRUNCATE knowledge_document CASCADE",
        "ALTER TABLE knowledge_document ADD COLUMN note text",
        "CREATE TABLE public.shadow (id int)",
        "DELETE FROM django_migrations",
    ],
)
def test_the_application_role_cannot_rewrite_history(app_db, attack: str) -> None:  # type: ignore[no-untyped-def]
    audit_record(kind="question", actor="alice", payload={"question": "q"})
    _refused(app_db, attack)
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT tgname, tgenabled FROM pg_trigger WHERE tgrelid = 'audit_auditevent'::regclass"
        )
        # 'A': the append-only triggers fire ALWAYS, even in a replica-mode session
        assert dict(cursor.fetchall()) == {
            "audit_no_update": "A",
            "audit_no_delete": "A",
            "audit_no_truncate": "A",
        }
        cursor.execute("SELECT count(*) FROM audit_auditevent")
        assert cursor.fetchone() == (1,)


def test_the_application_role_cannot_give_a_deleted_groups_id_back(app_db) -> None:  # type: ignore[no-untyped-def]
    """A deleted group's id may stay in chunks' ACL copies (knowledge.models.RetiredGroup): the application role
    records a retired id, but cannot take one back, reuse it, or switch off the trigger that refuses it."""
    with app_db.cursor() as cursor:
        cursor.execute("INSERT INTO auth_group (name) VALUES ('probe-retired') RETURNING id")
        (group_id,) = cursor.fetchone()
        cursor.execute("DELETE FROM auth_group WHERE id = %s", [group_id])  # retired by the database
        cursor.execute(
            "INSERT INTO knowledge_retiredgroup (group_id, name, retired_at) VALUES (%s, 'probe-retired', now())"
            " ON CONFLICT (group_id) DO NOTHING",
            [group_id],
        )
        cursor.execute("SELECT name FROM knowledge_retiredgroup WHERE group_id = %s", [group_id])
        assert cursor.fetchone() == ("probe-retired",)
    _refused(app_db, f"DELETE FROM knowledge_retiredgroup WHERE group_id = {group_id}")
    _refused(app_db, f"UPDATE knowledge_retiredgroup SET group_id = -1 WHERE group_id = {group_id}")
    _refused(app_db, "ALTER TABLE auth_group DISABLE TRIGGER auth_group_id_not_retired")
    with pytest.raises(psycopg.errors.UniqueViolation), app_db.cursor() as cursor:
        cursor.execute("INSERT INTO auth_group (id, name) VALUES (%s, 'probe-again')", [group_id])
    # the sequence set back onto the retired id (by the owner, as loaddata or `sqlsequencereset` do): the
    # application role's next group draws past it, with the privileges it has
    from django.db import connection

    # without any right on the sequence too: an identity column needed none, and during `migrate` the grants
    # on the new sequence come only after the last migration
    role = psycopg.sql.Identifier(settings.ATHENA_DB_APP_ROLE).as_string(app_db)
    with connection.cursor() as cursor:
        cursor.execute("SELECT setval(pg_get_serial_sequence('auth_group', 'id'), %s, false)", [group_id])
        cursor.execute(f"REVOKE ALL ON SEQUENCE auth_group_id_seq FROM {role}")
    try:
        with app_db.cursor() as cursor:
            cursor.execute("INSERT INTO auth_group (name) VALUES ('probe-after-reset') RETURNING id")
            (drawn,) = cursor.fetchone()
            assert drawn > group_id
            cursor.execute("DELETE FROM auth_group WHERE id = %s", [drawn])
    finally:
        with connection.cursor() as cursor:
            cursor.execute(f"GRANT USAGE, SELECT ON SEQUENCE auth_group_id_seq TO {role}")


def test_a_group_created_with_an_id_whose_delete_commits_meanwhile_is_refused(app_db) -> None:  # type: ignore[no-untyped-def]
    """An id written while the delete of its group is still open (loaddata's explicit ids, as the application
    role): the insert waits on the deleted row's key and must then find the id retired, or the new group would
    read the chunks that still carry the old group's id (knowledge.models.RetiredGroup)."""
    group = Group.objects.create(name="probe-racing")
    group_id = group.pk
    outcome: list[BaseException | None] = []

    def insert_again() -> None:
        try:
            with app_db.cursor() as cursor:
                cursor.execute(
                    "INSERT INTO auth_group (id, name) VALUES (%s, 'probe-racing-again')", [group_id]
                )
            outcome.append(None)
        except BaseException as exc:  # noqa: BLE001 - the test reads what it was
            outcome.append(exc)

    inserter = threading.Thread(target=insert_again)
    with transaction.atomic():
        group.delete()  # retired in the delete's transaction (knowledge.apps, the post_delete signal)
        inserter.start()
        deadline = time.monotonic() + 10
        with connection.cursor() as cursor:
            while time.monotonic() < deadline:  # the insert waits for the deleted row's key
                cursor.execute(
                    "SELECT EXISTS (SELECT FROM pg_locks WHERE pid = %s AND NOT granted)",
                    [app_db.info.backend_pid],
                )
                if cursor.fetchone() == (True,):
                    break
                time.sleep(0.05)
            else:
                pytest.fail(f"the insert never waited for the delete: {outcome}")
    inserter.join(10)
    assert len(outcome) == 1 and isinstance(outcome[0], psycopg.errors.UniqueViolation), outcome
    assert not Group.objects.filter(pk=group_id).exists()


def test_a_table_of_the_sessions_own_cannot_hide_the_retired_ids_from_the_check(app_db) -> None:  # type: ignore[no-untyped-def]
    """PostgreSQL looks a table name up in the session's temporary tables first: a temporary table named as
    the retired ids' must not stand in for them in the trigger's check."""
    group = Group.objects.create(name="probe-shadowed")
    group_id = group.pk
    group.delete()  # retired (knowledge.apps, the post_delete signal)
    with app_db.cursor() as cursor:
        cursor.execute("CREATE TEMPORARY TABLE knowledge_retiredgroup (group_id bigint)")
    with pytest.raises(psycopg.errors.UniqueViolation), app_db.cursor() as cursor:
        cursor.execute("INSERT INTO auth_group (id, name) VALUES (%s, 'probe-shadowed-again')", [group_id])
