"""Document endpoints: ACL-filtered list/detail/metadata/passages, uploads, admin ACL and re-ingest."""

from __future__ import annotations

import time
from datetime import timedelta

import pytest
from django.contrib.auth.models import Group, User
from django.core.files.uploadedfile import SimpleUploadedFile
from django.utils import timezone
from rest_framework.test import APIClient

from athena import throttling
from audit.models import AuditEvent
from knowledge.models import Chunk, Document
from tests.api import client_for, make_user

pytestmark = [pytest.mark.django_db, pytest.mark.integration]


def make_document(
    source: str,
    *,
    tier: str = "internal",
    groups: tuple[str, ...] = (),
    owner: User | None = None,
    text: str = "Some text.",
    expires_at=None,
) -> Document:
    document = Document.objects.create(
        source=source,
        title=source.rsplit("/", 1)[-1],
        access_tier=tier,
        status="indexed",
        owner=owner,
        expires_at=expires_at,
        chunk_count=1,
        ingested_at=timezone.now(),
    )
    group_rows = [Group.objects.get_or_create(name=g)[0] for g in groups]
    document.allowed_groups.set(group_rows)
    Chunk.objects.create(
        document=document,
        ordinal=0,
        text=text,
        section_path="Intro > Steps",
        content_hash="x" * 64,
        active=True,
        acl_open=not groups and tier in ("public", "internal") and owner is None,
        acl_groups=[g.pk for g in group_rows],
        access_tier=tier,
        owner_id_acl=owner.pk if owner else None,
    )
    return document


@pytest.fixture()
def corpus(db):  # type: ignore[no-untyped-def]
    alice = make_user("alice", "employees")
    noc = make_user("nocadmin", "employees", "noc-admins")
    return {
        "alice": alice,
        "noc": noc,
        "open": make_document("public/runbook.md", text="Restart the service with systemctl restart foo."),
        "restricted": make_document("restricted/secret.md", tier="restricted", groups=("noc-admins",)),
        "nogroup": make_document("restricted/orphan.md", tier="restricted"),
        "private": make_document("uploads/1/mine.md", tier="confidential", owner=noc),
        "expired": make_document("public/old.md", expires_at=timezone.now() - timedelta(hours=1)),
    }


def test_list_shows_only_visible_documents(corpus) -> None:  # type: ignore[no-untyped-def]
    response = client_for(corpus["alice"]).get("/api/v1/documents")
    assert response.status_code == 200
    assert [d["source"] for d in response.json()["results"]] == ["public/runbook.md"]
    response = client_for(corpus["noc"]).get("/api/v1/documents")
    sources = {d["source"] for d in response.json()["results"]}
    assert sources == {"public/runbook.md", "restricted/secret.md", "uploads/1/mine.md"}
    assert response.json()["count"] == 3


def test_list_filters_and_validation(corpus) -> None:  # type: ignore[no-untyped-def]
    client = client_for(corpus["noc"])
    assert client.get("/api/v1/documents?access_tier=restricted").json()["count"] == 1
    assert client.get("/api/v1/documents?mine=true").json()["results"][0]["source"] == "uploads/1/mine.md"
    bad = client.get("/api/v1/documents?access_tier=top-secret")
    assert bad.status_code == 400
    assert bad.json()["error"]["code"] == "invalid"
    assert client.get("/api/v1/documents?limit=-1").status_code == 400


def test_invisible_document_is_404_like_a_missing_one(corpus) -> None:  # type: ignore[no-untyped-def]
    client = client_for(corpus["alice"])
    hidden = client.get(f"/api/v1/documents/{corpus['restricted'].pk}")
    missing = client.get("/api/v1/documents/99999999")
    assert hidden.status_code == missing.status_code == 404
    assert hidden.json() == missing.json()
    assert "secret" not in hidden.content.decode()
    assert client.get(f"/api/v1/documents/{corpus['private'].pk}").status_code == 404
    assert client.get(f"/api/v1/documents/{corpus['expired'].pk}").status_code == 404
    assert client.get(f"/api/v1/documents/{corpus['restricted'].pk}/metadata").status_code == 404
    assert client.get("/api/v1/documents/lookup?source=restricted/secret.md").status_code == 404


