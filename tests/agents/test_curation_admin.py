"""The curation item's admin page, as the curator reads it: the question that was asked and what its askers
said of the answer, before deciding how to resolve it, and never the answer's own text (it quotes documents
the curator may not be allowed to read)."""

from __future__ import annotations

import pytest
from django.test import Client

from agents.models import Answer, CurationItem, Feedback
from athena.services import ROLE_ADMIN, ROLE_EMPLOYEE
from tests.factories import UserFactory

pytestmark = [pytest.mark.django_db, pytest.mark.integration]


def test_a_curation_item_page_shows_the_question_and_the_askers_comment() -> None:
    curator = UserFactory(username="curator", groups=(ROLE_EMPLOYEE, ROLE_ADMIN), staff=True, superuser=True)
    asker = UserFactory(username="asker", groups=(ROLE_EMPLOYEE,))
    answer = Answer.objects.create(
        user=asker,
        question="Which optic power level counts as failing on the uplinks?",
        response={"answer": "A quoted passage the curator may not read."},
    )
    Feedback.objects.create(answer=answer, user=asker, vote=-1, comment="it named the wrong threshold")
    item = CurationItem.objects.create(answer=answer, reason="downvoted")
    client = Client()
    client.force_login(curator)

    page = client.get(f"/admin/agents/curationitem/{item.pk}/change/")

    assert page.status_code == 200
    html = page.content.decode()
    assert "Which optic power level counts as failing on the uplinks?" in html
    assert "it named the wrong threshold" in html and "not helpful (asker)" in html
    assert "CurationItem object" not in html and "Answer object" not in html
    assert "A quoted passage the curator may not read." not in html
    # the question comes before the fields the curator fills in
    assert html.index("Which optic power level") < html.index('name="resolution"')

    listing = client.get("/admin/agents/feedback/")
    assert "Answer object" not in listing.content.decode()
