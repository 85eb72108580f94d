"""The browser tests drive the server people use: gunicorn started with the command line and settings that
`manage.py stack` starts the `web` component with (athena.settings.local, DEBUG off, WhiteNoise serving the
collectstatic manifest), on a free port, against the test database, with a real Celery worker answering.

The tests carry `django_db` (not transactional): it makes pytest-django create the test database, and the
test's own reads see what the server commits (READ COMMITTED). The data they share (users, the sample knowledge
base) is committed by the module-scoped `sample_site` fixture and flushed after the module.

Screenshots of every step are written to var/screenshots/ (not committed) for a reviewer to look at."""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from tests.launcher import free_port

ROOT = Path(__file__).resolve().parents[2]
AXE_JS = ROOT / "tests" / "browser" / "node_modules" / "axe-core" / "axe.min.js"
SAMPLE_KB = ROOT / "knowledge" / "sample_kb"
PASSWORDS = {
    "alice": "alice-test-pass",
    "noc-bob": "bob-test-pass",
    "carol": "carol-test-pass",
    "admin": "admin-test-pass",
}
CHROME_FLAGS = (
    "--headless=new",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-dev-shm-usage",
    "--disable-background-networking",
    "--disable-component-update",
    "--no-first-run",
    "--disable-sync",
    "--window-size=1400,900",
)


def _port_open(port: int) -> bool:
    with socket.socket() as sock:
        sock.settimeout(0.5)
        return sock.connect_ex(("127.0.0.1", port)) == 0


@contextmanager
def _gunicorn(static_root: Path, **env_overrides: str) -> Iterator[str]:
    """gunicorn as `make run` starts it (the stack's command line and environment), serving the test
    database; yields its base URL. `env_overrides` are configuration, as an operator would set it."""
    from django.conf import settings

    from athena.paths import var_dir
    from athena.stack import Stack

    port = free_port()
    stack = Stack(components=["web"], port=port)
    env = stack.environment()
    env.pop("ATHENA_DEBUG", None)
    env.update(
        {
            # the test run exports the test settings; the server people use runs with the stack's own
            "DJANGO_SETTINGS_MODULE": Stack.SETTINGS_MODULE,
            "ATHENA_DB_NAME": str(settings.DATABASES["default"]["NAME"]),
            "ATHENA_STATIC_ROOT": str(static_root),
            "REDIS_URL": str(settings.REDIS_URL),  # the tests' own Redis database, which their worker reads
            # the audit checkpoints of the test database, not those a developer's running `make run` writes
            # (its beat, every few minutes) under the same var/: they name events this database lacks
            "ATHENA_AUDIT_CHECKPOINT_FILE": str(static_root.parent / "audit-checkpoints.jsonl"),
            **env_overrides,
        }
    )
    if not (static_root / "staticfiles.json").exists():
        # what `manage.py bootstrap` (make run) does before the stack serves
        subprocess.run(
            [sys.executable, "manage.py", "collectstatic", "--noinput", "-v", "0"],
            cwd=ROOT,
            env=env,
            check=True,
        )
    log_path = var_dir() / "log" / "test-web.log"
    log_path.parent.mkdir(parents=True, exist_ok=True)
    with open(log_path, "ab") as log:
        proc = subprocess.Popen(
            stack.service("web").argv,
            cwd=ROOT,
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    try:
        deadline = time.monotonic() + 60
        while not _port_open(port):
            if proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"gunicorn did not start; see {log_path}")
            time.sleep(0.2)
        yield f"http://127.0.0.1:{port}"
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)


@pytest.fixture(scope="session")
def static_root(tmp_path_factory) -> Path:  # type: ignore[no-untyped-def]
    """collectstatic's folder for the test servers, so that a developer's running `make run` keeps its own."""
    return Path(tmp_path_factory.mktemp("static"))


@pytest.fixture(scope="session")
def web_server(django_db_setup, static_root) -> Iterator[str]:  # type: ignore[no-untyped-def]
    """The server `make run` starts, on a free port, on the test database."""
    with _gunicorn(static_root) as url:
        yield url


