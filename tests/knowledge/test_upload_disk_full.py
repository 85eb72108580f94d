"""An upload when the disk is full: the uploader gets a JSON 507 that says so (it was a bare HTML 500), nothing
of the file is left on disk, no document is recorded, and the refusal is audited. The full disk is a real one:
a small tmpfs mounted for the test (which needs root, as mounting does)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from audit.models import AuditEvent
from knowledge.models import Document
from tests import disks
from tests.api import client_for

pytestmark = pytest.mark.integration

URL = "/api/v1/documents/upload"
CONTENT = b"# Generator runs\n\n" + b"The standby generator runs under load every second Tuesday.\n" * 4000


@pytest.fixture()
def small_disk(tmp_path: Path) -> Iterator[Path]:
    """A 64 KiB filesystem: the 240 KB file below does not fit in it. Mounting needs root, which `make test` and
    CI have on these machines: a run without it fails here, naming why, rather than skipping the check."""
    with disks.small_disk(tmp_path / "small-disk", "64k") as mount:
        yield mount


def _refused_on_a_full_disk(uploader, small_disk: Path) -> None:  # type: ignore[no-untyped-def]
    upload = SimpleUploadedFile("generator-runs.md", CONTENT, content_type="text/markdown")
    response = client_for(uploader).post(URL, {"file": upload}, format="multipart")
    assert response.status_code == 507, response.content
    error = response.json()["error"]
    assert error["code"] == "insufficient_storage" and "disk is full" in error["message"], error
    assert [p for p in small_disk.rglob("*") if p.is_file()] == []  # no partial file left behind
    assert not Document.objects.filter(source__endswith="generator-runs.md").exists()
    refusal = AuditEvent.objects.filter(kind="upload_refused", actor=uploader).get()
    assert refusal.payload["code"] == "insufficient_storage"


def test_an_upload_that_does_not_fit_on_the_disk_is_refused_with_a_clear_message(  # type: ignore[no-untyped-def]
    uploader, settings, small_disk
) -> None:
    settings.MEDIA_ROOT = small_disk
    _refused_on_a_full_disk(uploader, small_disk)


def test_an_upload_body_that_does_not_fit_in_the_temporary_folder_is_refused_too(  # type: ignore[no-untyped-def]
    uploader, settings, small_disk
) -> None:
    settings.FILE_UPLOAD_TEMP_DIR = str(small_disk)  # a large body is spooled there while it is read
    settings.FILE_UPLOAD_MAX_MEMORY_SIZE = 1000
    _refused_on_a_full_disk(uploader, small_disk)
