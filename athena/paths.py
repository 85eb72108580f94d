"""Filesystem locations of the local stack (data, sockets, logs) under the project's var/ folder."""

from __future__ import annotations

import hashlib
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
