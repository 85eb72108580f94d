import pytest
from django.test import override_settings
from rest_framework.test import APIClient


@pytest.mark.integration
@pytest.mark.django_db
def test_health_reports_every_component_healthy(celery_worker_process):
    response = APIClient().get("/api/v1/health")
    body = response.json()
    assert response.status_code == 200, body
    assert body["status"] == "ok"
    assert set(body["components"]) == {"database", "pgvector", "redis", "worker"}
    assert body["components"]["pgvector"]["detail"].startswith("pgvector 0.")


@pytest.mark.integration
@pytest.mark.django_db
def test_health_names_redis_when_it_is_down():
    with override_settings(REDIS_URL="redis://127.0.0.1:1/0"):
        response = APIClient().get("/api/v1/health")
    body = response.json()
    assert response.status_code == 503
    assert body["status"] == "degraded"
    assert body["components"]["redis"]["healthy"] is False
    assert body["components"]["database"]["healthy"] is True
    assert "redis" in body["components"]["worker"]["detail"]


@pytest.mark.integration
@pytest.mark.django_db
def test_web_readiness_leaves_the_workers_out():
    """The web's readiness probe (?workers=false): no worker runs here, and the web is still ready."""
    response = APIClient().get("/api/v1/health?workers=false")
    body = response.json()
    assert response.status_code == 200, body
    assert set(body["components"]) == {"database", "pgvector", "redis"}
