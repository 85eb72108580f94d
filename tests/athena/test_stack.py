"""The launcher, driven as a user would: `manage.py stack ...` in a separate var/ folder."""

import os
import signal
import socket
import stat
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest

from athena.stack import launcher_held
from tests.launcher import ROOT, private_stack_env, start_runner

pytestmark = [pytest.mark.integration, pytest.mark.slow]


@pytest.fixture()
def stack_env():
    with private_stack_env("stacktest") as env:
        yield env


def _stack(env, *args):
    return subprocess.run(
        [sys.executable, "manage.py", "stack", *args],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=180,
    )


def _pids(var: Path) -> dict[str, int]:
    return {p.stem: int(p.read_text()) for p in (var / "run").glob("*.pid")}


def test_up_is_idempotent_detects_a_dead_worker_and_down_leaves_nothing(stack_env):
    only = "--only=postgres,redis,worker"
    first = _stack(stack_env, "up", only)
    assert first.returncode == 0, first.stderr
    assert "postgres: started" in first.stdout and "worker: started" in first.stdout

    second = _stack(stack_env, "up", only)
    assert second.returncode == 0, second.stderr
    assert "postgres: already running" in second.stdout
    assert "worker: already running" in second.stdout
    assert "redis: already running" in second.stdout

    status = _stack(stack_env, "status", only, "--check")
    assert status.returncode == 0, status.stdout + status.stderr

    var = Path(stack_env["ATHENA_VAR_DIR"])
    # var/run holds the pid files the launcher signals and beat's schedule, which beat unpickles: no other local
    # account may write there (it was 0777 for PostgreSQL's socket)
    assert stat.S_IMODE((var / "run").stat().st_mode) & 0o022 == 0, oct((var / "run").stat().st_mode)
    pids = _pids(var)
    worker = psutil.Process(pids["worker"])
    children = worker.children(recursive=True)
    os.killpg(pids["worker"], signal.SIGKILL)  # simulate a crash of the worker and its pool
    time.sleep(1)
    status = _stack(stack_env, "status", only, "--check")
    assert status.returncode != 0
    assert "worker    dead" in status.stdout

    down = _stack(stack_env, "down", only)
    assert down.returncode == 0, down.stderr
    for pid in [*pids.values(), *(c.pid for c in children)]:
        assert not psutil.pid_exists(pid) or psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    status = _stack(stack_env, "status", only)
    assert "postgres  stopped" in status.stdout and "redis     stopped" in status.stdout


def test_foreground_run_restarts_a_crashed_component_and_stops_cleanly(stack_env):
    only = "redis,worker"
    var = Path(stack_env["ATHENA_VAR_DIR"])
    runner = start_runner(stack_env, only)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and not (var / "run" / "worker.pid").exists():
        time.sleep(0.5)
    time.sleep(2)
    first = _pids(var)["worker"]
    os.killpg(first, signal.SIGKILL)  # crash
    while time.monotonic() < deadline:
        pid = _pids(var).get("worker")
        if pid and pid != first and psutil.pid_exists(pid):
            break
        time.sleep(0.5)
    else:
        pytest.fail("the crashed worker was not restarted")
    started = _pids(var)
    # a part of what the runner runs cannot be stopped alone: stopping the runner would stop all of it
    partial = _stack(stack_env, "down", "--only=worker")
    assert partial.returncode != 0 and "runs redis, worker" in partial.stderr, partial.stderr
    assert runner.poll() is None and _pids(var) == started
    down = _stack(stack_env, "down", f"--only={only}")
    assert down.returncode == 0, down.stderr
    output, _ = runner.communicate(timeout=60)
    assert runner.returncode == 0
    assert "worker: dead" in output and "restarting" in output
    for pid in started.values():
        assert not psutil.pid_exists(pid) or psutil.Process(pid).status() == psutil.STATUS_ZOMBIE


def test_up_starts_the_servers_a_chosen_process_needs(stack_env):
    first = _stack(stack_env, "up", "--only=worker")
    assert first.returncode == 0, first.stderr
    assert "postgres: not running, needed by worker: starting it too" in first.stdout
    assert "redis: not running, needed by worker: starting it too" in first.stdout
    assert "postgres: started" in first.stdout and "redis: started" in first.stdout
    assert "worker: started" in first.stdout
    status = _stack(stack_env, "status", "--only=postgres,redis,worker", "--check")
    assert status.returncode == 0, status.stdout + status.stderr

    again = _stack(stack_env, "up", "--only=worker")
    assert again.returncode == 0, again.stderr
    assert "needed by" not in again.stdout and "worker: already running" in again.stdout


