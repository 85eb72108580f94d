"""Persona x path x canary: a unique string planted only in a restricted document (its title, text and
source id) never appears in any response body or header that a persona outside the document's group gets.

The restricted document also supersedes a readable one, and an insider has asked about it and down-voted
the answer (so it sits in the curation queue), so that the indirect paths have something to leak. Compliance
staff read the audit log in full by design, so the audit endpoints are not in the matrix.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from django.contrib.auth.models import Group

from agents.services import ask
from knowledge.models import Chunk, Document
from knowledge.services import IngestOptions, files_ingest, folder_scan
from tests.api import client_for, make_user
from tests.knowledge.conftest import write_docs

pytestmark = [pytest.mark.integration, pytest.mark.slow]

CANARY = "zebracanary7731"
QUESTION = "How is the vault master key rotated, and by how many custodians?"
PERSONAS = {
    "employee": ("employees",),
    "kb_admin": ("employees", "kb-admins"),
    "compliance": ("compliance",),
    "superuser": ("employees",),
}


def _ingest(root: Path, options: IngestOptions) -> None:
    files = [(options.prefix + rel, str(path)) for rel, path in folder_scan(root)]
    summary = files_ingest(root=str(root), files=files, options=options)
    assert summary.failed == 0, summary.errors


@pytest.fixture()
def planted(tmp_path: Path, transactional_db) -> dict[str, int]:  # type: ignore[no-untyped-def]
    _ingest(
        write_docs(
            tmp_path / "public",
            {
                "vault.md": "# Vault operations\n\nThe vault master key is rotated once a year by the security "
                "team. Ask the security team for the procedure.\n"
            },
        ),
        IngestOptions(prefix="public/"),
    )
    _ingest(
        write_docs(
            tmp_path / "restricted",
            {
                f"{CANARY}.md": f"---\ntitle: Vault ceremony {CANARY}\n---\n# Vault ceremony {CANARY}\n\n"
                f"The vault master key is rotated with the {CANARY} ceremony: three custodians each enter "
                "one share of the key on the offline signing host.\n"
            },
        ),
        IngestOptions(prefix="restricted/", access_tier="restricted", acl_groups=("vault-team",)),
    )
    secret = Document.objects.get(source=f"restricted/{CANARY}.md")
    public = Document.objects.get(source="public/vault.md")
    Document.objects.filter(pk=public.pk).update(superseded_by=secret)
    insider = make_user("insider", "employees", "vault-team")
    body = ask(user=insider, question=QUESTION)
    assert CANARY in str(body["citations"]), "the insider's answer should cite the restricted document"
    client_for(insider).post(f"/api/v1/answers/{body['answer_id']}/feedback", {"vote": "down"}, format="json")
    chunk = Chunk.objects.filter(document=secret).first()
    assert chunk is not None
    return {"secret": secret.pk, "public": public.pk, "chunk": chunk.pk}


def _paths(ids: dict[str, int]) -> list[tuple[str, str, dict | None]]:
    return [
        ("get", "/api/v1/documents", None),
        ("get", "/api/v1/documents?q=vault", None),
        ("get", f"/api/v1/documents/{ids['secret']}", None),
        ("get", f"/api/v1/documents/{ids['secret']}/metadata", None),
        ("get", f"/api/v1/documents/{ids['public']}", None),
        ("get", f"/api/v1/documents/{ids['public']}/metadata", None),
        ("get", "/api/v1/documents/lookup?source=public/vault.md", None),
        ("get", f"/api/v1/passages/{ids['chunk']}", None),
        ("post", "/api/v1/ask", {"question": QUESTION}),
        ("get", "/api/v1/conversations", None),
        ("get", "/api/v1/curation", None),
        ("get", "/api/v1/health", None),
        ("get", "/", None),
    ]


@pytest.mark.parametrize("persona", sorted(PERSONAS))
def test_the_canary_never_reaches_an_outsider(persona: str, planted: dict[str, int]) -> None:
    user = make_user(f"p-{persona}", *PERSONAS[persona], superuser=persona == "superuser")
    Group.objects.get_or_create(name="vault-team")  # exists, and the persona is not in it
    client = client_for(user)
    for method, path, data in _paths(planted):
        response = (
            getattr(client, method)(path, data, format="json") if data else getattr(client, method)(path)
        )
        body = b"".join(response.streaming_content) if response.streaming else response.content
        headers = str(dict(response.items()))
        assert CANARY not in body.decode(errors="replace").lower(), f"{persona}: {method} {path}"
        assert CANARY not in headers.lower(), f"{persona}: {method} {path} (headers)"


ADMIN_PAGES = [
    "/admin/knowledge/document/",
    "/admin/knowledge/document/?q=vault",
    "/admin/knowledge/chunk/",
    "/admin/knowledge/chunk/?q=custodians",
    "/admin/agents/answer/",
    "/admin/agents/curationitem/",
    "/admin/audit/auditevent/",
]


def test_the_canary_never_reaches_a_superuser_outside_the_group_in_django_admin(
    planted: dict[str, int],
) -> None:
    from django.test import Client

    from agents.models import Answer

    make_user("root", "employees", superuser=True)
    client = Client()
    client.login(username="root", password="pw")
    pages = [
        *ADMIN_PAGES,
        f"/admin/knowledge/document/{planted['secret']}/change/",
        f"/admin/knowledge/chunk/{planted['chunk']}/change/",
        *(f"/admin/agents/answer/{pk}/change/" for pk in Answer.objects.values_list("pk", flat=True)),
    ]
    for page in pages:
        response = client.get(page)
        assert response.status_code in (200, 302, 403, 404), page
        assert CANARY not in response.content.decode(errors="replace").lower(), page


def test_an_admin_in_the_group_still_curates_the_answer(planted: dict[str, int]) -> None:
    insider_admin = make_user("vault-admin", "employees", "kb-admins", "vault-team")
    outsider_admin = make_user("other-admin", "employees", "kb-admins")
    inside = client_for(insider_admin).get("/api/v1/curation").json()
    outside = client_for(outsider_admin).get("/api/v1/curation").json()
    items = inside["results"] if isinstance(inside, dict) else inside
    others = outside["results"] if isinstance(outside, dict) else outside
    assert any(CANARY in item["answer"].lower() for item in items)
    assert others and all(item["answer"].startswith("[withheld") for item in others)