@pytest.fixture()
def web_server_without_worker(django_db_setup, static_root) -> Iterator[str]:  # type: ignore[no-untyped-def]
    """The same server whose broker no worker listens to (a Redis database of its own), waiting 3 s for an
    answer instead of 120: what a person sees while the answering workers are down or saturated."""
    from urllib.parse import urlsplit

    import redis
    from django.conf import settings

    broker = urlsplit(settings.REDIS_URL)._replace(path="/13").geturl()
    try:
        with _gunicorn(static_root, REDIS_URL=broker, ATHENA_ANSWER_TIMEOUT_SECONDS="3") as url:
            yield url
    finally:
        client = redis.Redis.from_url(broker)
        client.flushdb()  # the unanswered task and the throttle counters of this test only
        client.close()


@pytest.fixture()
def web_server_queued(django_db_setup, static_root) -> Iterator[tuple[str, Any]]:  # type: ignore[no-untyped-def]
    """The same server on a broker of its own that no worker consumes, waiting 10 s for an answer; yields its
    URL and a client of that Redis, in which the test writes the realtime queue's state (a worker's heartbeat,
    questions waiting) as workers and web processes write it (agents/realtime.py)."""
    from urllib.parse import urlsplit

    import redis
    from django.conf import settings

    broker = urlsplit(settings.REDIS_URL)._replace(path="/12").geturl()
    client = redis.Redis.from_url(broker)
    client.flushdb()
    try:
        with _gunicorn(static_root, REDIS_URL=broker, ATHENA_ANSWER_TIMEOUT_SECONDS="10") as url:
            yield url, client
    finally:
        client.flushdb()
        client.close()


@pytest.fixture(scope="module")
def sample_site(django_db_setup, django_db_blocker) -> Iterator[None]:  # type: ignore[no-untyped-def]
    """The demo users and the sample knowledge base, ingested as `make run` ingests them; emptied afterwards
    (the same flush pytest-django's transactional tests end with)."""
    from django.contrib.auth.hashers import make_password
    from django.core.management import call_command

    from athena.services import ROLE_ADMIN, ROLE_COMPLIANCE, ROLE_EMPLOYEE, user_create_or_update
    from knowledge.services import IngestOptions, files_ingest, folder_scan

    with django_db_blocker.unblock():
        for name, groups, staff in (
            ("alice", [ROLE_EMPLOYEE], False),
            ("noc-bob", [ROLE_EMPLOYEE, "noc-admins"], False),
            ("carol", [ROLE_COMPLIANCE], False),
            ("admin", [ROLE_ADMIN], True),
        ):
            user, _ = user_create_or_update(username=name, groups=groups, staff=staff)
            # hashed as the server's settings expect (the test settings' default hasher is a fast one it lacks)
            user.password = make_password(PASSWORDS[name], hasher="pbkdf2_sha256")
            user.is_superuser = name == "admin"
            user.save(update_fields=["password", "is_superuser"])
        for folder, tier, acl in (("public", "internal", ()), ("restricted", "restricted", ("noc-admins",))):
            root = SAMPLE_KB / folder
            files = [(f"{folder}/{rel}", str(path)) for rel, path in folder_scan(root)]
            summary = files_ingest(
                root=str(root.resolve()),
                files=files,
                options=IngestOptions(access_tier=tier, acl_groups=acl, prefix=f"{folder}/"),
            )
            assert summary.failed == 0, summary.errors
    yield
    with django_db_blocker.unblock():
        call_command("flush", interactive=False, verbosity=0)


@pytest.fixture()
def browser() -> Iterator[Any]:
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    chrome = shutil.which("chromium") or shutil.which("chromium-browser")
    driver_path = shutil.which("chromedriver")
    # make test installs them (scripts/browser-deps.sh): missing browsers are a broken setup, not a skip
    assert chrome and driver_path, "chromium / chromium-driver not installed (run scripts/browser-deps.sh)"
    profile = tempfile.mkdtemp(prefix="athena-chrome-")
    options = webdriver.ChromeOptions()
    options.binary_location = chrome
    for flag in CHROME_FLAGS:
        options.add_argument(flag)
    options.add_argument(f"--user-data-dir={profile}")
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(service=Service(executable_path=driver_path), options=options)
    driver.set_page_load_timeout(60)
    try:
        yield driver
    finally:
        driver.quit()
        shutil.rmtree(profile, ignore_errors=True)


@pytest.fixture()
def shot(browser, request) -> Callable[[str], Path]:  # type: ignore[no-untyped-def]
    """`shot("02-answer")` saves var/screenshots/<test>-02-answer.png."""
    from athena.paths import var_dir

    folder = var_dir() / "screenshots"
    folder.mkdir(parents=True, exist_ok=True)
    prefix = request.node.name.removeprefix("test_")

    def save(step: str) -> Path:
        path = folder / f"{prefix}-{step}.png"
        browser.save_screenshot(str(path))
        return path

    return save


