"""Beat's schedule follows ATHENA_NIGHTLY_SYNC_HOUR and ATHENA_NIGHTLY_SYNC_MINUTE (read once, when the Celery
app is finalized: each case runs in a process of its own, as beat does)."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = [pytest.mark.unit]

ROOT = Path(__file__).resolve().parents[2]

PRINT_SCHEDULE = """
import json, django
django.setup()
from athena.celery import app
app.finalize()
print(json.dumps({name: [sorted(entry["schedule"].hour), sorted(entry["schedule"].minute)]
                  for name, entry in app.conf.beat_schedule.items() if name.startswith("nightly")}))
"""


def _nightly_schedule(**env: str) -> dict[str, list[list[int]]]:
    result = subprocess.run(
        [sys.executable, "-c", PRINT_SCHEDULE],
        cwd=ROOT,
        env={
            **{name: value for name, value in os.environ.items() if not name.startswith("ATHENA_NIGHTLY_")},
            "DJANGO_SETTINGS_MODULE": "athena.settings.test",
            **env,
        },
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    return json.loads(result.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize(
    ("hour", "minute", "sync", "repack"),
    [
        ("", "", [[2], [0]], [[1], [30]]),  # the defaults: 02:00, the repack half an hour before
        ("2", "45", [[2], [45]], [[2], [15]]),
        ("0", "10", [[0], [10]], [[23], [40]]),  # the repack falls on the day before
    ],
)
def test_the_nightly_sync_fires_at_the_configured_hour_and_minute(hour, minute, sync, repack):
    env = {"ATHENA_NIGHTLY_SYNC_HOUR": hour, "ATHENA_NIGHTLY_SYNC_MINUTE": minute}
    schedule = _nightly_schedule(**{name: value for name, value in env.items() if value})
    assert schedule == {"nightly source folder sync": sync, "nightly posting block repack": repack}


def test_a_minute_out_of_range_is_refused_with_its_name():
    with pytest.raises(subprocess.CalledProcessError) as refused:
        _nightly_schedule(ATHENA_NIGHTLY_SYNC_MINUTE="60")
    assert "ATHENA_NIGHTLY_SYNC_MINUTE=60 is above the maximum 59" in refused.value.stderr
