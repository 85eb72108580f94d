"""Filesystem locations of the local stack (data, sockets, logs) under the project's var/ folder."""

from __future__ import annotations

import hashlib
import os
import secrets
import tempfile
from pathlib import Path

from athena.env import env

BASE_DIR = Path(__file__).resolve().parent.parent


def var_dir() -> Path:
    return Path(env.str("ATHENA_VAR_DIR") or BASE_DIR / "var").resolve()


def pg_socket_dir() -> Path:
    """Unix-socket directory of the embedded PostgreSQL.

    Socket paths are limited to ~107 bytes; a deep checkout would overflow that, so long paths fall back to a
    short directory in /tmp named after a hash of the var folder (stable for one checkout).
    """
    preferred = var_dir() / "run"
    if len(str(preferred)) <= 80:
        return preferred
    digest = hashlib.sha256(str(var_dir()).encode()).hexdigest()[:12]
    return Path(tempfile.gettempdir()) / f"athena-pg-{digest}"


def redis_folder() -> Path:
    """The embedded Redis's folder: its append-only file (queued tasks, conversation memory) and its password."""
    return var_dir() / "redis"


def embedded_redis_password() -> str:
    """The password of the embedded Redis, made on first use: var/redis/password, the stack's account's alone
    (0600 in a 0700 folder). Without one, any local account could read conversation memory and queued tasks
    from 127.0.0.1 and queue tasks of its own (an ingest of any folder under any groups). "" when this account
    cannot read or make it: its connections are then refused, as they should be."""
    folder = redis_folder()
    path = folder / "password"
    try:
        return path.read_text().strip()
    except FileNotFoundError:
        pass
    except OSError:
        return ""
    draft = folder / f".password-{os.getpid()}-{secrets.token_hex(4)}"
    try:
        folder.mkdir(mode=0o700, parents=True, exist_ok=True)
        descriptor = os.open(draft, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        try:
            os.write(descriptor, secrets.token_urlsafe(32).encode())
        finally:
            os.close(descriptor)
        try:
            os.link(draft, path)  # the first process to get here sets it; every other reads that one
        except FileExistsError:
            pass
        finally:
            draft.unlink()
        return path.read_text().strip()
    except OSError:  # a var/ folder this account may not write, or a file system without links
        return ""