def test_a_stale_runner_pid_file_naming_another_process_is_dropped_not_signalled(stack_env):
    """A runner pid file left by a machine's crash may name a process that reused the number: `down` neither
    refuses on its account nor sends it SIGTERM."""
    var = Path(stack_env["ATHENA_VAR_DIR"])
    (var / "run").mkdir(parents=True, exist_ok=True)
    other = subprocess.Popen(["sleep", "60"])
    try:
        (var / "run" / "runner.pid").write_text(str(other.pid))
        (var / "run" / "runner.components").write_text("postgres,redis,worker,beat,web")
        down = _stack(stack_env, "down", "--only=redis")
        assert down.returncode == 0, down.stderr
        assert other.poll() is None  # not signalled
        assert not (var / "run" / "runner.pid").exists() and not (var / "run" / "runner.components").exists()
    finally:
        other.kill()
        other.wait()


def test_a_second_run_while_one_runs_is_refused_before_it_starts_anything(stack_env):
    """`make run` twice: the second stops at once with a message naming the first, instead of bootstrapping again
    and running a second foreground runner that records itself over the first (stopping either then left the
    other restarting processes that no pid file named, which `make stop` could not stop)."""
    var = Path(stack_env["ATHENA_VAR_DIR"])
    runner = start_runner(stack_env, "redis")
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and not (var / "run" / "redis.pid").exists():
            time.sleep(0.5)
        started = _pids(var)
        assert started["runner"] == runner.pid

        second = _stack(stack_env, "run", "--only=redis")
        assert second.returncode != 0
        assert f"already runs in the foreground (`make run` / `stack run`, pid {runner.pid})" in second.stderr
        bootstrap = subprocess.run(
            [sys.executable, "manage.py", "bootstrap", "--no-sample"],
            cwd=ROOT,
            env=stack_env,
            capture_output=True,
            text=True,
            timeout=180,
        )
        assert bootstrap.returncode != 0 and f"pid {runner.pid}" in bootstrap.stderr, bootstrap.stderr
        assert "database migrated" not in bootstrap.stdout
        assert _pids(var) == started and runner.poll() is None  # the first runs on, still recorded

        asked = time.monotonic()
        down = _stack(stack_env, "down", "--only=redis")
        assert down.returncode == 0, down.stderr
        # `down` returns once the runner has ended, not when its parent (this test) has reaped it: it waited for
        # the zombie for a minute
        assert time.monotonic() - asked < 30, f"stack down took {time.monotonic() - asked:.0f} s"
        runner.communicate(timeout=60)
        assert runner.returncode == 0
        assert not psutil.pid_exists(started["redis"]) or psutil.Process(started["redis"]).status() == (
            psutil.STATUS_ZOMBIE
        )
    finally:
        if runner.poll() is None:
            runner.kill()
            runner.wait()


def _bootstrap(env: dict[str, str]) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "manage.py", "bootstrap", "--no-sample"],
        cwd=ROOT,
        env={**env, "ATHENA_LOAD_SAMPLE_KB": "false"},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def test_two_make_runs_started_together_bootstrap_the_stack_once(stack_env):
    """Two `make run` in the same instant (two terminals, a unit file and a shell) both passed the check for a
    running runner: both bootstraps started PostgreSQL on the same new folder, and the second died in a traceback
    ("could not find the database system") while the first was still initialising it. One bootstraps now; the
    other stops at once, naming it."""
    first, second = _bootstrap(stack_env), _bootstrap(stack_env)
    results = [(proc, *proc.communicate(timeout=300)) for proc in (first, second)]
    done = [r for r in results if r[0].returncode == 0]
    refused = [r for r in results if r[0].returncode != 0]
    assert len(done) == 1 and len(refused) == 1, [r[2][-2000:] for r in results]
    (_, out, err), (winner, _, _) = refused[0], done[0]
    assert f"another `make run` is starting this stack (`bootstrap`, pid {winner.pid})" in err, err
    assert "Traceback" not in err and "database migrated" not in out
    status = _stack(stack_env, "status", "--only=postgres,redis,worker", "--check")
    assert status.returncode == 0, status.stdout + status.stderr


