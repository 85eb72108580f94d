"""The document admin's list filters name every value they offer: a document without a department or vendor
(the empty value) is offered as "(blank)", not as a link with no text that a screen reader cannot name."""

from __future__ import annotations

import re

import pytest
from django.test import Client

from athena.services import ROLE_ADMIN
from tests.factories import DocumentFactory, UserFactory

pytestmark = [pytest.mark.django_db, pytest.mark.integration]


def test_the_document_filters_name_the_empty_value() -> None:
    DocumentFactory(vendor="", department="")
    DocumentFactory(vendor="Arista", department="NOC")
    client = Client()
    client.force_login(UserFactory(username="curator", groups=(ROLE_ADMIN,), superuser=True))
    page = client.get("/admin/knowledge/document/")
    assert page.status_code == 200
    html = page.content.decode()
    for field in ("vendor", "department"):
        links = dict(re.findall(rf'<a href="\?{field}=([^"&]*)"[^>]*>\s*([^<]*?)\s*</a>', html))
        assert links.get("") == "(blank)", (field, links)
    # a value is filtered on as before
    assert "Arista" in client.get("/admin/knowledge/document/?vendor=Arista").content.decode()
