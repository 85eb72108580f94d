"""Backup and restore as README's "Backup and restore" section tells an operator: `manage.py backup DIR` on a
running stack, the disk then lost (the whole var/ folder deleted), and `manage.py restore DIR` into a fresh var/
folder on other ports, then the stack started again. Everything is driven through the commands and the HTTP API
of two stacks of their own, never the test database.

Checked after the restore: every document, chunk and private upload is back and answers its readers; restricted
documents and uploads stay unreadable to everyone else; `audit_verify` finds the chain intact against the
restored checkpoints, and new events continue its ids and chain on; the application role still owns nothing and
cannot touch the audit log; an upload's file is found in the new media folder (its expiry deletes it); and the
refusals: a backup into a folder that exists, a restore over a knowledge base, a backup from a newer Athena and a
restore under another audit key."""

from __future__ import annotations

import fcntl
import json
import os
import shutil
import stat
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest

from tests.disks import small_disk
from tests.launcher import free_port

pytestmark = [pytest.mark.integration, pytest.mark.slow]

ROOT = Path(__file__).resolve().parents[2]
SAMPLE = ROOT / "knowledge" / "sample_kb"
UPLOAD_NAME = "lab-notes.md"
UPLOAD_TEXT = (
    b"# Lab notes\n\nThe lab switch quartz-61 puts quarantined hosts on VLAN 3917.\n"
    b"Its console server listens on port 7042.\n"
)
UPLOAD_QUESTION = "Which VLAN does the lab switch quartz-61 use for quarantined hosts?"
RESTRICTED_QUESTION = "Where in NWVault are the network break-glass passwords kept?"
RESTRICTED_SOURCE = "restricted/sop-break-glass-credentials.md"


class Stack:
    """One stack (PostgreSQL, Redis, web) in a var/ folder and on ports of its own, answering in the web process
    (no worker: the models load once, in gunicorn)."""

    def __init__(self, name: str) -> None:
        self.var = Path("/tmp") / f"athena-{name}-{os.getpid()}"  # short: the socket path is limited
        shutil.rmtree(self.var, ignore_errors=True)
        env = dict(os.environ)
        for variable in ("DATABASE_URL", "REDIS_URL", "ATHENA_MIGRATE_DATABASE_URL"):
            env.pop(variable, None)
        env.update(
            {
                "ATHENA_VAR_DIR": str(self.var),
                "ATHENA_PG_PORT": str(free_port()),
                "ATHENA_REDIS_PORT": str(free_port()),
                "PORT": str(free_port()),
                "DJANGO_SETTINGS_MODULE": "athena.settings.local",
                "ATHENA_REALTIME_VIA_CELERY": "false",
                "ATHENA_WEB_WORKERS": "1",
                "ATHENA_QUESTIONS_PER_HOUR": "10000",
                "HF_HUB_OFFLINE": "1",
                "TRANSFORMERS_OFFLINE": "1",
                "DO_NOT_TRACK": "1",
            }
        )
        self.env = env
        self.tokens: dict[str, str] = {}

    def manage(self, *args: str, check: bool = True, env: dict[str, str] | None = None) -> Any:
        result = subprocess.run(
            [sys.executable, "manage.py", *args],
            cwd=ROOT,
            env={**self.env, **(env or {})},
            capture_output=True,
            text=True,
            timeout=600,
        )
        if check and result.returncode != 0:
            raise AssertionError(f"manage.py {' '.join(args)} failed:\n{result.stdout}\n{result.stderr}")
        return result

    def down(self) -> None:
        self.manage("stack", "down", check=False)

    def sql(self, query: str, *params: Any, user: str = "postgres") -> list[tuple]:
        with psycopg.connect(
            host=str(self.var / "run"), port=self.env["ATHENA_PG_PORT"], user=user, dbname="athena"
        ) as conn:
            cursor = conn.execute(query, params)
            return cursor.fetchall() if cursor.description else []

    def request(
        self, user: str, path: str, body: Any = None, *, files: bytes | None = None
    ) -> tuple[int, Any]:
        headers = {"Authorization": f"Token {self.tokens[user]}"}
        data = None
        if files is not None:
            boundary = "athena-backup-test"
            headers["Content-Type"] = f"multipart/form-data; boundary={boundary}"
            data = (
                (
                    f'--{boundary}\r\nContent-Disposition: form-data; name="file"; filename="{UPLOAD_NAME}"\r\n'
                    "Content-Type: text/markdown\r\n\r\n"
                ).encode()
                + files
                + f"\r\n--{boundary}--\r\n".encode()
            )
        elif body is not None:
            headers["Content-Type"] = "application/json"
            data = json.dumps(body).encode()
        request = urllib.request.Request(
            f"http://127.0.0.1:{self.env['PORT']}/api/v1/{path}", data=data, headers=headers
        )
        try:
            with urllib.request.urlopen(request, timeout=300) as response:
                return response.status, json.loads(response.read())
        except urllib.error.HTTPError as error:
            return error.code, json.loads(error.read() or b"{}")

    def ask(self, user: str, question: str) -> dict[str, Any]:
        status, body = self.request(user, "ask", {"question": question})
        assert status == 200, body
        return body

    def wait_for_web(self) -> None:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{self.env['PORT']}/api/v1/health", timeout=5):
                    return
            except urllib.error.HTTPError:
                return  # it answers (503 without a worker, which this stack does not run)
            except (urllib.error.URLError, OSError):
                time.sleep(0.5)
        raise AssertionError(f"the web server did not answer; see {self.var / 'log'}")


