"""Production settings insist on HTTPS, and every server starts with the production settings unless told
otherwise."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = [pytest.mark.unit]

ROOT = Path(__file__).resolve().parents[2]


def test_production_settings_insist_on_https() -> None:
    code = (
        "import django; from django.conf import settings; django.setup(); "
        "print(settings.SECURE_SSL_REDIRECT, settings.SECURE_HSTS_SECONDS >= 31536000, "
        "settings.SECURE_PROXY_SSL_HEADER, settings.SESSION_COOKIE_SECURE, settings.CSRF_COOKIE_SECURE)"
    )
    env = {
        "PATH": "/usr/bin:/bin",
        "DJANGO_SETTINGS_MODULE": "athena.settings.production",
        "ATHENA_SECRET_KEY": "x" * 50,
        "ATHENA_AUDIT_KEY": "k" * 40,
    }
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True, check=True
    )
    assert out.stdout.split() == ["True", "True", "('HTTP_X_FORWARDED_PROTO',", "'https')", "True", "True"]
    env.pop("ATHENA_AUDIT_KEY")
    missing = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True)
    assert missing.returncode != 0 and "ATHENA_AUDIT_KEY" in missing.stderr


@pytest.mark.parametrize("module", ["athena.wsgi", "athena.celery"])
def test_servers_default_to_production_settings(module: str) -> None:
    code = f"import os, {module}; print(os.environ['DJANGO_SETTINGS_MODULE'])"
    env = {"PATH": "/usr/bin:/bin", "ATHENA_SECRET_KEY": "x" * 50, "ATHENA_AUDIT_KEY": "k" * 40}
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip().splitlines()[-1] == "athena.settings.production"
    # and production refuses to start without its secrets instead of running with development defaults
    bare = subprocess.run(
        [sys.executable, "-c", f"import {module}; from django.conf import settings; settings.DEBUG"],
        cwd=ROOT,
        env={"PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
    )
    assert bare.returncode != 0 and "ATHENA_SECRET_KEY" in bare.stderr


def test_a_changed_secret_key_still_opens_what_was_sealed_under_the_old_one() -> None:
    """ATHENA_SECRET_KEY_FALLBACKS: a worker whose key was changed still opens a question sealed by a web host
    under the old key (athena.sealing), as Django still accepts the old key's sessions."""
    code = (
        "import sys, django; from django.conf import settings; django.setup(); "
        "from athena.sealing import Purpose, seal, unseal; "
        "print(seal('q', purpose=Purpose.QUESTION)) if sys.argv[1] == 'seal' "
        "else print(unseal(sys.argv[2], purpose=Purpose.QUESTION))"
    )
    old, new = "o" * 50, "n" * 50
    env = {"PATH": "/usr/bin:/bin", "DJANGO_SETTINGS_MODULE": "athena.settings.production"}
    env |= {"ATHENA_AUDIT_KEY": "k" * 40, "ATHENA_SECRET_KEY": old}

    def run(*args: str, **more: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-c", code, *args], cwd=ROOT, env=env | more, capture_output=True, text=True
        )

    token = run("seal").stdout.strip().splitlines()[-1]
    rotated = run("unseal", token, ATHENA_SECRET_KEY=new, ATHENA_SECRET_KEY_FALLBACKS=old)
    assert rotated.returncode == 0 and rotated.stdout.strip().splitlines()[-1] == "q", rotated.stderr[-2000:]
    forgotten = run("unseal", token, ATHENA_SECRET_KEY=new)
    assert forgotten.returncode != 0 and "KeyMismatch" in forgotten.stderr  # a kind of InvalidToken
    assert "ATHENA_SECRET_KEY_FALLBACKS" in forgotten.stderr  # the error says where to look

    # a fallback key with a comma in it is cut in two by the comma-separated list: refused at start-up, instead of
    # every token sealed under it failing later
    cut = run("seal", ATHENA_SECRET_KEY_FALLBACKS=f"{old[:20]},{old[20:]}")
    assert cut.returncode != 0 and "ATHENA_SECRET_KEY_FALLBACKS" in cut.stderr and "40" in cut.stderr
