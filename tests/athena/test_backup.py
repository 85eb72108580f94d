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
