"""What an abstention shows of the words it searched for depends only on documents the asker may read."""

from __future__ import annotations

from pathlib import Path

import pytest

from agents.pipeline import run_pipeline
from athena.principals import Principal
from knowledge.services import IngestOptions, files_ingest, folder_scan
from tests.factories import UserFactory
from tests.knowledge.conftest import write_docs

pytestmark = [pytest.mark.integration, pytest.mark.slow]

# ten searched words, two more than an abstention names: the two it leaves out are the commonest
QUESTION = (
    "How many seconds does the gateway wait before the standby uplink replaces the primary circuit during "
    "quarterly maintenance?"
)
PUBLIC = {
    # "gateway", "primary" and "maintenance" in every public document: the commonest words for an outsider;
    # "uplink" in one; the other words once each, none of them near another
    **{
        f"site-{i}.md": f"# Site {i}\n\nThe gateway of site {i} keeps its primary address through maintenance.\n"
        for i in range(4)
    },
    "cabling.md": "# Cabling\n\nThe uplink cable is blue.\n",
    "clocks.md": "# Clocks\n\nNTP drift is measured in seconds.\n",
    "audits.md": "# Audits\n\nQuarterly audits list every circuit.\n",
    "spares.md": "# Spares\n\nA standby fan waits in the cupboard.\n",
}


def _ingest(root: Path, **options) -> None:
    files = [(rel, str(p)) for rel, p in folder_scan(root)]
    assert files_ingest(root=str(root), files=files, options=IngestOptions(**options)).failed == 0


def _searched(principal: Principal) -> str:
    result = run_pipeline(question=QUESTION, principal=principal, history=[])
    assert result.abstained, result.answer
    return result.answer.split("I searched the documents you can access for: ")[1]


@pytest.mark.django_db(transaction=True)
def test_the_words_an_abstention_names_do_not_depend_on_documents_the_asker_cannot_read(tmp_path):
    """The words were ranked by the index's document frequencies, which count every chunk: a word that
    restricted documents use often dropped out of what an outsider was shown, telling them so."""
    _ingest(write_docs(tmp_path / "public", PUBLIC))
    outsider = Principal.from_user(UserFactory(username="outsider", groups=("employees",)))
    before = _searched(outsider)
    assert "uplink" in before and "gateway" not in before, before

    # "uplink" in many chunks that only noc-admins may read: over every chunk, it is now the commonest word
    vault = {
        f"vault-{i}.md": f"# Vault {i}\n\nUplink {i} carries the uplink of the vault.\n" for i in range(12)
    }
    _ingest(write_docs(tmp_path / "vault", vault), access_tier="restricted", acl_groups=("noc-admins",))
    assert _searched(outsider) == before
    insider = Principal.from_user(UserFactory(username="insider", groups=("noc-admins",)))
    assert "uplink" not in _searched(insider)  # for whoever reads them, it is common

    from knowledge.index_selectors import terms_readable_df
    from knowledge.text import analyze

    # counted among readable chunks, up to the cap; a term none of them holds is left out
    (gateway,) = analyze("gateway")
    assert terms_readable_df(["uplink", "vault", gateway], outsider, cap=3) == {"uplink": 1, gateway: 3}
    assert terms_readable_df(["uplink", "vault"], insider, cap=100) == {"uplink": 13, "vault": 12}
