"""A configured source folder's entry (path | tier= | groups= | prefix= | department=) parses into its ingest
policy; an unconfigured folder fails closed; a malformed entry is refused. The nightly sync applying
the policies: tests/knowledge/test_source_folder_policy.py."""

from __future__ import annotations

from pathlib import Path

import pytest

from athena.errors import ValidationFailed
from knowledge.services import source_folder_parse

pytestmark = [pytest.mark.unit]


def test_a_folder_entry_carries_its_policy() -> None:
    folder = source_folder_parse(
        "/srv/kb/sec | tier=restricted | groups=sec-team+noc | prefix=sec/ | department=SEC"
    )
    assert folder.path == Path("/srv/kb/sec")
    assert folder.options.access_tier == "restricted" and folder.options.acl_groups == ("sec-team", "noc")
    assert folder.options.prefix == "sec/" and folder.options.department == "SEC"
    open_folder = source_folder_parse("/srv/kb/public|tier=internal")
    assert open_folder.options.access_tier == "internal" and open_folder.options.acl_groups == ()


def test_an_unconfigured_folder_fails_closed() -> None:
    folder = source_folder_parse("/srv/kb/dropbox")
    assert folder.options.access_tier == "restricted" and folder.options.acl_groups == ("kb-admins",)


@pytest.mark.parametrize(
    "entry", ["/srv/kb|tier=secret", "/srv/kb|owner=bob", "/srv/kb|groups", "|tier=internal"]
)
def test_a_malformed_entry_is_refused(entry: str) -> None:
    with pytest.raises(ValidationFailed):
        source_folder_parse(entry)
