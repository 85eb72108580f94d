"""The web server's access log names each request's method, path and status, not its query string or the page
it came from: a compliance search (`/compliance/?text=...`: words of the questions searched for; `document=`: a
restricted document's source), a document lookup (`?source=`) or a sign-in's `?next=` would otherwise be
written to a log that operators read, which the audit log's readers alone may see."""

from __future__ import annotations

import os
import subprocess
import sys
import time
import urllib.error
import urllib.request

import pytest

from tests.launcher import ROOT, free_port

pytestmark = [pytest.mark.integration]


def test_the_access_log_holds_no_query_string_or_referer(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """A real gunicorn with the configuration every deployment uses (athena/gunicorn_conf.py)."""
    port = free_port()
    log = tmp_path / "web.log"
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "athena.settings.test", "ATHENA_WEB_WORKERS": "1"}
    argv = [sys.executable, "-m", "gunicorn", "-c", "python:athena.gunicorn_conf", "athena.wsgi:application"]
    with open(log, "ab") as out:
        server = subprocess.Popen(
            [*argv, "--bind", f"127.0.0.1:{port}"], cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT
        )
    try:
        url = f"http://127.0.0.1:{port}/compliance/?text=break-glass+vault+password&document=restricted%2Fplan.md"
        request = urllib.request.Request(
            url, headers={"Referer": f"http://127.0.0.1:{port}/?q=referer-words"}
        )
        deadline = time.monotonic() + 60
        while True:
            try:
                urllib.request.urlopen(request, timeout=5)  # noqa: S310 - the test's own local server
                break
            except urllib.error.HTTPError:
                break  # answered, with an error status
            except OSError:
                if time.monotonic() > deadline or server.poll() is not None:
                    raise
                time.sleep(0.3)
        deadline = time.monotonic() + 10
        while b'"GET /accounts/login/ HTTP/1.1"' not in log.read_bytes() and time.monotonic() < deadline:
            time.sleep(0.1)
    finally:
        server.terminate()
        server.wait(timeout=30)
    written = log.read_bytes()
    # the search was answered (a redirect to the sign-in page, which was followed) and both requests logged
    assert b'"GET /compliance/ HTTP/1.1" 302' in written, written[-2000:]
    assert b'"GET /accounts/login/ HTTP/1.1" 200' in written, written[-2000:]
    for words in (b"break-glass", b"vault", b"plan.md", b"referer-words", b"text=", b"next="):
        assert words not in written, (words, written[-2000:])
