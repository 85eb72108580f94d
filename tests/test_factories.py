"""The factories build what the services build: users through athena.services, documents and chunks through
ingestion, so that search finds them under their ACL."""

from __future__ import annotations

import pytest

from athena.errors import ValidationFailed
from athena.principals import Principal
from knowledge.models import DocumentStatus
from knowledge.text import query_terms
from retrieval.stages import bm25_search
from retrieval.types import Filters
from tests.factories import (
    ChunkFactory,
    ComplianceOfficerFactory,
    DocumentFactory,
    EmployeeFactory,
    GroupFactory,
    KbAdminFactory,
    NocAdminFactory,
    UserFactory,
)

pytestmark = [pytest.mark.integration]


@pytest.mark.django_db
def test_users_are_made_by_the_service_in_their_groups() -> None:
    alice = UserFactory(username="alice", groups=["employees", "noc-admins"])
    assert alice.check_password("pw") and not alice.is_staff and not alice.is_superuser
    assert sorted(alice.groups.values_list("name", flat=True)) == ["employees", "noc-admins"]
    assert UserFactory(password=None).has_usable_password() is False
    root = UserFactory(superuser=True)
    assert root.is_superuser and root.is_staff
    names = {
        factory: set(factory().groups.values_list("name", flat=True))
        for factory in (EmployeeFactory, KbAdminFactory, ComplianceOfficerFactory, NocAdminFactory)
    }
    assert names[EmployeeFactory] == {"employees"}
    assert names[KbAdminFactory] == {"employees", "kb-admins"}
    assert names[ComplianceOfficerFactory] == {"employees", "compliance"}
    assert names[NocAdminFactory] == {"employees", "noc-admins"}
    assert GroupFactory(name="noc-admins").pk == alice.groups.get(name="noc-admins").pk  # reused
    with pytest.raises(ValidationFailed):  # the service's own check runs
        UserFactory(username="no spaces allowed")
    with pytest.raises(TypeError):
        UserFactory.build()


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_documents_and_chunks_are_ingested_and_searchable_under_their_acl() -> None:
    insider = Principal.from_user(NocAdminFactory())
    outsider = Principal.from_user(EmployeeFactory())
    document = DocumentFactory(
        body="Rotate the vault keys of the core routers every ninety days.",
        access_tier="restricted",
        groups=["noc-admins"],
        department="security",
    )
    assert document.status == DocumentStatus.INDEXED and document.chunk_count >= 1
    assert sorted(document.allowed_groups.values_list("name", flat=True)) == ["noc-admins"]
    chunk = ChunkFactory(text="The standby firewall takes over within three seconds of a failover.")
    assert "standby firewall" in chunk.text and chunk.document.access_tier == "internal"

    def found(question: str, principal: Principal) -> set[int]:
        terms = [(t, 1.0) for t in query_terms(question)]
        return {s.id for s in bm25_search(terms, principal, Filters(), k=10)}

    restricted_ids = set(document.chunks.values_list("id", flat=True))
    assert restricted_ids & found("rotate vault keys", insider)
    assert not restricted_ids & found("rotate vault keys", outsider)
    assert chunk.pk in found("standby firewall failover", outsider)
    with pytest.raises(TypeError):
        DocumentFactory.build()
