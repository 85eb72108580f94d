import os
import signal
import subprocess
import time
import uuid
from collections.abc import Iterator

import pytest
from django.test import override_settings
from rest_framework.test import APIClient

from tests.factories import UserFactory

pytestmark = [pytest.mark.integration, pytest.mark.django_db]


def _staff_client() -> APIClient:
    from tests.api import client_for, make_user

    return client_for(make_user("ops", superuser=True))


def test_only_staff_see_component_details():
    from tests.api import client_for, make_user

    clients = (APIClient(), client_for(make_user("emp", "employees")))
    staff = _staff_client()
    with override_settings(REDIS_URL="redis://127.0.0.1:1/0"):
        for client in clients:
            response = client.get("/api/v1/health")
            # a load balancer still learns up or down, nothing about versions, hosts or error text
            assert response.status_code == 503 and response.json() == {"status": "degraded"}
        assert "components" in staff.get("/api/v1/health").json()


def test_health_reports_every_component_healthy(celery_worker_process):
    response = _staff_client().get("/api/v1/health")
    body = response.json()
    assert response.status_code == 200, body
    assert body["status"] == "ok"
    assert set(body["components"]) == {"database", "pgvector", "redis", "worker"}
    assert body["components"]["pgvector"]["detail"].startswith("pgvector 0.")
    worker = body["components"]["worker"]
    # every queue named with the session's worker, which consumes them all (tests/conftest.py)
    for queue in ("embed", "housekeeping", "ingest", "realtime"):
        assert f"{queue}: " in worker["detail"] and f"test-{os.getpid()}@" in worker["detail"], worker
    # the check returns at the first reply; a broadcast that waits out its 1 s timeout cannot be under it
    assert worker["ms"] < 1000, worker


def test_health_names_redis_when_it_is_down():
    staff = _staff_client()
    with override_settings(REDIS_URL="redis://127.0.0.1:1/0"):
        response = staff.get("/api/v1/health")
    body = response.json()
    assert response.status_code == 503
    assert body["status"] == "degraded"
    assert body["components"]["redis"]["healthy"] is False
    assert body["components"]["database"]["healthy"] is True
    assert "redis" in body["components"]["worker"]["detail"]


def test_web_readiness_leaves_the_workers_out():
    """The web's readiness probe (?workers=false): no worker runs here, and the web is still ready."""
    response = APIClient().get("/api/v1/health?workers=false")
    assert response.status_code == 200, response.json()
    assert response.json() == {"status": "ok"}  # anyone: the status only
    staff = APIClient()
    staff.force_authenticate(UserFactory(username="probe-staff", staff=True))
    body = staff.get("/api/v1/health?workers=false").json()
    assert set(body["components"]) == {"database", "pgvector", "redis"}
    # only true or false: "0" or "no" read as true would have counted the workers in
    assert APIClient().get("/api/v1/health?workers=FALSE").status_code == 200
    refused = APIClient().get("/api/v1/health?workers=0")
    assert (
        refused.status_code == 400 and "workers must be true or false" in refused.json()["error"]["message"]
    )


@pytest.fixture()
def own_consumers_key(settings, redis_client) -> Iterator[str]:  # type: ignore[no-untyped-def]
    """Workers started by the test beat under a key of its own, apart from the session's worker."""
    key = f"athena:test-{uuid.uuid4().hex[:12]}:consumers"
    settings.ATHENA_CONSUMERS_KEY = key
    yield key
    redis_client.delete(key, *redis_client.scan_iter(match=f"{key}:rt:*", count=500))


def _worker(name: str, queues: str, key: str) -> subprocess.Popen:
    from django.conf import settings

    from tests.conftest import ROOT, celery_worker_argv

    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "athena.settings.test",
        "ATHENA_DB_NAME": settings.DATABASES["default"]["NAME"],
        "ATHENA_CONSUMERS_KEY": key,
        # no model loading (three workers on two cores), and not counted by the session's question admission
        "ATHENA_WORKER_WARM_UP": "false",
        "ATHENA_REALTIME_KEYS": f"{key}:rt",
    }
    argv = celery_worker_argv(queues, f"{name}-{os.getpid()}")
    return subprocess.Popen(
        argv, cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True
    )


def _worker_check_until(staff: APIClient, wanted: str) -> dict:
    deadline = time.monotonic() + 90
    while True:
        check = staff.get("/api/v1/health").json()["components"]["worker"]
        if wanted in check["detail"] or time.monotonic() > deadline:
            return check
        time.sleep(0.5)


def test_health_is_degraded_while_a_queue_has_no_worker(own_consumers_key):
    """A worker that takes only questions (the stack's answerer) answered the ping, and health said ok while
    nothing consumed the ingest, embed and housekeeping queues: every ingest waited, unexplained."""
    staff = _staff_client()
    answerer = _worker("answerer", "realtime", own_consumers_key)
    others = None
    try:
        check = _worker_check_until(staff, f"realtime: answerer-{os.getpid()}@")
        assert check["healthy"] is False, check
        assert "no worker consumes embed, housekeeping, ingest: embed: none;" in check["detail"], check
        assert staff.get("/api/v1/health").status_code == 503

        others = _worker("ingester", "housekeeping,embed,ingest", own_consumers_key)
        check = _worker_check_until(staff, f"ingest: ingester-{os.getpid()}@")
        assert check["healthy"] is True, check
        assert f"realtime: answerer-{os.getpid()}@" in check["detail"], check
        assert staff.get("/api/v1/health").status_code == 200

        # a worker stopped says goodbye: its queues are missing at the next check, not 10 s later
        others.terminate()
        others.wait(timeout=30)
        check = staff.get("/api/v1/health").json()["components"]["worker"]
        assert (
            check["healthy"] is False and "no worker consumes embed, housekeeping, ingest" in check["detail"]
        )

        # a worker killed says nothing and beats no more; until its last beat is stale it is judged by the ping
        os.killpg(answerer.pid, signal.SIGKILL)
        answerer.wait(timeout=30)
        check = staff.get("/api/v1/health").json()["components"]["worker"]
        assert check["healthy"] is False, check
        assert "realtime: none" in check["detail"], check
        assert f"no answer to a ping within 1s: answerer-{os.getpid()}@" in check["detail"], check
    finally:
        for proc in (answerer, others):
            if proc is not None and proc.poll() is None:
                proc.terminate()
                try:
                    proc.wait(timeout=30)
                except subprocess.TimeoutExpired:
                    proc.kill()