def test_a_reader_sees_only_the_groups_of_a_document_they_share_and_an_admin_sees_all(corpus) -> None:  # type: ignore[no-untyped-def]
    shared = make_document("restricted/shared.md", tier="restricted", groups=("noc-admins", "merger-team"))
    noc = client_for(corpus["noc"])
    assert noc.get(f"/api/v1/documents/{shared.pk}").json()["groups"] == ["noc-admins"]
    listed = {d["source"]: d["groups"] for d in noc.get("/api/v1/documents").json()["results"]}
    assert listed["restricted/shared.md"] == ["noc-admins"]
    assert "merger-team" not in noc.get("/api/v1/documents").content.decode()
    admin = client_for(make_user("curator", "employees", "kb-admins", "noc-admins"))
    assert admin.get(f"/api/v1/documents/{shared.pk}").json()["groups"] == ["merger-team", "noc-admins"]


def test_detail_metadata_and_lookup(corpus) -> None:  # type: ignore[no-untyped-def]
    client = client_for(corpus["noc"])
    doc = corpus["restricted"]
    assert client.get(f"/api/v1/documents/{doc.pk}").json()["groups"] == ["noc-admins"]
    meta = client.get(f"/api/v1/documents/{doc.pk}/metadata").json()
    assert meta["title"] == "secret.md" and meta["sections"] == ["Intro > Steps"]
    assert meta["access_tier"] == "restricted"
    assert client.get("/api/v1/documents/lookup?source=restricted/secret.md").json()["id"] == doc.pk
    assert client.get("/api/v1/documents/lookup").status_code == 400


def test_passage_respects_chunk_acl(corpus) -> None:  # type: ignore[no-untyped-def]
    open_chunk = corpus["open"].chunks.get()
    secret_chunk = corpus["restricted"].chunks.get()
    alice = client_for(corpus["alice"])
    body = alice.get(f"/api/v1/passages/{open_chunk.pk}").json()
    assert (
        body["text"].startswith("Restart the service") and body["document"]["source"] == "public/runbook.md"
    )
    assert alice.get(f"/api/v1/passages/{secret_chunk.pk}").status_code == 404
    assert client_for(corpus["noc"]).get(f"/api/v1/passages/{secret_chunk.pk}").status_code == 200


def test_passage_names_the_lines_its_format_marks_as_code(corpus) -> None:  # type: ignore[no-untyped-def]
    """The citation viewer sets as code the lines the chunk recorded as marked code (Chunk.code_lines), by
    their number in the text it is shown; a marking line that the output guard removes does not shift them."""
    text = "Set the uplink:\ninterface Quillgate0/1\n relay-hold 45\nApply it in a change window."
    document = make_document("public/uplink.md", text=text)
    chunk = document.chunks.get()
    chunk.code_lines = ["interface Quillgate0/1", "relay-hold 45"]
    chunk.save(update_fields=["code_lines"])
    alice = client_for(corpus["alice"])
    body = alice.get(f"/api/v1/passages/{chunk.pk}").json()
    assert body["code_lines"] == [1, 2] and body["text"].split("\n")[1] == "interface Quillgate0/1"

    chunk.text = "CONFIDENTIAL\n" + text
    chunk.save(update_fields=["text"])
    body = alice.get(f"/api/v1/passages/{chunk.pk}").json()
    lines = body["text"].split("\n")
    assert "CONFIDENTIAL" not in body["text"]
    assert [lines[n].strip() for n in body["code_lines"]] == ["interface Quillgate0/1", "relay-hold 45"]

    unmarked = make_document("public/plain.txt", text=text).chunks.get()
    assert alice.get(f"/api/v1/passages/{unmarked.pk}").json()["code_lines"] == []


def test_anonymous_requests_are_refused(corpus) -> None:  # type: ignore[no-untyped-def]
    response = APIClient().get("/api/v1/documents")
    assert response.status_code == 401 and response["WWW-Authenticate"] == "Token"
    assert response.json()["error"]["code"] == "not_authenticated"
    # a bad token is told apart from a forbidden action: 401, not 403
    bad = APIClient(HTTP_AUTHORIZATION="Token not-a-token").get("/api/v1/documents")
    assert bad.status_code == 401 and bad.json()["error"]["code"] == "authentication_failed"


def test_token_authentication(corpus) -> None:  # type: ignore[no-untyped-def]
    from rest_framework.authtoken.models import Token

    token = Token.objects.create(user=corpus["alice"])
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {token.key}")
    assert client.get("/api/v1/documents").status_code == 200


