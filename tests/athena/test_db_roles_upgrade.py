"""A database made before the two roles existed (every object owned by the superuser) is handed to the owner
role when the stack starts: tables, their serial sequences, views and functions alike."""

from __future__ import annotations

import subprocess
import uuid

import pytest
from django.conf import settings

from athena.stack import pg_ensure_database, psql_command

pytestmark = [pytest.mark.integration]


@pytest.mark.skipif(not settings.EMBEDDED_POSTGRES, reason="needs the embedded server's superuser")
def test_an_older_database_with_serial_sequences_is_handed_to_the_owner_role() -> None:
    port = settings.PG_PORT
    name = f"upgrade_{uuid.uuid4().hex[:8]}"
    subprocess.run([*psql_command(port), f'CREATE DATABASE "{name}"'], check=True, capture_output=True)
    try:
        subprocess.run(
            [
                *psql_command(port, name),
                # the sequence is older than its table (as Django's serial columns often end up after later
                # migrations): the hand-over meets it first
                "CREATE SEQUENCE legacy_item_id_seq; "
                "CREATE TABLE legacy_item (id int PRIMARY KEY DEFAULT nextval('legacy_item_id_seq'), label text); "
                "ALTER SEQUENCE legacy_item_id_seq OWNED BY legacy_item.id; "
                "CREATE VIEW legacy_view AS SELECT id FROM legacy_item; "
                "CREATE FUNCTION legacy_fn() RETURNS int LANGUAGE sql AS 'SELECT 1';",
            ],
            check=True,
            capture_output=True,
        )
        owner, app = settings.EMBEDDED_OWNER_ROLE, settings.EMBEDDED_APP_ROLE
        pg_ensure_database(name, port, owner=owner, app=app)  # used to fail on the serial's sequence
        owners = subprocess.run(
            [
                *psql_command(port, name),
                "SELECT c.relname || '=' || pg_get_userbyid(c.relowner) FROM pg_class c "
                "JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = 'public' "
                "AND c.relkind IN ('r', 'S', 'v') UNION ALL SELECT 'legacy_fn=' || pg_get_userbyid(proowner) "
                "FROM pg_proc WHERE proname = 'legacy_fn' ORDER BY 1",
            ],
            check=True,
            capture_output=True,
            text=True,
        ).stdout.split()
        assert owners == [
            f"legacy_fn={owner}",
            f"legacy_item={owner}",
            f"legacy_item_id_seq={owner}",
            f"legacy_view={owner}",
        ]
    finally:
        subprocess.run(
            [*psql_command(port), f'DROP DATABASE IF EXISTS "{name}"'], check=False, capture_output=True
        )
