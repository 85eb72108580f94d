"""The launcher lock (athena.stack.launcher_held) and who may touch it. var/run is writable by every local
account (the embedded PostgreSQL, which runs as a user of its own, puts its socket there: mode 0777), so the
launcher keeps nothing there that it opens to write."""

from __future__ import annotations

import pytest

from athena.stack import StackError, launcher_held

pytestmark = pytest.mark.unit


def test_a_link_planted_where_the_lock_was_kept_does_not_make_the_launcher_write_through_it(
    tmp_path, monkeypatch
) -> None:  # type: ignore[no-untyped-def]
    """Any local account could link var/run/launcher.lock to a file the launcher's user may write (root's, when
    the stack runs as root): the launcher opened the link, emptied the file and wrote its role and pid in it."""
    var = tmp_path / "var"
    monkeypatch.setenv("ATHENA_VAR_DIR", str(var))
    run = var / "run"
    run.mkdir(parents=True)
    run.chmod(0o777)  # as pg_start leaves it
    victim = tmp_path / "precious.conf"
    victim.write_text("keep me\n")
    (run / "launcher.lock").symlink_to(victim)

    with launcher_held("bootstrap", echo=lambda line: None):
        assert victim.read_text() == "keep me\n"
    with launcher_held("run", echo=lambda line: None):
        pass
    assert victim.read_text() == "keep me\n"

    # and where it is kept now, a link is refused, not followed
    (var / "launcher.lock").unlink()
    (var / "launcher.lock").symlink_to(victim)
    with (
        pytest.raises(StackError, match="not a plain file"),
        launcher_held("bootstrap", echo=lambda line: None),
    ):
        pass
    assert victim.read_text() == "keep me\n"


def test_a_restore_holds_off_a_make_run_and_says_why(tmp_path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """While `manage.py restore` fills a fresh var/ folder, a `make run` (bootstrap, then the runner) would start
    the servers, migrate and load the sample documents under it: both are refused, naming the restore."""
    monkeypatch.setenv("ATHENA_VAR_DIR", str(tmp_path / "var"))
    with launcher_held("restore", echo=lambda line: None):
        for role in ("bootstrap", "run"):
            with (
                pytest.raises(StackError, match="is restoring a backup"),
                launcher_held(role, echo=lambda line: None),
            ):
                pass
    with launcher_held("bootstrap", echo=lambda line: None):  # and let go when it has finished
        pass
