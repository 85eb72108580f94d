from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from athena import throttling
from athena.celery import app
from tests.api import make_user

SAMPLE = Path(__file__).resolve().parents[2] / "knowledge" / "sample_kb"


def write_docs(root: Path, docs: dict[str, str]) -> Path:
    for name, text in docs.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return root


@pytest.fixture()
def eager() -> Iterator[None]:
    """Queued tasks run here, as a worker would run them."""
    app.conf.task_always_eager = True
    try:
        yield
    finally:
        app.conf.task_always_eager = False


@pytest.fixture()
def small_corpus(tmp_path: Path) -> Path:
    return write_docs(
        tmp_path / "kb",
        {
            "bgp.md": "---\ntitle: BGP timers\nvendor: Cisco\ndoc_type: config_guide\n---\n# BGP timers\n\n"
            "Set `timers bgp 30 90` under the router process. The default keepalive is 60 seconds and the "
            "hold time is 180 seconds. See sop-dns-failover.md for the DNS procedure.\n\n"
            "## Verification\n\nRun `show ip bgp summary` and check the state of every neighbor.\n",
            "sop-dns-failover.md": "# DNS primary failover\n\n1. Confirm the primary at 192.0.2.53 is down.\n"
            "2. Promote the secondary with `rndc reload`.\n3. Lower the TTL to 300 seconds.\n",
            "ntp.txt": "Title: NTP drift runbook\n\nWhen chronyd reports drift above 100 ms, restart chronyd and "
            "check the upstream servers with chronyc sources.\n",
        },
    )


@pytest.fixture()
def uploader(db, settings, tmp_path):  # type: ignore[no-untyped-def]
    """An employee who uploads through the API, with fresh throttling counters; uploads are stored under this
    test's temporary folder."""
    settings.MEDIA_ROOT = tmp_path / "media"
    settings.FILE_UPLOAD_TEMP_DIR = str(tmp_path)
    user = make_user("uploader", "employees")
    throttling.user_counters_clear(user)
    yield user
    throttling.user_counters_clear(user)