def test_document_probing_triggers_enumeration_alert(corpus, mailoutbox) -> None:  # type: ignore[no-untyped-def]
    client = client_for(corpus["alice"])
    base = 50_000_000
    codes = [
        client.get(f"/api/v1/documents/{base + i}").status_code
        for i in range(throttling.PROBE_DISTINCT_LIMIT + 1)
    ]
    assert codes[:-1] == [404] * throttling.PROBE_DISTINCT_LIMIT
    alert = AuditEvent.objects.filter(kind="enumeration_alert", actor="alice")
    assert alert.count() == 1
    assert len(mailoutbox) == 1 and "alice" in mailoutbox[0].subject
    blocked = client.get(f"/api/v1/documents/{corpus['open'].pk}")
    assert blocked.status_code == 429
    assert blocked.json()["error"]["code"] == "throttled"
    throttling.user_counters_clear(corpus["alice"])
    assert client.get(f"/api/v1/documents/{corpus['open'].pk}").status_code == 200


def test_document_probing_through_web_hosts_whose_clocks_disagree_triggers_the_alert_too(  # type: ignore[no-untyped-def]
    corpus, mailoutbox, monkeypatch
) -> None:
    # Behind a load balancer, the probes of one user reach several web hosts. The window of the last 60 s was
    # kept on each host's clock: a host two minutes ahead dropped every probe the others had counted as older
    # than its window, and a sweep spread over both hosts was never more than half counted. Redis's clock counts.
    throttling.user_counters_clear(corpus["alice"])
    client = client_for(corpus["alice"])
    base = 60_000_000
    half = throttling.PROBE_DISTINCT_LIMIT // 2 + 1
    for i in range(half):
        assert client.get(f"/api/v1/documents/{base + i}").status_code == 404
    with monkeypatch.context() as ahead:
        real_time = time.time
        ahead.setattr(time, "time", lambda: real_time() + 120)
        for i in range(half, throttling.PROBE_DISTINCT_LIMIT + 1):
            client.get(f"/api/v1/documents/{base + i}")
    assert AuditEvent.objects.filter(kind="enumeration_alert", actor="alice").count() == 1
    assert len(mailoutbox) == 1
    throttling.user_counters_clear(corpus["alice"])


# --- uploads ------------------------------------------------------------------------------------------------


@pytest.mark.slow
def test_upload_is_private_expiring_and_audited(corpus, settings, tmp_path) -> None:  # type: ignore[no-untyped-def]
    settings.MEDIA_ROOT = tmp_path
    alice = corpus["alice"]
    text = (
        b"# Coffee machine\n\n## Descaling\n\nRun the descaling programme every 200 cups with citric acid.\n"
    )
    upload = SimpleUploadedFile("coffee notes.md", text, content_type="text/markdown")
    response = client_for(alice).post("/api/v1/documents/upload", {"file": upload}, format="multipart")
    assert response.status_code == 201, response.content
    body = response.json()
    assert body["source"] == f"uploads/{alice.pk}/coffee notes.md"
    assert body["status"] == "indexed" and body["private"] and body["access_tier"] == "confidential"
    assert (tmp_path / "uploads" / str(alice.pk) / "coffee notes.md").read_bytes() == text
    document = Document.objects.get(source=body["source"])
    assert document.owner_id == alice.pk
    expected = timezone.now() + timedelta(hours=settings.ATHENA_UPLOAD_TTL_HOURS)
    assert abs((document.expires_at - expected).total_seconds()) < 120
    assert set(document.chunks.values_list("owner_id_acl", flat=True)) == {alice.pk}
    assert not document.chunks.filter(acl_open=True).exists()
    # the uploader sees it; another user (even in more groups) does not
    assert client_for(alice).get(f"/api/v1/documents/{document.pk}").status_code == 200
    assert client_for(corpus["noc"]).get(f"/api/v1/documents/{document.pk}").status_code == 404
    event = AuditEvent.objects.get(kind="upload")
    assert event.actor == "alice" and event.documents == [body["source"]]
    # the same file again renews its time, and the audit event says the time the document has
    Document.objects.filter(pk=document.pk).update(expires_at=timezone.now() + timedelta(hours=1))
    again = SimpleUploadedFile("coffee notes.md", text, content_type="text/markdown")
    response = client_for(alice).post("/api/v1/documents/upload", {"file": again}, format="multipart")
    assert response.status_code == 201 and response.json()["id"] == document.pk
    document.refresh_from_db()
    renewal = AuditEvent.objects.filter(kind="upload").latest("id")
    assert renewal.payload["expires_at"] == document.expires_at.isoformat()
    assert abs((document.expires_at - expected).total_seconds()) < 120


