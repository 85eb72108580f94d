"""Nightly sync ACLs: each configured folder carries its own policy, an unconfigured folder fails closed,
and no re-ingest (sync, retry, CLI) loosens a document's access."""

from __future__ import annotations

from pathlib import Path

import pytest

from athena.celery import app
from knowledge.models import Document, DocumentStatus
from knowledge.services import IngestOptions, files_ingest, folder_scan
from knowledge.tasks import sync_source_folders_task
from tests.knowledge.conftest import write_docs

pytestmark = [pytest.mark.integration, pytest.mark.slow, pytest.mark.django_db]

DOC = (
    "# Firewall change window\n\nChanges to the edge firewall are made on Tuesdays between 02:00 and 04:00.\n"
)


def _ingest(root: Path, options: IngestOptions, *, force: bool = False) -> None:
    files = [(options.prefix + rel, str(path)) for rel, path in folder_scan(root)]
    files_ingest(root=str(root), files=files, options=options, force=force)


def _acl(source: str) -> tuple[str, list[str]]:
    document = Document.objects.get(source=source)
    return document.access_tier, sorted(document.allowed_groups.values_list("name", flat=True))


def test_the_nightly_sync_applies_each_folders_policy(tmp_path: Path, settings) -> None:  # type: ignore[no-untyped-def]
    secure = write_docs(tmp_path / "secure", {"change-window.md": DOC})
    dropbox = write_docs(tmp_path / "dropbox", {"notes.md": DOC.replace("Tuesdays", "Thursdays")})
    settings.ATHENA_SOURCE_FOLDERS = [f"{secure}|tier=restricted|groups=sec-team|prefix=sec/", str(dropbox)]
    app.conf.task_always_eager = True  # the sync's tasks run here, as a worker would run them
    try:
        sync_source_folders_task()
    finally:
        app.conf.task_always_eager = False
    assert _acl("sec/change-window.md") == ("restricted", ["sec-team"])
    # nobody configured the drop box: its new file is not published to every employee
    assert _acl("notes.md") == ("restricted", ["kb-admins"])
    assert Document.objects.get(source="notes.md").status == DocumentStatus.INDEXED


def test_a_reingest_never_loosens_access(tmp_path: Path) -> None:
    root = write_docs(tmp_path / "kb", {"change-window.md": DOC})
    _ingest(root, IngestOptions(access_tier="restricted", acl_groups=("sec-team",)))
    (root / "change-window.md").write_text(DOC + "\nA second approver is required.\n")
    _ingest(root, IngestOptions())  # no options at all (an old-style sync)
    assert _acl("change-window.md") == ("restricted", ["sec-team"])
    _ingest(root, IngestOptions(access_tier="internal", acl_groups=("employees",)), force=True)
    assert _acl("change-window.md") == ("restricted", ["sec-team"])
    _ingest(root, IngestOptions(access_tier="confidential"), force=True)  # tightening is allowed
    assert _acl("change-window.md") == ("confidential", ["sec-team"])


def test_a_document_whose_first_ingest_failed_keeps_its_acl_on_retry(tmp_path: Path) -> None:
    root = tmp_path / "kb"
    root.mkdir()
    broken = root / "report.docx"
    broken.write_bytes(b"PK\x03\x04 this is not a real docx archive")
    _ingest(root, IngestOptions(access_tier="restricted", acl_groups=("sec-team",)))
    document = Document.objects.get(source="report.docx")
    assert document.status == DocumentStatus.FAILED
    assert _acl("report.docx") == ("restricted", ["sec-team"])
    broken.unlink()
    (root / "report.md").write_text(DOC)
    (root / "report.docx").write_bytes(_docx_bytes(tmp_path))
    _ingest(root, IngestOptions())  # the retry comes without the first run's options
    assert Document.objects.get(source="report.docx").status == DocumentStatus.INDEXED
    assert _acl("report.docx") == ("restricted", ["sec-team"])


def _docx_bytes(tmp_path: Path) -> bytes:
    import docx

    document = docx.Document()
    document.add_heading("Firewall change window", level=1)
    document.add_paragraph("Changes to the edge firewall are made on Tuesdays between 02:00 and 04:00.")
    path = tmp_path / "fixed.docx"
    document.save(str(path))
    return path.read_bytes()
