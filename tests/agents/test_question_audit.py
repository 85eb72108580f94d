"""Every question leaves an audit event, even when the answering pipeline fails, and a refused question's
personal data is not stored as the conversation's title. (The web server's worker timeout outlasting the wait
for an answer: tests/athena/test_gunicorn_conf.py.)"""

from __future__ import annotations

import pytest
from django.conf import settings
from django.test import override_settings

from agents.models import Conversation
from agents.selectors import conversation_list
from agents.services import Blocked, ask
from audit.models import AuditEvent
from tests.api import make_user

pytestmark = [pytest.mark.integration, pytest.mark.django_db]


def test_a_question_whose_pipeline_fails_is_audited() -> None:
    # the question is asked by no other test: a query vector cached in this process would skip the embedder
    user = make_user("eng", "employees")
    broken = {**settings.ATHENA_EMBEDDER, "BACKEND": "knowledge.embedders.NoSuchEmbedder"}
    with override_settings(ATHENA_EMBEDDER=broken), pytest.raises(Exception):  # noqa: B017 - any failure
        ask(user=user, question="How do I rotate the VPN pre-shared key?", filters={"vendors": ["Juniper"]})
    event = AuditEvent.objects.get(kind="question")
    assert event.verdict == "error" and event.actor == "eng"
    assert "rotate" not in str(event.payload)  # not screened: the text is withheld
    assert event.payload["error"]
    assert event.payload["filters"] == {"vendors": ["Juniper"]}  # no document has it: kept as given
    # the conversation the question opened holds nothing: it leaves the asker's list, and its row stays
    assert not conversation_list(user=user)
    assert Conversation.objects.get(user=user).deleted


@pytest.mark.slow
def test_a_refused_questions_personal_data_is_not_the_conversation_title() -> None:
    user = make_user("eng", "employees")
    with pytest.raises(Blocked):
        ask(user=user, question="My SSN is 536-22-1234, can you update my HR record?")
    titles = list(Conversation.objects.filter(user=user).values_list("title", flat=True))
    assert titles and not any("536-22-1234" in title for title in titles)
    # no empty "(untitled)" entry in the asker's list; the audit event still names an existing conversation
    assert not conversation_list(user=user)
    event = AuditEvent.objects.get(kind="question")
    assert Conversation.objects.get(pk=event.payload["conversation"]).deleted


@pytest.mark.slow
def test_a_refused_question_in_a_conversation_leaves_the_conversation_as_it_was() -> None:
    user = make_user("eng", "employees")
    conversation = Conversation.objects.create(user=user, title="VPN keys")
    with pytest.raises(Blocked):
        ask(user=user, question="My SSN is 536-22-1234, ok?", conversation_id=str(conversation.pk))
    assert [c.pk for c in conversation_list(user=user)] == [conversation.pk]


def test_an_answer_that_cannot_be_stored_leaves_no_event_that_says_it_was_given() -> None:
    """The database refuses the answer's row (here a trigger standing for a full disk or a broken constraint):
    the question's event, the answer, its curation item and the conversation's new turn go together, so the
    log does not record an answer that history and the curation queue never got; the attempt is audited as an
    error instead, and the question's conversation leaves the asker's list."""
    from django.db import connection

    from agents.models import Answer, CurationItem

    user = make_user("eng", "employees")
    with connection.cursor() as cursor:  # rolled back with the test's transaction
        cursor.execute(
            "CREATE FUNCTION refuse_answer() RETURNS trigger LANGUAGE plpgsql AS "
            "$$ BEGIN RAISE EXCEPTION 'no space left on device'; END $$"
        )
        cursor.execute(
            "CREATE TRIGGER refuse_answer BEFORE INSERT ON agents_answer "
            "FOR EACH ROW EXECUTE FUNCTION refuse_answer()"
        )
    with pytest.raises(Exception, match="no space left"):
        ask(user=user, question="Which port does the lab's tftp mirror listen on after the move?")
    events = list(AuditEvent.objects.filter(kind="question"))
    assert [e.verdict for e in events] == ["error"] and events[0].payload["error"]
    assert not Answer.objects.exists() and not CurationItem.objects.exists()
    assert not conversation_list(user=user)