def cited(answer: dict[str, Any]) -> set[str]:
    return {citation["document"] for citation in answer["citations"]}


def audit_head(stack: Stack) -> tuple[int, str]:
    rows = stack.sql("SELECT id, hash FROM audit_auditevent ORDER BY id DESC LIMIT 1")
    return rows[0][0], rows[0][1]


@pytest.fixture()
def stacks() -> Iterator[tuple[Stack, Stack]]:
    first, second = Stack("backup-a"), Stack("backup-b")
    try:
        yield first, second
    finally:
        for stack in (first, second):
            stack.down()
            shutil.rmtree(stack.var, ignore_errors=True)


def test_a_backup_of_a_running_stack_restores_into_a_fresh_var_folder(stacks: tuple[Stack, Stack]) -> None:
    old, new = stacks
    backup = Path(f"{old.var}-backup")
    shutil.rmtree(backup, ignore_errors=True)
    try:
        _backup_restore_and_check(old, new, backup)
    finally:
        shutil.rmtree(backup, ignore_errors=True)


def _backup_restore_and_check(old: Stack, new: Stack, backup: Path) -> None:
    # --- a knowledge base in use: documents of two tiers, a private upload, questions, a vote, a checkpoint
    old.manage("stack", "up", "--only", "postgres,redis")
    old.manage("migrate", "--verbosity", "0")
    old.manage("adduser", "alice", "--group", "employees")
    old.manage("adduser", "bob", "--group", "employees", "--group", "noc-admins")
    for user in ("alice", "bob"):
        old.tokens[user] = old.manage("drf_create_token", user).stdout.split()[2]
    corpus = old.var / "corpus"
    corpus.mkdir(parents=True)
    for name in ("config-cisco-iosxe-bgp.md", "config-chrony-ntp.md"):
        shutil.copy(SAMPLE / "public" / name, corpus / name)
    old.manage("ingest", str(corpus), "--prefix", "public/", "--access-tier", "internal", "--inline")
    restricted = old.var / "restricted"
    shutil.copytree(SAMPLE / "restricted", restricted)
    old.manage(
        "ingest", str(restricted), "--prefix", "restricted/", "--access-tier", "restricted",
        "--acl-group", "noc-admins", "--inline",
    )  # fmt: skip
    old.manage("stack", "up", "--only", "web")
    old.wait_for_web()
    status, uploaded = old.request("alice", "documents/upload", files=UPLOAD_TEXT)
    assert status == 201 and uploaded["status"] == "indexed", uploaded
    alice_upload = old.ask("alice", UPLOAD_QUESTION)
    assert uploaded["source"] in cited(alice_upload), alice_upload
    assert RESTRICTED_SOURCE in cited(old.ask("bob", RESTRICTED_QUESTION))
    status, vote = old.request("alice", f"answers/{alice_upload['answer_id']}/feedback", {"vote": "up"})
    assert status == 201, vote
    assert "checkpoint written" in old.manage("audit_verify", "--checkpoint").stdout
    documents = old.sql("SELECT source, status, access_tier FROM knowledge_document ORDER BY source")
    chunks = old.sql("SELECT count(*) FROM knowledge_chunk")[0][0]
    head_id, head_hash = audit_head(old)

    # --- the backup, taken the way README says, while the web server runs
    made = old.manage("backup", str(backup))
    assert (backup / "manifest.json").is_file(), made.stdout
    # it holds every restricted document, password hashes and tokens: no other local account may read it
    assert stat.S_IMODE(backup.stat().st_mode) == 0o700
    assert stat.S_IMODE((backup / "database.dump").stat().st_mode) == 0o600
    # a second backup into the same folder would mix two snapshots: refused, the first left as it was
    again = old.manage("backup", str(backup), check=False)
    assert again.returncode != 0 and "exists" in again.stderr, again
    assert (
        json.loads((backup / "manifest.json").read_text())["database"]["tables"]["knowledge_chunk"] == chunks
    )
    # a disk too small for the dump: refused saying so, and nothing that looks like a backup is left there
    with small_disk(old.var.with_name(old.var.name + "-small"), "256k") as small:
        full = old.manage("backup", str(small / "backup"), check=False)
        assert full.returncode != 0 and "no space left" in full.stderr, full
        assert list(small.iterdir()) == []

    # --- the disk dies: nothing of the old var/ folder is left
    old.down()
    shutil.rmtree(old.var)

    # refused before anything is touched: a backup made by a newer Athena (a migration this code lacks), and a
    # restore under another audit key (the backup never holds the key; the chain could not be verified)
    newer = Path(f"{backup}-newer")
    shutil.copytree(backup, newer)
    try:
        manifest = json.loads((newer / "manifest.json").read_text())
        manifest["database"]["migrations"].append(["knowledge", "9999_from_the_future"])
        (newer / "manifest.json").write_text(json.dumps(manifest))
        refused = new.manage("restore", str(newer), check=False)
        assert refused.returncode != 0 and "9999_from_the_future" in refused.stderr, refused
    finally:
        shutil.rmtree(newer)
    other_key = new.manage(
        "restore", str(backup), check=False, env={"ATHENA_AUDIT_KEY": "another-audit-key-" + "x" * 30}
    )
    assert other_key.returncode != 0 and "ATHENA_AUDIT_KEY" in other_key.stderr, other_key
    assert not (new.var / "media").exists()

    # --- not while a `make run` is starting the new folder's stack (this test holds its launcher lock)
    new.var.mkdir(parents=True, exist_ok=True)
    lock = os.open(new.var / "launcher.lock", os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        os.write(lock, f"bootstrap {os.getpid()}".encode())
        starting = new.manage("restore", str(backup), check=False)
    finally:
        os.close(lock)
    assert starting.returncode != 0 and "is starting this stack" in starting.stderr, starting
    assert not (new.var / "media").exists()

    # --- the restore into a fresh var/ folder, then the stack as `make run` starts it
    restored = new.manage("restore", str(backup))
    checkpoint_file = new.var / "audit" / "checkpoints.jsonl"
    assert stat.S_IMODE(checkpoint_file.stat().st_mode) == 0o600  # as the audit writes it
    assert "chain intact" in restored.stdout, restored.stdout
    over = new.manage("restore", str(backup), check=False)
    assert over.returncode != 0 and "not empty" in over.stderr, over  # never over a knowledge base
    new.manage("stack", "up", "--only", "redis,web")
    new.wait_for_web()
    new.tokens = dict(old.tokens)  # tokens are rows of the database: the clients keep working

    assert new.sql("SELECT source, status, access_tier FROM knowledge_document ORDER BY source") == documents
    assert new.sql("SELECT count(*) FROM knowledge_chunk")[0][0] == chunks
    # the upload answers its owner, from its file's new place, and no one else
    assert uploaded["source"] in cited(new.ask("alice", UPLOAD_QUESTION))
    assert uploaded["source"] not in cited(new.ask("bob", UPLOAD_QUESTION))
    (upload_path,) = new.sql(
        "SELECT source_path FROM knowledge_document WHERE source = %s", uploaded["source"]
    )[0]
    assert Path(upload_path) == new.var / "media" / uploaded["source"]
    assert Path(upload_path).read_bytes() == UPLOAD_TEXT
    # restricted stays restricted
    assert RESTRICTED_SOURCE in cited(new.ask("bob", RESTRICTED_QUESTION))
    outsider = new.ask("alice", RESTRICTED_QUESTION)
    assert outsider["abstained"] and not any(c.startswith("restricted/") for c in cited(outsider)), outsider

    # the audit chain: intact against the restored checkpoints; new events continue the ids and the chain
    verified = new.manage("audit_verify").stdout
    assert "chain intact" in verified and f"checkpoint at event {head_id}" in verified, verified
    (first_new,) = new.sql(
        "SELECT id, prev_hash FROM audit_auditevent WHERE id > %s ORDER BY id LIMIT 1", head_id
    )
    assert first_new == (head_id + 1, head_hash)
    assert "chain intact" in new.manage("audit_verify", "--checkpoint").stdout

    # least privilege as before: the application role owns nothing and cannot rewrite the audit log
    owned = new.sql(
        "SELECT count(*) FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace "
        "WHERE n.nspname = 'public' AND c.relowner = 'athena_app'::regrole"
    )
    assert owned == [(0,)]
    for attack in (
        "DELETE FROM audit_auditevent",
        "UPDATE audit_auditevent SET payload = '{}'",
        "ALTER TABLE audit_auditevent DISABLE TRIGGER ALL",
        "TRUNCATE knowledge_document CASCADE",
    ):
        with pytest.raises(psycopg.errors.InsufficientPrivilege):
            new.sql(attack, user="athena_app")

    # the upload still expires: its file, in the new media folder, is deleted with it
    new.sql("UPDATE knowledge_document SET expires_at = now() - interval '1 minute' WHERE source = %s",
            uploaded["source"])  # fmt: skip
    new.manage("shell", "-c", "from knowledge.services import uploads_expire; uploads_expire()")
    assert not Path(upload_path).exists()


@pytest.mark.django_db
def test_stored_paths_move_with_the_most_specific_folder_they_lie_in() -> None:
    """A restore onto a machine whose checkout and var/ folder are elsewhere: the media folder (inside the old
    checkout) moves to the new var/ folder, not with the checkout; other folders, and a folder whose name only
    begins like the checkout's, stay."""
    from knowledge.models import Document
    from knowledge.services import document_paths_relocate
    from tests.factories import DocumentFactory

    sample, upload, elsewhere, lookalike = (DocumentFactory() for _ in range(4))
    stored = {
        sample.pk: ("/old/athena/knowledge/sample_kb/public/a.md", "/old/athena/knowledge/sample_kb/public"),
        upload.pk: ("/old/athena/var/media/uploads/1/n.md", "/old/athena/var/media"),
        elsewhere.pk: ("/srv/docs/x.md", "/srv/docs"),
        lookalike.pk: ("/old/athena-2/y.md", "/old/athena-2"),
    }
    for pk, (path, root) in stored.items():
        Document.objects.filter(pk=pk).update(source_path=path, source_root=root)

    moved = document_paths_relocate(
        moves=[("/old/athena/var/media", "/data/var/media"), ("/old/athena", "/opt/athena")]
    )

    assert moved == 2
    now = {
        pk: (path, root)
        for pk, path, root in Document.objects.values_list("pk", "source_path", "source_root")
    }
    assert now[sample.pk] == (
        "/opt/athena/knowledge/sample_kb/public/a.md",
        "/opt/athena/knowledge/sample_kb/public",
    )
    assert now[upload.pk] == ("/data/var/media/uploads/1/n.md", "/data/var/media")
    assert now[elsewhere.pk] == stored[elsewhere.pk]
    assert now[lookalike.pk] == stored[lookalike.pk]