def test_a_launcher_that_finds_the_lock_taken_waits_for_its_holder_to_say_what_it_is(tmp_path, monkeypatch):
    """The holder writes its role and pid right after it takes the lock; the second of two `make run` started
    together read the file in between, found it empty, and refused naming no one ("pid unknown"), whatever the
    holder was (a CI run on a loaded machine). It now waits for the holder to name itself."""
    import fcntl
    import threading

    from athena.stack import StackError

    monkeypatch.setenv("ATHENA_VAR_DIR", str(tmp_path))
    lock = tmp_path / "launcher.lock"
    fd = os.open(lock, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)  # taken, not yet named
        refusal: list[str] = []

        def second() -> None:
            try:
                with launcher_held("bootstrap"):
                    refusal.append("it took the lock")
            except StackError as exc:
                refusal.append(str(exc))

        other = threading.Thread(target=second)
        other.start()
        time.sleep(0.5)
        assert other.is_alive() and not refusal, refusal
        os.pwrite(fd, b"bootstrap 4242", 0)
        other.join(timeout=10)
        assert refusal and "(`bootstrap`, pid 4242)" in refusal[0], refusal
    finally:
        os.close(fd)


def test_a_run_waits_for_a_bootstrap_under_way_before_it_starts_anything(stack_env, monkeypatch):
    """The second of two `make run` started together may finish its bootstrap step while the first's is still
    under way: its foreground run waits for that bootstrap (saying so) instead of starting servers beside it."""
    var = Path(stack_env["ATHENA_VAR_DIR"])
    monkeypatch.setenv("ATHENA_VAR_DIR", str(var))
    with launcher_held("bootstrap"):  # this test process stands for the other `make run`'s bootstrap
        runner = start_runner(stack_env, "redis")
        try:
            # at the lock (it opens the lock file, then tries it every half second), however slowly it started
            lock = str(var / "launcher.lock")
            deadline = time.monotonic() + 120
            while runner.poll() is None and time.monotonic() < deadline:
                if any(f.path == lock for f in psutil.Process(runner.pid).open_files()):
                    break
                time.sleep(0.2)
            time.sleep(3)  # it would have started redis by now, were it not waiting
            assert runner.poll() is None and not (var / "run" / "redis.pid").exists()
        except BaseException:
            runner.kill()
            raise
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and not (var / "run" / "redis.pid").exists():
            time.sleep(0.5)
        assert _pids(var)["runner"] == runner.pid
        down = _stack(stack_env, "down", "--only=redis")
        assert down.returncode == 0, down.stderr
        output, _ = runner.communicate(timeout=60)
        assert f"waiting for another `make run`'s bootstrap (pid {os.getpid()}) to end" in output, output
        assert runner.returncode == 0, output
    finally:
        if runner.poll() is None:
            runner.kill()
            runner.wait()


def test_a_pid_file_naming_another_process_after_a_reboot_is_neither_trusted_nor_signalled(stack_env):
    """After a reboot the pid files under var/run name numbers that other processes may hold by then: that
    process was taken for the component (`up` said "already running" and never started it) and `down` sent it
    SIGTERM, as root under `make run`."""
    var = Path(stack_env["ATHENA_VAR_DIR"])
    (var / "run").mkdir(parents=True, exist_ok=True)
    other = subprocess.Popen(["sleep", "120"])
    try:
        (var / "run" / "redis.pid").write_text(str(other.pid))
        status = _stack(stack_env, "status", "--only=redis")
        assert "redis     dead" in status.stdout, status.stdout

        up = _stack(stack_env, "up", "--only=redis")
        assert up.returncode == 0, up.stderr
        assert f"previous process {other.pid} is gone" in up.stdout and "redis: started" in up.stdout
        started = _pids(var)["redis"]
        assert started != other.pid and psutil.pid_exists(started)

        down = _stack(stack_env, "down", "--only=redis")
        assert down.returncode == 0, down.stderr
        assert not psutil.pid_exists(started) or psutil.Process(started).status() == psutil.STATUS_ZOMBIE

        (var / "run" / "redis.pid").write_text(str(other.pid))
        down = _stack(stack_env, "down", "--only=redis")
        assert down.returncode == 0, down.stderr
        assert other.poll() is None  # not signalled
        assert not (var / "run" / "redis.pid").exists()
    finally:
        other.kill()
        other.wait()


