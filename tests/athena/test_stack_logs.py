"""The stack's logs stay bounded: under `make run` each component appends to var/log/<name>.log for as long as
the stack runs (a line per web request, several per task), and nothing trimmed them."""

from __future__ import annotations

import pytest

from athena.stack import logs_trim

pytestmark = pytest.mark.unit


def test_a_log_over_the_limit_is_moved_aside_and_its_writer_goes_on_at_its_start(
    tmp_path, monkeypatch
) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setenv("ATHENA_VAR_DIR", str(tmp_path))
    logs = tmp_path / "log"
    logs.mkdir()
    (logs / "worker.log").write_bytes(b"small\n")
    (logs / "web.log.1").write_bytes(b"an older part\n")
    with open(logs / "web.log", "ab", buffering=0) as writer:  # as the launcher hands it to a component
        writer.write(b"GET /api/v1/health 200\n" * 200)

        assert logs_trim(limit=1000) == ["web.log"]

        assert (logs / "web.log.1").read_bytes() == b"GET /api/v1/health 200\n" * 200
        assert (logs / "web.log").stat().st_size == 0
        writer.write(b"POST /api/v1/ask 200\n")
    # appended at the new end: no run of zero bytes where the old content was
    assert (logs / "web.log").read_bytes() == b"POST /api/v1/ask 200\n"
    assert (logs / "worker.log").read_bytes() == b"small\n"
    assert logs_trim(limit=1000) == []
