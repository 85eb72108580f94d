"""Malformed requests get a 4xx with a clear message in the one error format; never a 500. Also: the OpenAPI
schema is valid."""

from __future__ import annotations

import pytest
import yaml
from django.core.management import call_command
from rest_framework.test import APIClient

from tests.api import client_for, make_user

pytestmark = [pytest.mark.django_db, pytest.mark.integration]


@pytest.fixture()
def client() -> APIClient:  # type: ignore[override]
    # every role, so the role check is never the answer
    return client_for(make_user("mal", "employees", "kb-admins", "compliance"))


JSON_ENDPOINTS = [
    ("post", "/api/v1/ask"),
    ("post", "/api/v1/answers/1/feedback"),
    ("post", "/api/v1/curation/1/resolve"),
    ("put", "/api/v1/documents/1/acl"),
]
BAD_BODIES = [
    "",
    "null",
    "[]",
    "42",
    '"text"',
    "{",
    '{"question": {"nested": true}}',
    "\x00\x01",
    '{"vote": null, "resolution": null, "access_tier": null, "groups": "x"}',
]


@pytest.mark.parametrize(("method", "url"), JSON_ENDPOINTS)
@pytest.mark.parametrize("body", BAD_BODIES)
def test_bad_json_bodies(client, method, url, body) -> None:  # type: ignore[no-untyped-def]
    response = getattr(client, method)(url, body, content_type="application/json")
    assert 400 <= response.status_code < 500, (url, body, response.content)
    assert response.json()["error"]["message"]


@pytest.mark.parametrize(("method", "url"), JSON_ENDPOINTS)
def test_wrong_content_type(client, method, url) -> None:  # type: ignore[no-untyped-def]
    response = getattr(client, method)(url, "question=hi", content_type="text/plain")
    assert response.status_code == 415
    assert response.json()["error"]["code"] == "unsupported_media_type"


@pytest.mark.parametrize(("method", "url"), JSON_ENDPOINTS)
def test_oversized_bodies(client, method, url) -> None:  # type: ignore[no-untyped-def]
    response = getattr(client, method)(
        url, '{"question": "' + "x" * 3_000_000 + '"}', content_type="application/json"
    )
    assert response.status_code in (400, 413), url
    assert response.json()["error"]["message"]


@pytest.mark.parametrize(
    "url",
    [
        "/api/v1/documents?limit=x",
        "/api/v1/documents?offset=-5",
        "/api/v1/documents?doc_type=%00",
        "/api/v1/documents?mine=perhaps",
        "/api/v1/documents/lookup?source=" + "a" * 2000,
        "/api/v1/curation?resolved=maybe",
        "/api/v1/audit/events?offset=-1",
        "/api/v1/audit/export.csv?since=2025-13-01",
    ],
)
def test_bad_query_parameters(client, url) -> None:  # type: ignore[no-untyped-def]
    response = client.get(url)
    assert response.status_code == 400, (url, response.content)
    assert response.json()["error"]["code"] == "invalid"


@pytest.mark.parametrize(
    "url",
    [
        "/api/v1/documents/99999999999999999999",
        "/api/v1/passages/-1",
        "/api/v1/conversations/zzz",
        "/api/v1/answers/abc/feedback",
        "/api/v1/nowhere",
    ],
)
def test_odd_paths_are_404(client, url) -> None:  # type: ignore[no-untyped-def]
    assert client.get(url).status_code in (404, 405)


def test_wrong_methods(client) -> None:  # type: ignore[no-untyped-def]
    assert client.delete("/api/v1/documents").status_code == 405
    assert client.get("/api/v1/documents/upload").status_code == 405
    response = client.put("/api/v1/ask", {"question": "x"}, format="json")
    assert response.status_code == 405 and response.json()["error"]["code"] == "method_not_allowed"


def test_upload_with_json_is_refused(client) -> None:  # type: ignore[no-untyped-def]
    response = client.post("/api/v1/documents/upload", {"file": "x"}, format="json")
    assert response.status_code == 415


def test_openapi_schema_is_valid(tmp_path) -> None:
    out = tmp_path / "schema.yml"
    call_command("spectacular", "--validate", "--fail-on-warn", "--file", str(out))
    text = out.read_text()
    for path in ("/api/v1/ask", "/api/v1/documents/upload", "/api/v1/audit/export.{fmt}", "/api/v1/curation"):
        assert path in text, path
    # the schema says what the API returns
    schema = yaml.safe_load(text)
    paths, components = schema["paths"], schema["components"]["schemas"]
    for path, page in (("/api/v1/documents", "DocumentPage"), ("/api/v1/audit/events", "AuditEventPage")):
        body = paths[path]["get"]["responses"]["200"]["content"]["application/json"]["schema"]
        assert body == {"$ref": f"#/components/schemas/{page}"}, path
        assert set(components[page]["properties"]) == {"count", "limit", "offset", "results"}
    upload = paths["/api/v1/documents/upload"]["post"]["requestBody"]["content"]["multipart/form-data"]
    upload_fields = components[upload["schema"]["$ref"].rsplit("/", 1)[1]]["properties"]
    assert upload_fields["file"]["format"] == "binary"  # a file picker, not a URI box
    assert components["Health"]["required"] == ["status"]  # components: staff only
    (fmt,) = [p for p in paths["/api/v1/audit/export.{fmt}"]["get"]["parameters"] if p["name"] == "fmt"]
    assert fmt["schema"]["enum"] == ["csv", "jsonl"]
    for path in ("/api/v1/conversations", "/api/v1/curation"):
        assert {"limit", "offset"} <= {p["name"] for p in paths[path]["get"]["parameters"]}, path


def test_schema_is_served(client) -> None:  # type: ignore[no-untyped-def]
    assert client.get("/api/v1/schema").status_code == 200


@pytest.mark.parametrize(
    "url",
    [
        "/api/v1/documents?offset=31692957330570790681182208",  # found by schemathesis: bigint overflow
        "/api/v1/documents?offset=-5",
        "/api/v1/documents?q=abc%00def",  # NUL byte: PostgreSQL refuses it
    ],
)
def test_values_the_database_cannot_hold_are_a_400(client, url) -> None:  # type: ignore[no-untyped-def]
    response = client.get(url)
    assert response.status_code == 400, response.content
    assert response.json()["error"]["message"]
