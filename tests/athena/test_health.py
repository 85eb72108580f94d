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
    assert worker["detail"].startswith("answered first: ")
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