def test_an_unreadable_upload_says_why_once(corpus, settings, tmp_path) -> None:  # type: ignore[no-untyped-def]
    settings.MEDIA_ROOT = tmp_path / "media"
    binary = SimpleUploadedFile("notes.md", b"PK\x03\x04\x00\x00binary\x00", content_type="text/markdown")
    response = client_for(corpus["alice"]).post(
        "/api/v1/documents/upload", {"file": binary}, format="multipart"
    )
    assert response.status_code == 400 and response.json()["error"]["code"] == "unreadable"
    message = response.json()["error"]["message"]
    assert "binary:" in message and "binary: binary:" not in message, message
    document = Document.objects.get(source=f"uploads/{corpus['alice'].pk}/notes.md")
    assert document.status == "failed" and document.error.startswith("binary: ")
    shown = client_for(corpus["alice"]).get(f"/api/v1/documents/{document.pk}").json()
    assert shown["error"] == document.error  # the chat page says why, not just "could not be read"
    # still private to its owner, and it expires
    assert document.owner_id == corpus["alice"].pk and document.expires_at is not None
    assert client_for(corpus["noc"]).get(f"/api/v1/documents/{document.pk}").status_code == 404


@pytest.mark.parametrize("name", ["../../etc/passwd.md", "..\\..\\evil.md", ".hidden.md", "/abs/x.md"])
def test_upload_names_cannot_escape_the_user_folder(corpus, settings, tmp_path, name) -> None:  # type: ignore[no-untyped-def]
    settings.MEDIA_ROOT = tmp_path / "media"
    upload = SimpleUploadedFile(name, b"hello", content_type="text/markdown")
    response = client_for(corpus["alice"]).post(
        "/api/v1/documents/upload", {"file": upload}, format="multipart"
    )
    if response.status_code == 201:  # a path-y name is reduced to its last component inside the user folder
        assert response.json()["source"].startswith(f"uploads/{corpus['alice'].pk}/")
        assert "/" not in response.json()["source"].split("/", 2)[2]
    else:
        assert response.status_code == 400
    outside = [p for p in tmp_path.rglob("*") if p.is_file() and "uploads" not in p.parts]
    assert outside == []


def test_upload_refuses_unsupported_types_and_missing_file(corpus, settings, tmp_path) -> None:  # type: ignore[no-untyped-def]
    settings.MEDIA_ROOT = tmp_path
    client = client_for(corpus["alice"])
    exe = SimpleUploadedFile("tool.exe", b"MZ", content_type="application/octet-stream")
    response = client.post("/api/v1/documents/upload", {"file": exe}, format="multipart")
    assert response.status_code == 400 and "unsupported file type" in response.json()["error"]["message"]
    assert client.post("/api/v1/documents/upload", {}, format="multipart").status_code == 400
    assert client.post("/api/v1/documents/upload", {"file": "text"}, format="multipart").status_code == 400
    empty = SimpleUploadedFile("empty.md", b"", content_type="text/markdown")
    response = client.post("/api/v1/documents/upload", {"file": empty}, format="multipart")
    assert response.status_code == 400 and response.json()["error"]["code"] == "invalid"
    # every refusal is on the record, the serializer's (missing, empty) as much as the type check's
    refused = AuditEvent.objects.filter(kind="upload_refused", actor="alice")
    assert refused.count() == 4, [e.payload for e in refused]
    assert "empty" in refused.latest("id").payload["message"]


def test_upload_size_limit(corpus, settings, tmp_path) -> None:  # type: ignore[no-untyped-def]
    settings.MEDIA_ROOT = tmp_path
    settings.ATHENA_MAX_UPLOAD_BYTES = 10
    upload = SimpleUploadedFile("big.txt", b"x" * 100, content_type="text/plain")
    response = client_for(corpus["alice"]).post(
        "/api/v1/documents/upload", {"file": upload}, format="multipart"
    )
    assert response.status_code == 413 and "too large" in response.json()["error"]["message"]


# --- admin operations ---------------------------------------------------------------------------------------


