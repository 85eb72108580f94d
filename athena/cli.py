"""Argument checks shared by management commands: files they read and write, checked before the work starts
so a typo fails in a second with a plain message, not after a long run with a traceback."""

from __future__ import annotations

import argparse
import json
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from django.core.management.base import CommandError

from athena.validators import text_problem


def positive_int(raw: str) -> int:
    """An argparse type: a whole number of at least 1 (a batch size or a limit of 0 or less would do nothing,
    or wait for work that never comes)."""
    try:
        value = int(raw)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a whole number, got {raw!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {value}")
    return value


def port_number(raw: str) -> int:
    """An argparse type: a TCP port, 1 to 65535 (0 read as "the default" and a port past the range failed only
    when the web server tried to listen)."""
    value = positive_int(raw)
    if value > 65535:
        raise argparse.ArgumentTypeError(f"must be a port from 1 to 65535, got {value}")
    return value


def user_named(name: str, *, hint: str = "") -> Any:
    """The user called `name`, or a CommandError saying there is none (`hint` appended). A name the database
    cannot hold (a NUL, or the lone surrogates a command line's undecodable bytes become) names no user either:
    looking it up failed with a traceback."""
    from django.contrib.auth.models import User

    user = None if text_problem(name) else User.objects.filter(username=name).first()
    if user is None:
        raise CommandError(f"no user {name!r}{hint}")
    return user


def output_file(path: Path) -> Path:
    """`path` as a file the command can write: its folder is created when missing; a folder, or a place that
    cannot be written, is refused now."""
    if path.is_dir():
        raise CommandError(f"{path} is a directory: give a file name")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise CommandError(f"cannot create {path.parent}: {exc.strerror or exc}") from None
    if not os.access(path.parent, os.W_OK) or (path.exists() and not os.access(path, os.W_OK)):
        raise CommandError(f"cannot write {path}: permission denied")
    return path


def read_text_lines(path: Path) -> list[str]:
    """The lines of a UTF-8 text file; one that cannot be read, or is not UTF-8, is refused naming the line
    (a traceback before)."""
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise CommandError(f"cannot read {path}: {exc.strerror or exc}") from None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = raw.count(b"\n", 0, exc.start) + 1
        raise CommandError(
            f"{path}:{line}: not UTF-8 text (byte 0x{raw[exc.start]:02x} at offset {exc.start})"
        ) from None
    return text.splitlines()


def read_json_lines(path: Path, required: Sequence[str] = ()) -> list[dict[str, Any]]:
    """The JSON objects of a JSON-lines file (blank lines skipped). A missing file, a line that is not a JSON
    object, or an object without one of `required` as a non-empty string is refused, naming the line."""
    if not path.exists():
        raise CommandError(f"{path} does not exist")
    if not path.is_file():
        raise CommandError(f"{path} is not a file")
    objects = []
    for number, line in enumerate(read_text_lines(path), start=1):
        if not line.strip():
            continue
        try:
            value = json.loads(line)
        except json.JSONDecodeError as exc:
            raise CommandError(f"{path}:{number}: not valid JSON ({exc.msg})") from None
        if not isinstance(value, dict):
            raise CommandError(f"{path}:{number}: expected a JSON object, got {type(value).__name__}")
        missing = [key for key in required if not isinstance(value.get(key), str) or not value[key].strip()]
        if missing:
            raise CommandError(
                f"{path}:{number}: needs {', '.join(repr(k) for k in missing)} (a non-empty string)"
            )
        objects.append(value)
    return objects
