"""What `manage.py backup` writes (athena/backup.py), made from the test database on the embedded server: who may
read it, and what of the media folder it takes."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import pytest

from athena.backup import backup_create

pytestmark = [pytest.mark.integration, pytest.mark.django_db]


def test_every_folder_and_file_of_a_backup_is_its_owners_alone_and_no_link_is_followed(tmp_path, settings):
    """The uploads are written readable by all (0644, folders 0755), and the backup copied them with their modes:
    a backup folder copied elsewhere without its top folder (rsync of its contents, a restore of a tape) left
    every private upload readable by every local account. A link in the media folder (no upload is one) is not
    followed out of it, nor does a dangling one fail the backup."""
    media = tmp_path / "media"
    folder = media / "uploads" / "7"
    folder.mkdir(parents=True)
    os.chmod(media / "uploads", 0o755)
    os.chmod(folder, 0o755)
    (folder / "notes.md").write_text("# Notes\n\nprivate\n")
    os.chmod(folder / "notes.md", 0o644)
    outside = tmp_path / "outside.txt"
    outside.write_text("not the knowledge base's\n")
    (folder / "link.md").symlink_to(outside)
    (folder / "gone.md").symlink_to(tmp_path / "nothing-here")
    settings.MEDIA_ROOT = str(media)
    settings.ATHENA_AUDIT_CHECKPOINT_FILE = str(tmp_path / "audit" / "checkpoints.jsonl")

    target = tmp_path / "backup"
    manifest = backup_create(target, echo=lambda line: None)

    assert (target / "files" / "media" / "uploads" / "7" / "notes.md").read_text() == "# Notes\n\nprivate\n"
    assert sorted(manifest["files"]) == ["database.dump", "files/media/uploads/7/notes.md"]
    assert json.loads((target / "manifest.json").read_text())["files"] == manifest["files"]
    modes = {
        path.relative_to(target).as_posix(): stat.S_IMODE(path.lstat().st_mode)
        for path in [target, *target.rglob("*")]
    }
    assert modes == {
        ".": 0o700,
        "database.dump": 0o600,
        "manifest.json": 0o600,
        "files": 0o700,
        "files/media": 0o700,
        "files/media/uploads": 0o700,
        "files/media/uploads/7": 0o700,
        "files/media/uploads/7/notes.md": 0o600,
    }
    assert not list(Path(tmp_path).glob("backup.partial"))


def test_an_upload_deleted_while_the_backup_copies_the_media_folder_is_left_out_and_named(
    tmp_path, settings, monkeypatch
):
    """An upload expired or removed between the media folder's listing and its copy failed the whole backup
    ("nothing was kept"). The race is made certain here: the folder listing is the real one, and right after it
    one upload and one folder of uploads are deleted from the disk. The backup keeps every other file, names what
    it left out, and its manifest lists only what it holds."""
    import athena.backup

    media = tmp_path / "media"
    for name in ("7", "8"):
        (media / "uploads" / name).mkdir(parents=True)
    (media / "uploads" / "7" / "kept.md").write_text("# Kept\n")
    (media / "uploads" / "7" / "expired.md").write_text("# Expired\n")
    (media / "uploads" / "8" / "removed.md").write_text("# Removed\n")
    settings.MEDIA_ROOT = str(media)
    settings.ATHENA_AUDIT_CHECKPOINT_FILE = str(tmp_path / "audit" / "checkpoints.jsonl")
    listing = os.scandir

    class Listed(list):  # what os.scandir returns is also a context manager (pathlib uses it as one)
        def __enter__(self):  # type: ignore[no-untyped-def]
            return self

        def __exit__(self, *exc):  # type: ignore[no-untyped-def]
            return False

    uploads = media / "uploads"
    deleted_after_listing = {
        uploads: [uploads / "8" / "removed.md", uploads / "8"],
        uploads / "7": [uploads / "7" / "expired.md"],
    }

    def listing_then_deleted(path):  # type: ignore[no-untyped-def]
        if not isinstance(path, str | os.PathLike) or Path(path) not in deleted_after_listing:
            return listing(path)
        entries = Listed(listing(path))
        for gone in deleted_after_listing.pop(Path(path)):
            gone.rmdir() if gone.is_dir() else gone.unlink()
        return entries

    monkeypatch.setattr(athena.backup.os, "scandir", listing_then_deleted)
    said: list[str] = []
    manifest = backup_create(tmp_path / "backup", echo=said.append)

    assert sorted(manifest["files"]) == ["database.dump", "files/media/uploads/7/kept.md"]
    assert manifest["media_left_out"] == ["uploads/7/expired.md", "uploads/8"]
    assert (tmp_path / "backup" / "files" / "media" / "uploads" / "7" / "kept.md").read_text() == "# Kept\n"
    assert not (tmp_path / "backup" / "files" / "media" / "uploads" / "8").exists()
    assert "2 upload(s) deleted while the backup ran are not in it (manifest.json: media_left_out)" in said, (
        said
    )
    assert not [line for line in said if "expired" in line or "uploads/" in line], said  # counted, not named
    assert said[-1] == f"backup written to {tmp_path / 'backup'}"