def test_a_pid_file_naming_another_celery_component_is_not_taken_for_its_own(stack_env):
    """The worker, the answerer and beat all run `python -m celery`: a pid file of one that names a process of
    another (after a reboot, or a pid taken again by a pool process the other forked) made `up` say "already
    running" and never start it, and `down --only` of it SIGTERM the other's process (a worker's pool process
    dies at once on SIGTERM, cutting its task short)."""
    var = Path(stack_env["ATHENA_VAR_DIR"])
    (var / "run").mkdir(parents=True, exist_ok=True)
    # command lines as the stack starts them (athena/stack.py), on a process that only sleeps
    argv = {
        "worker": ["worker", "-Q", "realtime,embed,ingest", "-n", "athena@%h"],
        "answerer": ["worker", "-Q", "realtime", "-n", "answerer@%h"],
        "beat": ["beat", "--schedule", str(var / "run" / "schedule")],
    }
    sleepers = {
        name: subprocess.Popen(
            [sys.executable, "-c", "import time; time.sleep(120)", "-m", "celery", "-A", "athena", *words]
        )
        for name, words in argv.items()
    }
    try:
        for name, other in (("answerer", "worker"), ("worker", "answerer"), ("beat", "worker")):
            (var / "run" / f"{name}.pid").write_text(str(sleepers[other].pid))
            status = _stack(stack_env, "status", f"--only={name}")
            assert f"{name:<9} dead" in status.stdout, (name, other, status.stdout)
            down = _stack(stack_env, "down", f"--only={name}")
            assert down.returncode == 0, down.stderr
            assert sleepers[other].poll() is None, (name, other)  # not signalled
        for name, sleeper in sleepers.items():  # each still taken for its own component
            (var / "run" / f"{name}.pid").write_text(str(sleeper.pid))
            status = _stack(stack_env, "status", f"--only={name}")
            assert f"{name:<9} running" in status.stdout, (name, status.stdout)
    finally:
        for sleeper in sleepers.values():
            sleeper.kill()
            sleeper.wait()


def test_a_port_held_by_another_process_is_named_instead_of_a_start_that_never_happened(stack_env):
    """Another server on Redis's (or the web's) port: the new process died at once, but the port answered (the
    other server), so `up` said "started" and `stack run` restarted it every second."""
    with socket.socket() as squatter:
        squatter.bind(("127.0.0.1", int(stack_env["ATHENA_REDIS_PORT"])))
        squatter.listen()
        up = _stack(stack_env, "up", "--only=redis")
    port = stack_env["ATHENA_REDIS_PORT"]
    assert up.returncode != 0
    assert f"redis: 127.0.0.1:{port} is already in use by another process" in up.stderr, up.stderr
    assert "redis: started" not in up.stdout
    assert "redis" not in _pids(Path(stack_env["ATHENA_VAR_DIR"]))


def test_the_logs_and_redis_files_are_the_services_account_s_alone(stack_env):
    """The components' logs (the worker's named documents and held answers, gunicorn's every request) and
    Redis's append-only file (conversation memory: questions and answers) were 0644 in 0755 folders: readable
    by every local account of the host. A log an earlier release left 0644 is narrowed too."""
    var = Path(stack_env["ATHENA_VAR_DIR"])
    (var / "log").mkdir(parents=True, exist_ok=True)
    earlier = var / "log" / "worker.log"
    earlier.write_bytes(b"a line of an earlier run\n")
    earlier.chmod(0o644)
    older = var / "log" / "worker.log.1"  # its older part, as an earlier release's trim left it
    older.write_bytes(b"an older line\n")
    older.chmod(0o644)
    up = _stack(stack_env, "up", "--only=postgres,redis,worker")
    try:
        assert up.returncode == 0, up.stderr
        deadline = time.monotonic() + 30
        while not list((var / "redis").rglob("*.aof")) and time.monotonic() < deadline:
            time.sleep(0.2)
        files = [*(var / "log").iterdir(), *(var / "redis").rglob("*")]
        assert {"worker.log", "redis.log", "postgres.log"} <= {f.name for f in files}
        assert [f for f in files if f.suffix == ".aof"], files
        readable = {str(f): oct(stat.S_IMODE(f.stat().st_mode)) for f in files if f.stat().st_mode & 0o044}
        assert not readable, readable
        assert stat.S_IMODE((var / "redis").stat().st_mode) & 0o077 == 0
    finally:
        _stack(stack_env, "down", "--only=postgres,redis,worker")


