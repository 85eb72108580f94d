"""A real full disk for tests: a small tmpfs mounted as root (`make test` and CI run as root on these machines).
Without root, or where tmpfs cannot be mounted, the test fails naming why rather than skipping the check."""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest


@contextlib.contextmanager
def small_disk(mount: Path, size: str) -> Iterator[Path]:
    """A tmpfs of `size` (mount's syntax: "64k") mounted at `mount` (created, and removed afterwards)."""
    if os.geteuid() != 0 or not shutil.which("mount"):
        pytest.fail("mounting a small filesystem needs root (run the tests as root, as CI does)")
    mount.mkdir()
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(mount)], capture_output=True
    )
    if done.returncode != 0:
        pytest.fail(f"tmpfs cannot be mounted here: {done.stderr.decode(errors='replace').strip()}")
    try:
        yield mount
    finally:
        # lazily: a file still open on it (a failing run's) must not leave the mount behind
        subprocess.run(["umount", "--lazy", str(mount)], check=False)
        mount.rmdir()