def test_acl_update_is_admin_only_and_audited(corpus) -> None:  # type: ignore[no-untyped-def]
    doc = corpus["open"]
    url = f"/api/v1/documents/{doc.pk}/acl"
    body = {"access_tier": "restricted", "groups": ["noc-admins"]}
    denied = client_for(corpus["alice"]).put(url, body, format="json")
    assert denied.status_code == 403 and denied.json()["error"]["code"] == "permission_denied"
    admin = make_user("kbadmin", "employees", "kb-admins")
    response = client_for(admin).put(url, body, format="json")
    assert response.status_code == 200, response.content
    assert response.json()["groups"] == ["noc-admins"]
    # the admin is not in noc-admins: the answer names the document no more than their reads would
    shown = response.json()
    assert shown["id"] == doc.pk and shown["access_tier"] == "restricted"
    assert shown["source"] == shown["title"] == "" and doc.source not in response.content.decode()
    reader = make_user("kbadmin-noc", "employees", "kb-admins", "noc-admins")
    again = client_for(reader).put(url, body, format="json").json()
    assert again["source"] == doc.source and again["title"] == doc.title
    chunk = doc.chunks.get()
    assert chunk.acl_open is False and chunk.access_tier == "restricted"
    assert AuditEvent.objects.filter(kind="acl_change", actor="kbadmin").exists()
    # the document disappeared for alice at once
    assert client_for(corpus["alice"]).get(f"/api/v1/documents/{doc.pk}").status_code == 404
    unknown = client_for(admin).put(
        url, {"access_tier": "internal", "groups": ["no-such-group"]}, format="json"
    )
    assert unknown.status_code == 400 and "no-such-group" in unknown.json()["error"]["message"]
    extra = client_for(admin).put(url, {**body, "owner": 1}, format="json")
    assert extra.status_code == 400 and "owner" in extra.json()["error"]["message"]
    assert client_for(admin).put("/api/v1/documents/99999999/acl", body, format="json").status_code == 404


def test_an_admin_changing_an_expired_document_it_may_read_sees_its_fields(corpus) -> None:  # type: ignore[no-untyped-def]
    """Readers no longer see an expired document, but the admin screens list it for an admin whose groups may
    read it (to renew it): the admin API answers such an admin with the document's fields, not blanks."""
    expired = corpus["expired"]
    admin = make_user("kbadmin", "employees", "kb-admins")
    body = {"access_tier": "internal", "groups": []}
    shown = client_for(admin).put(f"/api/v1/documents/{expired.pk}/acl", body, format="json").json()
    assert (shown["source"], shown["title"]) == (expired.source, expired.title)
    # a document the admin's groups may not read stays blank, expired or not
    Document.objects.filter(pk=corpus["restricted"].pk).update(expires_at=expired.expires_at)
    body = {"access_tier": "restricted", "groups": ["noc-admins"]}
    hidden = client_for(admin).put(f"/api/v1/documents/{corpus['restricted'].pk}/acl", body, format="json")
    assert hidden.json()["source"] == hidden.json()["title"] == ""


def test_reingest_is_admin_only(corpus, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    calls = []
    monkeypatch.setattr("knowledge.services.document_reingest", lambda *, document: calls.append(document.pk))
    doc = corpus["open"]
    assert client_for(corpus["alice"]).post(f"/api/v1/documents/{doc.pk}/reingest").status_code == 403
    admin = make_user("kbadmin", "kb-admins")
    no_file = client_for(admin).post(f"/api/v1/documents/{doc.pk}/reingest")
    assert no_file.status_code == 400
    Document.objects.filter(pk=doc.pk).update(source_path="/srv/kb/public/runbook.md")
    assert client_for(admin).post(f"/api/v1/documents/{doc.pk}/reingest").status_code == 202
    assert calls == [doc.pk]
    assert AuditEvent.objects.filter(kind="reingest").count() == 1


@pytest.mark.django_db(transaction=True)  # autocommit, as a request runs: the task is queued at once
def test_a_reingest_while_the_broker_is_down_answers_503(corpus, broker_down) -> None:  # type: ignore[no-untyped-def]
    doc = corpus["open"]
    Document.objects.filter(pk=doc.pk).update(source_path="/srv/kb/public/runbook.md")
    response = client_for(make_user("kbadmin", "kb-admins")).post(f"/api/v1/documents/{doc.pk}/reingest")
    assert response.status_code == 503 and int(response["Retry-After"]) >= 1
    assert response.json()["error"]["code"] == "dependency_unavailable"
    assert not AuditEvent.objects.filter(kind="reingest").exists()
