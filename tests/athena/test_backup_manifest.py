"""What a restore refuses from a backup's manifest before it touches anything (athena/backup.py): migrations
judged as `manage.py migrate` judges a database's."""

from __future__ import annotations

import pytest

from athena.backup import restore_refusals

pytestmark = [pytest.mark.unit]

HERE = {("knowledge", "0001_initial"), ("knowledge", "0012_chunk_code_lines"), ("auth", "0012_alter_user")}


def manifest(*migrations: tuple[str, str]) -> dict:
    return {"database": {"migrations": [list(migration) for migration in migrations]}}


def test_a_backup_made_by_a_newer_release_is_refused_naming_what_this_code_lacks() -> None:
    (problem,) = restore_refusals(
        manifest(("knowledge", "0001_initial"), ("knowledge", "0013_chunk_language")), known_migrations=HERE
    )
    assert "newer Athena" in problem and "knowledge.0013_chunk_language" in problem


def test_rows_a_squash_left_behind_and_apps_no_longer_installed_do_not_make_a_backup_newer() -> None:
    """Django keeps the rows of the migrations a squashed one replaced after their files are deleted: a backup of
    such a database is this release's, and was refused as a newer one's."""
    backed_up = manifest(
        ("knowledge", "0001_initial"),
        ("knowledge", "0004_squashed_away"),
        ("knowledge", "0012_chunk_code_lines"),
        ("retired_app", "0003_anything"),
    )
    assert restore_refusals(backed_up, known_migrations=HERE) == []
