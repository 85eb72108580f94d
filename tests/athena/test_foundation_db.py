import pytest
from django.core.management import call_command
from django.db import connection

from knowledge.models import HNSW_EF_CONSTRUCTION, HNSW_M, Document

pytestmark = [pytest.mark.integration, pytest.mark.django_db]


def test_pgvector_extension_and_hnsw_index_exist():
    with connection.cursor() as cursor:
        cursor.execute("SELECT extversion FROM pg_extension WHERE extname = 'vector'")
        assert cursor.fetchone() is not None
        cursor.execute("SELECT indexdef FROM pg_indexes WHERE indexname = 'chunk_embedding_hnsw'")
        (indexdef,) = cursor.fetchone()
        assert "USING hnsw" in indexdef and "vector_cosine_ops" in indexdef
        # the build parameters the migrations leave are the ones reembed and the benchmarks rebuild with
        assert f"WITH (m='{HNSW_M}', ef_construction='{HNSW_EF_CONSTRUCTION}')" in indexdef, indexdef
        cursor.execute(
            "SELECT format_type(atttypid, atttypmod) FROM pg_attribute "
            "WHERE attrelid = 'knowledge_chunk'::regclass AND attname = 'embedding'"
        )
        assert cursor.fetchone()[0] == "vector(384)"
        cursor.execute("SELECT indexdef FROM pg_indexes WHERE indexname = 'knowledge_posting_pkey'")
        assert "INCLUDE (tf, doc_len)" in cursor.fetchone()[0]


def test_adduser_creates_user_with_groups(capsys):
    from django.contrib.auth.models import User

    call_command("adduser", "dana", "--group", "noc-admins", "--group", "employees")
    call_command("adduser", "dana", "--group", "compliance")  # second run updates, never duplicates
    user = User.objects.get(username="dana")
    assert sorted(g.name for g in user.groups.all()) == ["compliance", "employees", "noc-admins"]
    assert not user.has_usable_password()
    assert "updated user dana" in capsys.readouterr().out


def test_adduser_rejects_bad_names():
    from django.core.management.base import CommandError

    with pytest.raises(CommandError, match="invalid user name"):
        call_command("adduser", "bad name!")


def test_acl_groups_on_documents():
    from django.contrib.auth.models import Group

    admins = Group.objects.create(name="noc-admins")
    doc = Document.objects.create(source="a.md", access_tier="restricted")
    doc.allowed_groups.add(admins)
    assert list(Document.objects.filter(allowed_groups__name="noc-admins")) == [doc]


@pytest.mark.django_db(transaction=True)
def test_adduser_reads_a_password_from_standard_input_not_the_command_line():
    """`--password P` puts the password in the command line, which every local account reads in the process
    list (and the shell keeps in its history); `--password -` takes it from standard input instead."""
    import os
    import subprocess
    import sys

    from django.conf import settings
    from django.contrib.auth.models import User

    from tests.launcher import ROOT

    env = {**os.environ, "ATHENA_DB_NAME": settings.DATABASES["default"]["NAME"]}

    def adduser(*args: str, typed: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "manage.py", "adduser", "erin", *args, "--password", "-"],
            input=typed,
            cwd=ROOT,
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
        )

    done = adduser("--group", "employees", typed="a-long-passphrase-from-stdin\n")
    assert done.returncode == 0, done.stderr
    user = User.objects.get(username="erin")
    assert user.check_password("a-long-passphrase-from-stdin") and not user.check_password("-")
    empty = adduser(typed="")
    assert empty.returncode != 0 and "no password" in empty.stderr, empty.stderr
    assert User.objects.get(username="erin").check_password("a-long-passphrase-from-stdin")