def wait(driver: Any, condition: Callable[[Any], Any], timeout: float = 90) -> Any:
    from selenium.common.exceptions import StaleElementReferenceException, WebDriverException
    from selenium.webdriver.support.ui import WebDriverWait

    def looked_at(d: Any) -> Any:
        # Chrome names an element whose page was replaced (a form submitted, a script run) between its lookup
        # and its read in two ways: "stale element", or an "unknown error" that the node "does not belong to the
        # document". Both mean look again.
        try:
            return condition(d)
        except WebDriverException as error:
            if "does not belong to the document" in str(error):
                raise StaleElementReferenceException(str(error)) from error
            raise

    # an element read while the page is being replaced (a form submitted) is stale: look again
    return WebDriverWait(driver, timeout, ignored_exceptions=(StaleElementReferenceException,)).until(
        looked_at
    )


def login(driver: Any, base: str, username: str, *, next_path: str = "/") -> None:
    from selenium.webdriver.common.by import By

    driver.delete_all_cookies()
    driver.get(f"{base}/accounts/login/?next={next_path}")
    driver.find_element(By.ID, "id_username").send_keys(username)
    driver.find_element(By.ID, "id_password").send_keys(PASSWORDS[username])
    driver.find_element(By.ID, "login-submit").click()
    wait(driver, lambda d: "/accounts/login/" not in d.current_url, timeout=30)


def axe_violations(
    driver: Any, *, impacts: tuple[str, ...] = ("serious", "critical")
) -> list[dict[str, Any]]:
    """Run axe-core (WCAG 2.x A and AA rules) on the current page; the violations of the given impacts. Every
    violation, whatever its impact, is also written to var/screenshots/axe-<page>.json for a reviewer."""
    import json
    import re

    from athena.paths import var_dir

    assert AXE_JS.is_file(), "axe-core not installed (run scripts/browser-deps.sh)"
    driver.execute_script(AXE_JS.read_text())
    driver.set_script_timeout(60)
    result = driver.execute_async_script(
        "const done = arguments[arguments.length - 1];"
        "axe.run(document, {runOnly: {type: 'tag', values: ['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa']}})"
        "  .then(r => done(r.violations)).catch(e => done([{id: 'axe-error', impact: 'critical',"
        "  description: String(e), nodes: []}]));"
    )
    summary = [
        {
            "id": v["id"],
            "impact": v["impact"],
            "description": v["description"],
            "nodes": [n.get("target") for n in v.get("nodes", [])][:5],
        }
        for v in result
    ]
    page = re.sub(r"[^a-z0-9]+", "-", driver.current_url.split("//", 1)[-1].split("/", 1)[-1].lower()).strip(
        "-"
    )
    folder = var_dir() / "screenshots"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"axe-{page or 'home'}.json").write_text(json.dumps(summary, indent=1))
    return [v for v in summary if v["impact"] in impacts]


def by_css(driver: Any, css: str) -> list[Any]:
    """Every element the selector finds (none: an empty list)."""
    from selenium.webdriver.common.by import By

    return driver.find_elements(By.CSS_SELECTOR, css)


def one(driver: Any, css: str) -> Any:
    """The first element the selector finds (NoSuchElementException when none)."""
    from selenium.webdriver.common.by import By

    return driver.find_element(By.CSS_SELECTOR, css)


def present(css: str) -> Any:
    """A wait condition: an element the selector finds is in the page."""
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support import expected_conditions as ec

    return ec.presence_of_element_located((By.CSS_SELECTOR, css))


def ask(driver: Any, text: str) -> Any:
    """Type the question into the chat page and press Enter; wait for one more answered turn than the page showed
    before (failing on the page's error line instead) and return that turn."""
    from selenium.webdriver.common.keys import Keys

    before = len(by_css(driver, ".turn.answered"))
    box = one(driver, "#question")
    box.clear()
    box.send_keys(text, Keys.ENTER)
    wait(
        driver,
        lambda d: len(by_css(d, ".turn.answered")) > before or one(d, "#ask-error").is_displayed(),
        timeout=120,
    )
    assert not one(driver, "#ask-error").is_displayed(), one(driver, "#ask-error").text
    return by_css(driver, ".turn.answered")[-1]
