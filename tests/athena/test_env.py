import os
import subprocess
import sys
from pathlib import Path

import pytest

from athena.env import Env, EnvError, database_from_url

pytestmark = [pytest.mark.unit]

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize(
    ("name", "value", "call", "message"),
    [
        ("PORT", "eighty", lambda e: e.int("PORT", 8000), "PORT='eighty' is not an integer"),
        (
            "PORT",
            "70000",
            lambda e: e.int("PORT", 8000, maximum=65535),
            "PORT=70000 is above the maximum 65535",
        ),
        ("X_DEBUG", "maybe", lambda e: e.bool("X_DEBUG", False), "X_DEBUG='maybe' is not a boolean"),
        (
            "DATABASE_URL",
            "mysql://x/y",
            lambda e: e.url("DATABASE_URL", schemes=("postgres",)),
            "DATABASE_URL",
        ),
        ("LVL", "LOUD", lambda e: e.choice("LVL", "INFO", ("INFO", "DEBUG")), "not one of: INFO, DEBUG"),
    ],
)
def test_malformed_values_name_the_variable(name, value, call, message):
    with pytest.raises(EnvError, match=message.replace("(", r"\(")):
        call(Env({name: value}))


def test_defaults_and_parsing():
    env = Env({"A": " 12 ", "B": "yes", "C": "a, b,,c", "EMPTY": "  "})
    assert env.int("A", 1) == 12
    assert env.bool("B", False) is True
    assert env.list("C") == ["a", "b", "c"]
    assert env.int("EMPTY", 7) == 7
    assert env.str("MISSING", "d") == "d"


def test_database_url_translation():
    db = database_from_url("postgresql://kb:s%40cret@db.example:5544/athena")
    assert (db["USER"], db["PASSWORD"], db["HOST"], db["PORT"], db["NAME"]) == (
        "kb",
        "s@cret",
        "db.example",
        "5544",
        "athena",
    )


def test_malformed_environment_fails_at_startup_with_the_variable_named():
    env = dict(os.environ, ATHENA_QUESTIONS_PER_HOUR="lots", DJANGO_SETTINGS_MODULE="athena.settings.test")
    result = subprocess.run(
        [sys.executable, "manage.py", "check"], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120
    )
    assert result.returncode != 0
    assert "ATHENA_QUESTIONS_PER_HOUR='lots' is not an integer" in result.stderr


def test_the_replaced_quantize_setting_is_refused_with_its_successor_named():
    """ATHENA_EMBEDDER_QUANTIZE=true used to mean int8 vectors; ignoring it would query an int8 index with
    bf16/fp32 vectors, so start-up refuses it and names ATHENA_EMBEDDER_PRECISION."""
    env = dict(os.environ, ATHENA_EMBEDDER_QUANTIZE="true", DJANGO_SETTINGS_MODULE="athena.settings.test")
    result = subprocess.run(
        [sys.executable, "manage.py", "check"], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120
    )
    assert result.returncode != 0
    assert "ATHENA_EMBEDDER_PRECISION=auto|bf16|fp32|int8" in result.stderr


def _broker(settings_module: str, **extra: str) -> str:
    code = "import django; django.setup(); from athena.celery import app; print(app.conf.broker_url)"
    env = {k: v for k, v in os.environ.items() if k != "REDIS_URL"}
    env.update(DJANGO_SETTINGS_MODULE=settings_module, **extra)
    result = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 0, result.stderr[-2000:]
    return result.stdout.strip().splitlines()[-1]


def test_the_tests_broker_is_a_redis_database_no_stack_worker_reads():
    """A developer's `make run` and `make test` share the Redis server: the stack's worker must never take a
    test's task (it would run it against the development database), so the tests use a database of their own."""
    stack, tests = _broker("athena.settings.local"), _broker("athena.settings.test")
    assert stack.rsplit("/", 1)[0] == tests.rsplit("/", 1)[0]  # the same server
    assert stack.endswith("/0") and tests.endswith("/15")
    # an operator's REDIS_URL moves both, and the tests still keep a database of their own
    assert _broker("athena.settings.test", REDIS_URL="redis://10.0.0.5:6379/2") == "redis://10.0.0.5:6379/15"


def test_the_debug_page_hides_the_connection_urls_which_carry_passwords(settings) -> None:  # type: ignore[no-untyped-def]
    """Django's debug page (ATHENA_DEBUG) lists the settings; REDIS_URL and the broker's and result backend's
    URLs carry the embedded Redis's password under names Django's own pattern does not hide."""
    from django.views.debug import get_exception_reporter_filter

    settings.REDIS_URL = settings.CELERY_BROKER_URL = "redis://:s3cret-pass@127.0.0.1:6390/0"
    shown = get_exception_reporter_filter(None).get_safe_settings()
    for name in ("REDIS_URL", "CELERY_BROKER_URL", "CELERY_RESULT_BACKEND"):
        assert "s3cret" not in str(shown[name]) and "pass@" not in str(shown[name]), name
