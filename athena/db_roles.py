"""Least-privilege database roles.

Two roles share the database:

- the **owner** role owns the database, its schema objects and runs migrations (`manage.py migrate` uses the
  `owner` connection alias; see athena/management/commands/migrate.py);
- the **application** role (web, workers, beat) has only the data rights it needs: SELECT/INSERT/UPDATE/
  DELETE on the application's tables, but only INSERT and SELECT on the audit log (and the other append-only
  tables the apps register: knowledge's retired group ids), read-only on
  django_migrations, no TRUNCATE anywhere, and it owns nothing, so it cannot ALTER a table, disable a trigger,
  or (not being a superuser) set session_replication_role. On the search index's tables (registered by the
  apps that own them) it also has MAINTAIN (PostgreSQL 17 and later), so that an ingest can ANALYZE what it
  rewrote: the planner then plans the next question on the index as it is, not as it was.

The grants are (re)applied after every `migrate` (a post_migrate handler, so new tables are covered), by the
owner, to the role named by settings.ATHENA_DB_APP_ROLE. For the embedded PostgreSQL, `stack up` creates both
roles; for an external server, deploy/roles.sql shows what the DBA runs once.
"""

from __future__ import annotations

from typing import Any

from django.db import connections

READ_ONLY_TABLES = ("django_migrations",)
# Tables the application may only INSERT into and SELECT from, named by the apps that own them (the audit log,
# registered by audit's AppConfig.ready): the core knows no app's table.
APPEND_ONLY_TABLES: set[str] = set()


def append_only_table_register(table: str) -> None:
    """Make the application role's rights on `table` INSERT and SELECT only, from the next grant on."""
    APPEND_ONLY_TABLES.add(table)


# Tables the application may ANALYZE after rewriting them (MAINTAIN, PostgreSQL 17 and later): the search
# index's, registered by the app that owns them. Never the audit log.
MAINTAINED_TABLES: set[str] = set()
MAINTAIN_SINCE = 170000  # server_version_num of the first release with the MAINTAIN privilege


def maintained_table_register(table: str) -> None:
    """Let the application role ANALYZE `table` (MAINTAIN), from the next grant on."""
    MAINTAINED_TABLES.add(table)


def _quote(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def app_privileges_grant(*, using: str, app_role: str) -> bool:
    """Grant the application role its rights on every table of the public schema of the `using` database
    (run as the owner). Returns False (and does nothing) when the role does not exist or is the connection's
    own role (a single-role installation)."""
    connection = connections[using]
    with connection.cursor() as cursor:
        cursor.execute("SELECT current_user, EXISTS (SELECT 1 FROM pg_roles WHERE rolname = %s)", [app_role])
        current, exists = cursor.fetchone()
        if not exists or current == app_role:
            return False
        role = _quote(app_role)
        cursor.execute(f"GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA public TO {role}")
        cursor.execute(f"GRANT USAGE, SELECT ON ALL SEQUENCES IN SCHEMA public TO {role}")
        cursor.execute(f"REVOKE TRUNCATE, REFERENCES, TRIGGER ON ALL TABLES IN SCHEMA public FROM {role}")
        cursor.execute(
            "SELECT tablename FROM pg_tables WHERE schemaname = 'public' AND tablename = ANY(%s)",
            [[*sorted(APPEND_ONLY_TABLES), *READ_ONLY_TABLES]],
        )
        present = {row[0] for row in cursor.fetchall()}
        for table in sorted(APPEND_ONLY_TABLES):
            if table in present:
                # the audit log is append-only for the application: the database refuses the rest
                cursor.execute(f"REVOKE UPDATE, DELETE ON {table} FROM {role}")
        for table in READ_ONLY_TABLES:
            if table in present:
                cursor.execute(f"REVOKE INSERT, UPDATE, DELETE ON {table} FROM {role}")
        cursor.execute("SELECT current_setting('server_version_num')::int")
        if cursor.fetchone()[0] >= MAINTAIN_SINCE:
            cursor.execute(
                "SELECT tablename FROM pg_tables WHERE schemaname = 'public' AND tablename = ANY(%s)",
                [sorted(MAINTAINED_TABLES - APPEND_ONLY_TABLES)],
            )
            for (table,) in cursor.fetchall():
                cursor.execute(f"GRANT MAINTAIN ON {_quote(table)} TO {role}")
    return True


def post_migrate_grant(sender: Any, using: str = "default", **kwargs: Any) -> None:
    """post_migrate handler: re-apply the application role's grants after the owner migrated."""
    from django.conf import settings

    app_role = getattr(settings, "ATHENA_DB_APP_ROLE", "")
    if app_role:
        app_privileges_grant(using=using, app_role=app_role)