def test_only_the_stack_s_account_may_connect_to_the_embedded_postgresql(stack_env):
    """The embedded server trusts its unix socket (no password), and the socket was 0777: any local account
    connected as the cluster's superuser and read every restricted document, password hash and API token."""
    from athena.stack import psql_command

    var = Path(stack_env["ATHENA_VAR_DIR"])
    up = _stack(stack_env, "up", "--only=postgres")
    try:
        assert up.returncode == 0, up.stderr
        port = int(stack_env["ATHENA_PG_PORT"])
        socket_file = var / "run" / f".s.PGSQL.{port}"
        assert stat.S_IMODE(socket_file.stat().st_mode) & 0o077 == 0, oct(socket_file.stat().st_mode)
        where = ["-h", str(var / "run"), "-p", str(port), "-U", "postgres", "-d", "postgres"]
        query = [psql_command(port)[0], *where, "-Atc", "SELECT 1"]
        # the stack's account still may
        mine = subprocess.run(query, capture_output=True, text=True, timeout=30)
        assert mine.returncode == 0 and mine.stdout.strip() == "1", mine.stderr
        if os.geteuid() == 0:  # another account of the host, as root can play one
            other = subprocess.run(query, capture_output=True, text=True, timeout=30, user="nobody")
            assert other.returncode != 0 and "Permission denied" in other.stderr, other.stdout + other.stderr
    finally:
        _stack(stack_env, "down", "--only=postgres")


def test_the_embedded_redis_takes_only_the_stack_s_password_and_one_left_without_it_is_named(stack_env):
    """The embedded Redis listened on 127.0.0.1 with no password: any local account read conversation memory
    and queued tasks there, and could queue tasks of its own (an ingest of any folder under any groups). It now
    asks for a password that only the stack's account reads, given in a file, not on its command line, which
    `ps` shows to everyone. A Redis an earlier release started without it is not used: `up` (or `up --only web`)
    stops, saying to stop the stack, since that release's worker and web server could not use it restarted."""
    import redis

    from athena.stack import redis_binary

    var = Path(stack_env["ATHENA_VAR_DIR"])
    port = int(stack_env["ATHENA_REDIS_PORT"])
    # an earlier release's Redis, without a password, recorded as the stack's
    (var / "run").mkdir(parents=True, exist_ok=True)
    earlier = subprocess.Popen(
        [redis_binary(), "--port", str(port), "--bind", "127.0.0.1", "--save", ""],
        stdout=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            try:
                redis.Redis(port=port, socket_timeout=1).ping()
                break
            except redis.ConnectionError:
                time.sleep(0.2)
        (var / "run" / "redis.pid").write_text(str(earlier.pid))
        for only in ("--only=redis", "--only=web"):
            refused = _stack(stack_env, "up", only)
            assert refused.returncode != 0 and "without this stack's password" in refused.stderr, refused
            assert "make stop" in refused.stderr
        assert earlier.poll() is None  # left as it was
        down = _stack(stack_env, "down", "--only=redis")
        assert down.returncode == 0, down.stderr
        assert earlier.wait(timeout=30) is not None
        up = _stack(stack_env, "up", "--only=redis")
        assert up.returncode == 0, up.stderr
        password = (var / "redis" / "password").read_text().strip()
        assert len(password) >= 32
        assert stat.S_IMODE((var / "redis" / "password").stat().st_mode) == 0o600
        with pytest.raises(redis.AuthenticationError):  # another account, which cannot read the file
            redis.Redis(port=port, socket_timeout=5).get("anything")
        assert redis.Redis(port=port, password=password, socket_timeout=5).ping()
        server = psutil.Process(_pids(var)["redis"])
        assert password not in " ".join(server.cmdline())
        again = _stack(stack_env, "up", "--only=redis")  # and with it, it is left running
        assert "redis: already running" in again.stdout, again.stdout
    finally:
        if earlier.poll() is None:
            earlier.kill()
        _stack(stack_env, "down", "--only=redis")
