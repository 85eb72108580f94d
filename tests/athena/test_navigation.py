"""The top bar is the same on every page a person reaches: compliance staff find their Compliance link on the
password page and on the error pages too, not only on the pages whose views named it."""

from __future__ import annotations

import pytest
from django.test import Client

from athena.services import ROLE_COMPLIANCE, ROLE_EMPLOYEE
from tests.factories import UserFactory

pytestmark = [pytest.mark.django_db, pytest.mark.integration]

LINK = '<a href="/compliance/">Compliance</a>'


def test_compliance_staff_keep_their_link_on_every_page() -> None:
    client = Client()
    client.force_login(UserFactory(username="auditor", groups=(ROLE_EMPLOYEE, ROLE_COMPLIANCE)))
    for path, status in (
        ("/", 200),
        ("/accounts/password_change/", 200),
        ("/compliance/events/99999999", 404),
        ("/no-such-page", 404),
    ):
        page = client.get(path)
        assert page.status_code == status, path
        assert LINK in page.content.decode(), path


def test_an_employee_is_offered_no_compliance_link() -> None:
    client = Client()
    client.force_login(UserFactory(username="reader", groups=(ROLE_EMPLOYEE,)))
    for path, status in (("/", 200), ("/accounts/password_change/", 200), ("/compliance/", 403)):
        page = client.get(path)
        assert page.status_code == status, path
        assert LINK not in page.content.decode(), path
