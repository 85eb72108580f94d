"""factory_boy factories for test data, built through the project's services (CONVENTIONS.md §16).

- Users go through athena.services.user_create_or_update (name check, groups created on demand), with fresh
  throttling counters; the role factories put them in the groups the code knows.
- Documents are files ingested by knowledge.services.files_ingest: parsed, chunked, analysed, embedded and
  indexed (postings, corpus statistics, graph) exactly as a real document. They load the embedder, so a test
  module that creates one is marked `slow`. A document row made without indexing would be found by no search
  stage; tests that need only a row for an API's ACL check (tests/knowledge/test_apis.py) make it themselves.
- A chunk is the first chunk of such a document: `ChunkFactory(text=..., document__groups=["noc-admins"])`.

    user = UserFactory(username="alice", groups=["employees"])
    admin = KbAdminFactory()
    chunk = ChunkFactory(text="Keepalive is 60 seconds.", document__access_tier="restricted")
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from pathlib import Path
from typing import Any

import factory
from django.contrib.auth.models import Group, User
from factory.django import DjangoModelFactory

from athena.services import ROLE_ADMIN, ROLE_COMPLIANCE, ROLE_EMPLOYEE
from knowledge.models import Chunk, Document

PASSWORD = "pw"  # every factory user's password unless given: tests sign in with it


class GroupFactory(DjangoModelFactory[Group]):
    """A group (a role or a document ACL group), reused when the name exists. Groups are plain Django groups
    with no rules of their own, so the model is the service here."""

    class Meta:
        model = Group
        django_get_or_create = ("name",)

    name = factory.Sequence(lambda n: f"group-{n}")


class UserFactory(factory.Factory[User]):
    """A user in `groups`, signed in with `password` (None: a user who cannot sign in with one), optionally
    staff or superuser, with no throttling counters left from another test."""

    class Meta:
        model = User

    username = factory.Sequence(lambda n: f"user-{n}")
    groups: Sequence[str] = ()
    password: str | None = PASSWORD
    email = ""
    staff = False
    superuser = False

    @classmethod
    def _create(
        cls,
        model_class: type[User],
        *,
        username: str,
        groups: Sequence[str],
        password: str | None,
        email: str,
        staff: bool,
        superuser: bool,
    ) -> User:
        from athena import throttling
        from athena.services import user_create_or_update

        user, _ = user_create_or_update(
            username=username, groups=tuple(groups), password=password, email=email, staff=staff or superuser
        )
        if superuser:
            # no service makes superusers (an operator does, with createsuperuser); tests need one for the
            # checks that must hold even for them
            user.is_superuser = True
            user.save(update_fields=["is_superuser"])
        throttling.user_counters_clear(user)
        return user

    @classmethod
    def _build(cls, model_class: type[User], **kwargs: Any) -> User:
        raise TypeError(
            "a user exists only once created through the service: use UserFactory(), not .build()"
        )


class EmployeeFactory(UserFactory):
    """Any member of staff: reads internal documents and asks questions."""

    groups = (ROLE_EMPLOYEE,)


class KbAdminFactory(UserFactory):
    """A knowledge-base administrator (curation, document ACLs)."""

    username = factory.Sequence(lambda n: f"kb-admin-{n}")
    groups = (ROLE_EMPLOYEE, ROLE_ADMIN)


class ComplianceOfficerFactory(UserFactory):
    """A compliance officer (audit log pages, export)."""

    username = factory.Sequence(lambda n: f"compliance-{n}")
    groups = (ROLE_EMPLOYEE, ROLE_COMPLIANCE)


class NocAdminFactory(UserFactory):
    """An operations administrator: reads the restricted documents of the `noc-admins` group (sample KB)."""

    username = factory.Sequence(lambda n: f"noc-admin-{n}")
    groups = (ROLE_EMPLOYEE, "noc-admins")


def documents_root() -> Path:
    """The folder the factory's documents are written to (under the test settings' media root)."""
    from django.conf import settings

    return Path(settings.MEDIA_ROOT) / "factory-documents"


class DocumentFactory(factory.Factory[Document]):
    """A Markdown document ingested through knowledge.services.files_ingest (always indexed anew, even when a
    file of that name was ingested before). `owner` and `expires_at` make a private upload."""

    class Meta:
        model = Document

    source = factory.Sequence(lambda n: f"factory/document-{n}.md")
    title = factory.Sequence(lambda n: f"Factory document {n}")
    body = "The core routers keep their BGP sessions up with a keepalive every 60 seconds."
    access_tier = "internal"
    groups: Sequence[str] = ()
    department = ""
    doc_type = ""
    vendor = ""
    owner: User | None = None
    expires_at: datetime | None = None

    @classmethod
    def _create(
        cls,
        model_class: type[Document],
        *,
        source: str,
        title: str,
        body: str,
        access_tier: str,
        groups: Sequence[str],
        department: str,
        doc_type: str,
        vendor: str,
        owner: User | None,
        expires_at: datetime | None,
    ) -> Document:
        from knowledge.services import IngestOptions, files_ingest

        root = documents_root()
        path = root / source
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(f"# {title}\n\n{body}\n", encoding="utf-8")
        options = IngestOptions(
            acl_groups=tuple(groups),
            access_tier=access_tier,
            department=department,
            doc_type=doc_type,
            vendor=vendor,
            owner_id=owner.pk if owner is not None else None,
            expires_at=expires_at,
        )
        summary = files_ingest(root=str(root), files=[(source, str(path))], options=options, force=True)
        if summary.failed:
            raise ValueError(f"the factory's document {source} did not ingest: {summary.errors}")
        return model_class.objects.get(source=source)

    @classmethod
    def _build(cls, model_class: type[Document], **kwargs: Any) -> Document:
        raise TypeError("a document exists only once ingested: use DocumentFactory(), not .build()")


class ChunkFactory(factory.Factory[Chunk]):
    """The first chunk of a document ingested with `text` as its body; pass the document's options with the
    `document__` prefix."""

    class Meta:
        model = Chunk

    text = "The core routers keep their BGP sessions up with a keepalive every 60 seconds."
    document = factory.SubFactory(DocumentFactory, body=factory.SelfAttribute("..text"))

    @classmethod
    def _create(cls, model_class: type[Chunk], *, text: str, document: Document) -> Chunk:
        chunk = model_class.objects.filter(document=document, active=True).order_by("ordinal").first()
        if chunk is None:
            raise ValueError(f"the factory's document {document.source} has no chunk")
        return chunk

    @classmethod
    def _build(cls, model_class: type[Chunk], **kwargs: Any) -> Chunk:
        raise TypeError("a chunk exists only once its document is ingested: use ChunkFactory(), not .build()")
