"""Backup of the embedded stack, and its restore into a fresh var/ folder (`manage.py backup|restore DIR`).

A backup is a folder that holds everything of a knowledge base that exists nowhere else:

    manifest.json          what it holds: format, time, where it came from (checkout, var/ and media folders),
                           the server's version, the applied migrations, every table's row count, the
                           fingerprints of the audit keys, and the size and SHA-256 of each file below
    database.dump          pg_dump (custom format) of the database: documents, chunks and their vectors, BM25
                           postings, the knowledge graph, users, groups and tokens, answers, votes and the audit
                           log, with the ownership and grants of the two roles (athena/db_roles.py), the audit
                           log's triggers, and the sequences (new rows go on numbering after the restored ones)
    files/media/...        the private uploads (MEDIA_ROOT)
    files/audit/checkpoints.jsonl   the signed checkpoints of the audit chain's head

What it does not hold: the secrets (ATHENA_SECRET_KEY, ATHENA_AUDIT_KEY and ATHENA_AUDIT_OLD_KEYS: they come from
the environment and must be kept apart from the backup), Redis (conversation memory, throttles, queued tasks:
lossy by design), logs, collected static files and the ONNX export (`make run` and `make install` make them
again), and the folders documents were ingested from (the operator's own; their chunks are in the database).

Consistency while the stack runs: the checkpoints are copied first, then the database is dumped in one snapshot
(each checkpoint then names an event the dump holds: copied after, a newer checkpoint would read as a deleted
tail), and the uploads are copied last (every upload the dump knows is on disk by then). The manifest's counts
and migrations are read in the very snapshot pg_dump dumps.

The backup is written to DIR.partial and renamed to DIR when whole: a backup that failed (a full disk) leaves
nothing that looks like one. Only the embedded PostgreSQL is handled here: with DATABASE_URL the database's own
operator backs it up (deploy/README.md).
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import json
import os
import shutil
import subprocess
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from django.conf import settings

from athena.paths import BASE_DIR, pg_socket_dir, var_dir
from athena.stack import Stack, StackError, pg_running, psql_command

FORMAT = 1
MANIFEST = "manifest.json"
DUMP = "database.dump"
MEDIA = Path("files") / "media"
CHECKPOINTS = Path("files") / "audit" / "checkpoints.jsonl"


class BackupError(RuntimeError):
    """A backup or restore that cannot be made; the message says why and what to do."""


@dataclass(frozen=True)
class Relocation:
    """A folder whose absolute path the database stores (a document's file), and where it is now."""

    old: str
    new: str


def _pg_program(name: str) -> list[str]:
    """The command line of pg_dump or pg_restore of the embedded server's own release (the one psql_command
    runs), connected to it as its superuser."""
    program = str(Path(psql_command(settings.PG_PORT)[0]).with_name(name))
    return [program, "-h", str(pg_socket_dir()), "-p", str(settings.PG_PORT), "-U", "postgres"]


def _connect(database: str) -> Any:
    import psycopg

    return psycopg.connect(
        host=str(pg_socket_dir()), port=settings.PG_PORT, user="postgres", dbname=database, autocommit=False
    )


def _database_name() -> str:
    return str(settings.DATABASES["default"]["NAME"])


def _embedded_only(what: str) -> None:
    if not settings.EMBEDDED_POSTGRES:
        raise BackupError(
            f"{what} handles the embedded PostgreSQL only; with DATABASE_URL back the database up with the "
            "server's own tools (pg_dump as the owner role, see deploy/README.md) and copy the media folder and "
            "the audit checkpoint file beside it"
        )


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _files_listed(root: Path) -> dict[str, dict[str, Any]]:
    listed = {}
    for path in sorted(root.rglob("*")):
        if path.is_file() and path.name != MANIFEST:
            listed[path.relative_to(root).as_posix()] = {"size": path.stat().st_size, "sha256": _sha256(path)}
    return listed


def _tree_copy_private(source: Path, target: Path, gone: list[str], below: str = "") -> None:
    """Copy the regular files of the folder `source` into `target` (made), every folder 0700 and every file 0600
    whatever their modes were: the uploads are written readable by all (0644), and copied with their modes they
    were again wherever the backup's contents were copied without its top folder. Links are not followed (no
    upload is one: one pointing out of the media folder would copy what is not the knowledge base's, a dangling
    one failed the backup), nor are uploads still being written (`.*.part`).

    A file or folder deleted between its listing and its copy (an upload expired or removed meanwhile) is left
    out, and its path below the top folder (`below` is `source`'s) added to `gone`: it failed the whole backup.
    The dump was taken before, so a restore holds its document without the file, as if it had been deleted
    just after the restore."""
    try:
        entries = sorted(os.scandir(source), key=lambda item: item.name)
    except FileNotFoundError:
        gone.append(below or ".")
        return
    target.mkdir(mode=0o700)
    target.chmod(0o700)
    for entry in entries:
        if entry.is_symlink() or (entry.name.startswith(".") and entry.name.endswith(".part")):
            continue
        path = f"{below}/{entry.name}" if below else entry.name
        if entry.is_dir(follow_symlinks=False):
            _tree_copy_private(Path(entry.path), target / entry.name, gone, path)
        elif entry.is_file(follow_symlinks=False):
            try:
                reader = open(entry.path, "rb")  # noqa: SIM115 (closed with the copy below)
            except FileNotFoundError:
                gone.append(path)
                continue
            descriptor = os.open(target / entry.name, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            with reader, open(descriptor, "wb") as writer:
                shutil.copyfileobj(reader, writer, 1 << 20)


def _table_counts(cursor: Any) -> dict[str, int]:
    cursor.execute("SELECT tablename FROM pg_tables WHERE schemaname = 'public' ORDER BY tablename")
    counts = {}
    for (table,) in cursor.fetchall():
        cursor.execute(f'SELECT count(*) FROM public."{table}"')
        counts[table] = int(cursor.fetchone()[0])
    return counts


def _applied_migrations(cursor: Any) -> list[list[str]]:
    cursor.execute("SELECT to_regclass('public.django_migrations') IS NOT NULL")
    if not cursor.fetchone()[0]:
        return []
    cursor.execute("SELECT app, name FROM django_migrations ORDER BY id")
    return [[app, name] for app, name in cursor.fetchall()]


def _run(argv: list[str], *, what: str) -> None:
    result = subprocess.run(argv, capture_output=True, text=True)
    if result.returncode != 0:
        message = (result.stderr or result.stdout).strip()
        if "No space left on device" in message:
            raise OSError(errno.ENOSPC, f"{what}: no space left on device")
        raise BackupError(f"{what} failed: {message[-2000:]}")


def _disk_full(exc: OSError) -> bool:
    # shutil.copytree gathers its files' errors into one shutil.Error, without an errno of its own
    return exc.errno == errno.ENOSPC or "No space left on device" in str(exc)


@contextlib.contextmanager
def _partial(target: Path) -> Iterator[Path]:
    """A folder beside `target` to write into, renamed to `target` when the block ends well, removed when not."""
    partial = target.with_name(target.name + ".partial")
    shutil.rmtree(partial, ignore_errors=True)
    # the backup holds every restricted document, the password hashes and the API tokens: readable by the
    # user who made it only (the default umask left the dump readable by every local account)
    mask = os.umask(0o077)
    try:
        partial.mkdir(parents=True, mode=0o700)
        partial.chmod(0o700)
        try:
            yield partial
        except BaseException:
            shutil.rmtree(partial, ignore_errors=True)
            raise
    finally:
        os.umask(mask)
    os.replace(partial, target)


def backup_create(
    target: Path, *, extra: dict[str, Any] | None = None, echo: Callable[[str], None] = print
) -> dict[str, Any]:
    """Back the running (or stopped) embedded stack up into the new folder `target`; returns its manifest.
    `extra` is recorded in the manifest as it is (the audit keys' fingerprints)."""
    _embedded_only("backup")
    target = target.resolve()
    if target.exists() and (not target.is_dir() or any(target.iterdir())):
        raise BackupError(
            f"{target} exists and is not empty: give a new folder (a backup is never overwritten)"
        )
    if not target.parent.is_dir():
        raise BackupError(f"{target.parent} does not exist")
    if not pg_running():
        # a stopped stack is backed up too; its PostgreSQL stays up for the audit event of the backup
        Stack(components=("postgres",)).up(echo=lambda line: None)
        echo("postgres: started for the backup (`manage.py stack down` stops it)")
    return _backup_write(target, extra=extra, echo=echo)


def _backup_write(
    target: Path, *, extra: dict[str, Any] | None, echo: Callable[[str], None]
) -> dict[str, Any]:
    name = _database_name()
    gone: list[str] = []  # uploads deleted between their listing and their copy (_tree_copy_private)
    try:
        with _partial(target) as partial:
            checkpoints = Path(settings.ATHENA_AUDIT_CHECKPOINT_FILE)
            if checkpoints.is_file():  # first: every checkpoint it holds names an event of the dump
                (partial / CHECKPOINTS).parent.mkdir(parents=True)
                shutil.copyfile(checkpoints, partial / CHECKPOINTS)
            with _connect(name) as conn, conn.cursor() as cursor:
                # one snapshot for the dump and for what the manifest says about it
                cursor.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY")
                cursor.execute("SELECT pg_export_snapshot(), current_setting('server_version_num')::int")
                snapshot, server_version = cursor.fetchone()
                migrations = _applied_migrations(cursor)
                counts = _table_counts(cursor)
                _run(
                    [
                        *_pg_program("pg_dump"),
                        "--format=custom",
                        f"--snapshot={snapshot}",
                        "--file",
                        str(partial / DUMP),
                        name,
                    ],
                    what="pg_dump",
                )
            media = Path(settings.MEDIA_ROOT)
            if media.is_dir():  # last: every upload the dump knows is on disk by now
                (partial / MEDIA).parent.mkdir(exist_ok=True)
                _tree_copy_private(media, partial / MEDIA, gone)
            manifest = {
                "format": FORMAT,
                "created_at": datetime.now(UTC).isoformat(timespec="seconds"),
                "source": {
                    "base_dir": str(BASE_DIR),
                    "var_dir": str(var_dir()),
                    "media_root": str(media.resolve()),
                },
                "database": {
                    "name": name,
                    "server_version_num": server_version,
                    "migrations": migrations,
                    "tables": counts,
                },
                **(extra or {}),
                "files": _files_listed(partial),
                "media_left_out": gone,
            }
            (partial / MANIFEST).write_text(json.dumps(manifest, indent=1, sort_keys=True) + "\n")
            with open(partial / MANIFEST, "rb") as handle:
                os.fsync(handle.fileno())
    except OSError as exc:
        if _disk_full(exc):
            raise BackupError(
                f"no space left on the device of {target.parent} ({exc}); nothing was kept: free space or back up "
                "to another disk"
            ) from exc
        raise BackupError(f"backup failed: {exc}; nothing was kept") from exc
    if gone:
        # counted, not named: output is kept in cron's mail and logs, and an upload's name can say what a
        # restricted document is about (the manifest, its owner's alone, names them)
        echo(
            f"{len(gone)} upload(s) deleted while the backup ran are not in it (manifest.json: media_left_out)"
        )
    echo(f"backup written to {target}")
    return manifest


def backup_read(source: Path) -> dict[str, Any]:
    """The manifest of the backup folder `source`, after checking that every file it lists is there unchanged."""
    source = source.resolve()
    try:
        manifest = json.loads((source / MANIFEST).read_text())
    except FileNotFoundError:
        raise BackupError(f"{source} holds no {MANIFEST}: not a backup made by `manage.py backup`") from None
    except ValueError as exc:
        raise BackupError(f"{source / MANIFEST} is not readable JSON ({exc})") from None
    if manifest.get("format") != FORMAT:
        raise BackupError(
            f"{source} is a backup of format {manifest.get('format')!r}; this Athena reads format {FORMAT}"
        )
    for relative, expected in manifest["files"].items():
        path = source / relative
        if (
            not path.is_file()
            or path.stat().st_size != expected["size"]
            or _sha256(path) != expected["sha256"]
        ):
            raise BackupError(
                f"{path} is missing or differs from what the backup recorded: the backup is damaged"
            )
    return manifest


def restore_refusals(manifest: dict[str, Any], *, known_migrations: set[tuple[str, str]]) -> list[str]:
    """Why this code and server cannot take the backup (nothing is touched): a backup made by a newer Athena
    (migrations this code does not have) or by a newer PostgreSQL major version than the one here."""
    problems = []

    def number(name: str) -> int | None:
        prefix = name.split("_", 1)[0]
        return int(prefix) if prefix.isdigit() else None

    newest: dict[str, int] = {}
    for app, name in known_migrations:
        if (known := number(name)) is not None:
            newest[app] = max(newest.get(app, known), known)
    # as `manage.py migrate` judges a database (athena/management/commands/migrate.py): a migration this code
    # lacks is a newer release's only when numbered above every one of its app here (the rows of migrations a
    # squash replaced stay behind after their files are deleted; an app this code does not install is ignored)
    unknown = [
        f"{app}.{name}"
        for app, name in manifest["database"]["migrations"]
        if (app, name) not in known_migrations
        and (applied := number(name)) is not None
        and applied > newest.get(app, applied)
    ]
    if unknown:
        problems.append(
            f"the backup was made by a newer Athena: this code lacks the migrations {', '.join(unknown)}; check "
            "out the version that made it (or a later one) and restore again"
        )
    return problems


def _target_problems() -> list[str]:
    """Why this var/ folder's stack is not a fresh one to restore into."""
    problems = []
    with _connect(_database_name()) as conn, conn.cursor() as cursor:
        cursor.execute("SELECT count(*) FROM pg_tables WHERE schemaname = 'public'")
        if cursor.fetchone()[0]:
            problems.append(f"the database {_database_name()!r} is not empty (a knowledge base is there)")
    media = Path(settings.MEDIA_ROOT)
    if media.exists() and any(media.iterdir()):
        problems.append(f"the media folder {media} is not empty")
    if Path(settings.ATHENA_AUDIT_CHECKPOINT_FILE).exists():
        problems.append(f"the audit checkpoint file {settings.ATHENA_AUDIT_CHECKPOINT_FILE} exists")
    return problems


def _server_version() -> int:
    with _connect(_database_name()) as conn, conn.cursor() as cursor:
        cursor.execute("SELECT current_setting('server_version_num')::int")
        return int(cursor.fetchone()[0])


def restore_into_fresh(
    source: Path, manifest: dict[str, Any], *, echo: Callable[[str], None] = print
) -> list[Relocation]:
    """Restore the backup folder `source` (read by backup_read) into this var/ folder's stack, which must be
    fresh: an empty database, no uploads, no checkpoints. Starts the embedded PostgreSQL (which creates the two
    roles and the empty database), restores the dump as the superuser in one transaction (owners, grants and
    triggers as they were), checks every table's row count against the manifest and puts the files in place.
    Returns the folders whose stored paths moved (the caller rewrites them), most specific first: the media
    folder (the uploads came with the backup) and the checkout (a fresh clone holds the demo documents again).
    Other folders documents were ingested from are the operator's to bring back at the same paths."""
    _embedded_only("restore")
    source = source.resolve()
    running = [
        row.name
        # every process that serves (each needs a server; the servers themselves are started below)
        for row in Stack(components=tuple(Stack.NEEDS)).status()
        if row.state == "running"
    ]
    if running:
        raise BackupError(f"stop {', '.join(running)} first: restore into a stack that serves nothing yet")
    try:
        Stack(components=("postgres",)).up(echo=lambda line: None)
    except StackError as exc:
        raise BackupError(f"the embedded PostgreSQL did not start: {exc}") from exc
    major, backup_major = _server_version() // 10000, manifest["database"]["server_version_num"] // 10000
    if major < backup_major:
        raise BackupError(
            f"the backup was made by PostgreSQL {backup_major}; this server is PostgreSQL {major}: restore with "
            "the embedded-postgres version that made it, or a later one"
        )
    problems = _target_problems()
    if problems:
        raise BackupError(
            "; ".join(problems)
            + ": restore goes into a fresh var/ folder only (set ATHENA_VAR_DIR to a new folder, or move this one "
            "away), never over a knowledge base"
        )
    media = Path(settings.MEDIA_ROOT)
    checkpoints = Path(settings.ATHENA_AUDIT_CHECKPOINT_FILE)
    try:
        if (source / MEDIA).is_dir():
            shutil.copytree(source / MEDIA, media, dirs_exist_ok=True)
        if (source / CHECKPOINTS).is_file():
            checkpoints.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(source / CHECKPOINTS, checkpoints)
            # as the audit writes it (audit.services): copyfile gave it the umask's mode
            checkpoints.chmod(0o600)
        _run(
            [
                *_pg_program("pg_restore"),
                "--dbname",
                _database_name(),
                "--single-transaction",  # all or nothing: a failed restore leaves the database empty
                "--exit-on-error",
                str(source / DUMP),
            ],
            what="pg_restore",
        )
        with _connect(_database_name()) as conn, conn.cursor() as cursor:
            counts = _table_counts(cursor)
        if counts != manifest["database"]["tables"]:
            differing = sorted(
                table
                for table in set(counts) | set(manifest["database"]["tables"])
                if counts.get(table) != manifest["database"]["tables"].get(table)
            )
            raise BackupError(
                f"the restored tables {', '.join(differing)} do not hold the rows the backup recorded"
            )
    except BaseException as exc:
        # leave the folder fresh for another try: nothing half-restored stays
        shutil.rmtree(media, ignore_errors=True)
        checkpoints.unlink(missing_ok=True)
        with contextlib.suppress(Exception):
            # the database created again as `stack up` creates it: empty, owned by the owner role
            subprocess.run(
                [
                    *psql_command(settings.PG_PORT),
                    f'DROP DATABASE IF EXISTS "{_database_name()}" WITH (FORCE)',
                ],
                capture_output=True,
            )
            Stack(components=("postgres",)).up(echo=lambda line: None)
        if isinstance(exc, OSError) and _disk_full(exc):
            raise BackupError(
                f"no space left on the device of {var_dir()} ({exc}); nothing was restored"
            ) from exc
        raise
    echo(f"database {_database_name()} restored from {source}")
    old = manifest["source"]
    moves = [
        Relocation(old["media_root"], str(media.resolve())),
        Relocation(old["base_dir"], str(BASE_DIR)),
    ]
    return [move for move in moves if move.old != move.new]
