"""A row deleted while another request writes a reference to it, against the real PostgreSQL.

Django carries out on_delete (CASCADE, SET_NULL) itself, from the rows it can see when the delete starts, and
PostgreSQL checks each foreign key when the referencing transaction commits: a reference written beside a delete
used to fail there, a server error for whichever request committed last. Each test runs one side in the test's
own transaction, held open, and the other in a thread with its own connection (closed when it ends); the test
waits until PostgreSQL reports that thread's session waiting for a lock before letting the first side commit,
so the order is the same on every run."""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib import admin
from django.contrib.auth.models import Group, User
from django.core.files.uploadedfile import SimpleUploadedFile
from django.db import transaction
from django.test import Client, RequestFactory

from agents.feedback import curation_resolve
from agents.models import Answer, Conversation, CurationItem
from athena.principals import Principal
from audit.models import AuditEvent
from knowledge.models import Document, DocumentStatus
from knowledge.selectors import document_list_visible
from tests.api import client_for, make_user
from tests.concurrency import (
    an_abstained_answer,
    finished,
    in_thread,
    until_another_session_waits_for_a_lock,
)

pytestmark = [pytest.mark.integration, pytest.mark.django_db(transaction=True)]


def admin_browser(name: str, *groups: str) -> Client:
    make_user(name, *groups, superuser=True)
    browser = Client()
    assert browser.login(username=name, password="pw")
    return browser


def admin_delete(model: type[Any], obj: Any) -> None:
    """What the admin's delete view does with one row, in the caller's transaction (the view runs in one)."""
    from django.contrib.auth import get_user_model

    request = RequestFactory().post("/")
    # the admin's request has its signed-in admin (a document's removal is audited under their name)
    request.user = get_user_model().objects.filter(username="deleting-admin").first() or make_user(
        "deleting-admin", superuser=True
    )
    admin.site.get_model_admin(model).delete_model(request, obj)


def an_indexed_document(*groups: str) -> Document:
    document = Document.objects.create(
        source="runbooks/token-rotation.md",
        title="Token rotation",
        access_tier="restricted",
        status=DocumentStatus.INDEXED,
    )
    document.allowed_groups.set([Group.objects.get_or_create(name=name)[0] for name in groups])
    return document


# --- a curation item resolved with a document that an admin deletes -----------------------------------------


def test_resolving_with_a_document_deleted_meanwhile_answers_no_such_document() -> None:
    """An admin deletes a document while another resolves a curation item with it: the resolution waits for
    the delete and answers as for any missing document, and the item stays open (it used to be written, then
    fail at commit on the missing document: a server error)."""
    curator = make_user("curator", "employees", "kb-admins", "ops")
    document = an_indexed_document("ops")
    assert document_list_visible(principal=Principal.from_user(curator)).filter(pk=document.pk).exists()
    item = an_abstained_answer(make_user("alice", "employees")).curation
    api = client_for(curator)
    document_id = document.pk  # the delete sets the instance's pk to None

    with transaction.atomic():
        admin_delete(Document, document)
        post, outcome = in_thread(
            lambda: api.post(
                f"/api/v1/curation/{item.pk}/resolve",
                {"resolution": "see the rotation runbook", "document_id": document_id},
                format="json",
            )
        )
        until_another_session_waits_for_a_lock(or_finished=post)

    response = finished(post, outcome)
    assert response.status_code == 400, response.content
    assert response.json()["error"]["message"] == "no such document"
    item.refresh_from_db()
    assert not item.resolved and item.resolved_document_id is None
    assert not AuditEvent.objects.filter(kind="curation_resolved").exists()


def test_deleting_a_document_that_a_resolution_is_naming_keeps_the_resolution() -> None:
    """A resolution naming a document is being written when an admin deletes that document: the delete waits
    for it and then clears the item's pointer, as for a resolution written earlier (the resolution used to fail
    at commit on the document deleted meanwhile)."""
    admin_user = make_user("curator", "employees", "kb-admins", "ops")
    document = an_indexed_document("ops")
    item = an_abstained_answer(make_user("alice", "employees")).curation
    browser = admin_browser("root", "ops")

    with transaction.atomic():
        curation_resolve(
            item_id=item.pk, actor=admin_user, resolution="see the rotation runbook", document_id=document.pk
        )
        delete, outcome = in_thread(
            lambda: browser.post(f"/admin/knowledge/document/{document.pk}/delete/", {"post": "yes"})
        )
        until_another_session_waits_for_a_lock(or_finished=delete)

    response = finished(delete, outcome)
    assert response.status_code == 302
    assert not Document.objects.filter(pk=document.pk).exists()
    item.refresh_from_db()
    assert item.resolved and item.resolution == "see the rotation runbook"
    assert item.resolved_document_id is None


# --- a vote on an answer that an admin deletes (the answer itself, or its conversation) ---------------------


def a_downvote(user: Any, answer_id: int) -> Any:
    return client_for(user).post(f"/api/v1/answers/{answer_id}/feedback", {"vote": "down"}, format="json")


@pytest.mark.parametrize("deleted", [Answer, Conversation])
def test_a_vote_on_an_answer_deleted_meanwhile_answers_no_such_answer(deleted: type[Any]) -> None:
    """An admin deletes an answer (or its conversation) while its asker votes it down: the vote waits for the
    delete and answers 404, and leaves no vote or curation item behind (both used to be written beside the
    delete and fail at commit on the missing answer: a server error)."""
    alice = make_user("alice", "employees")
    answer = an_abstained_answer(alice)
    CurationItem.objects.filter(answer=answer).delete()  # a downvote puts the answer on the queue
    doomed, answer_id = (answer if deleted is Answer else answer.conversation), answer.pk

    with transaction.atomic():
        admin_delete(deleted, doomed)
        vote, outcome = in_thread(lambda: a_downvote(alice, answer_id))
        until_another_session_waits_for_a_lock(or_finished=vote)

    response = finished(vote, outcome)
    assert response.status_code == 404, response.content
    assert response.json()["error"] == {"code": "not_found", "message": "no such answer"}
    assert not Answer.objects.exists()
    assert not CurationItem.objects.exists()
    assert not AuditEvent.objects.filter(kind="feedback").exists()


@pytest.mark.parametrize("deleted", [Answer, Conversation])
def test_deleting_an_answer_being_voted_on_takes_the_vote_with_it(deleted: type[Any]) -> None:
    """An admin deletes an answer (or its conversation) while a vote on it is being recorded: the delete waits
    for the vote and removes it with the answer (the vote used to fail at commit on the answer deleted meanwhile,
    or, had it committed first, the delete on the vote it had not seen)."""
    from agents.feedback import feedback_submit

    alice = make_user("alice", "employees")
    answer = an_abstained_answer(alice)
    CurationItem.objects.filter(answer=answer).delete()
    browser = admin_browser("root")
    path = (
        f"/admin/agents/answer/{answer.pk}/delete/"
        if deleted is Answer
        else f"/admin/agents/conversation/{answer.conversation_id}/delete/"
    )

    with transaction.atomic():
        feedback_submit(user=alice, answer_id=answer.pk, vote=-1, comment="wrong runbook")
        delete, outcome = in_thread(lambda: browser.post(path, {"post": "yes"}))
        until_another_session_waits_for_a_lock(or_finished=delete)

    response = finished(delete, outcome)
    assert response.status_code == 302
    assert not deleted.objects.exists()
    assert not Answer.objects.exists()
    assert not CurationItem.objects.exists()
    assert AuditEvent.objects.filter(kind="feedback").count() == 1  # the vote was recorded, then removed


# --- a document's access given to a group that an admin deletes -----------------------------------------------


def test_an_acl_naming_a_group_deleted_meanwhile_is_refused_and_changes_nothing() -> None:
    """An admin deletes a group while another gives a document to it through the ACL API: the ACL change waits
    for the delete and answers 409 naming the group, and the document keeps its access (it used to write the
    group's membership beside the delete and fail at commit on the missing group: a server error)."""
    document = an_indexed_document("ops")
    vault = Group.objects.create(name="vault")
    api = client_for(make_user("secops", "employees", "kb-admins", "ops"))

    with transaction.atomic():
        admin_delete(Group, vault)
        put, outcome = in_thread(
            lambda: api.put(
                f"/api/v1/documents/{document.pk}/acl",
                {"access_tier": "confidential", "groups": ["vault"]},
                format="json",
            )
        )
        until_another_session_waits_for_a_lock(or_finished=put)

    response = finished(put, outcome)
    assert response.status_code == 409, response.content
    assert response.json()["error"]["code"] == "conflict"
    assert "vault" in response.json()["error"]["message"]
    document.refresh_from_db()
    assert document.access_tier == "restricted"
    assert [g.name for g in document.allowed_groups.all()] == ["ops"]
    assert not Group.objects.filter(name="vault").exists()
    assert not AuditEvent.objects.filter(kind="acl_change").exists()


def test_deleting_a_group_that_an_acl_is_being_given_to_waits_and_takes_it_off_the_document() -> None:
    """An admin deletes a group while a document is being given to it: the delete waits for the ACL change and
    then removes the group from the document too (the ACL change used to fail at commit on the group deleted
    meanwhile, or, had it committed first, the delete on the membership it had not seen)."""
    from knowledge.services import document_set_acl

    document = an_indexed_document("ops")
    vault = Group.objects.create(name="vault")
    browser = admin_browser("root")

    with transaction.atomic():
        document_set_acl(document=document, access_tier="confidential", groups=["ops", "vault"], actor=None)
        delete, outcome = in_thread(
            lambda: browser.post(f"/admin/auth/group/{vault.pk}/delete/", {"post": "yes"})
        )
        until_another_session_waits_for_a_lock(or_finished=delete)

    response = finished(delete, outcome)
    assert response.status_code == 302
    assert not Group.objects.filter(name="vault").exists()
    document.refresh_from_db()
    assert document.access_tier == "confidential"
    assert [g.name for g in document.allowed_groups.all()] == ["ops"]


def test_an_acl_naming_a_group_deleted_meanwhile_from_that_document_answers_unknown_group() -> None:
    """The document names the group that an admin deletes while another sets the document's ACL naming it again:
    the ACL change waits for the delete (which holds the document) and answers as for any unknown group, and no
    empty group of that name is made (one was, hiding the document from the group's former members)."""
    document = an_indexed_document("ops", "vault")
    vault = Group.objects.get(name="vault")
    api = client_for(make_user("secops", "employees", "kb-admins", "ops"))

    with transaction.atomic():
        admin_delete(Group, vault)
        put, outcome = in_thread(
            lambda: api.put(
                f"/api/v1/documents/{document.pk}/acl",
                {"access_tier": "confidential", "groups": ["ops", "vault"]},
                format="json",
            )
        )
        until_another_session_waits_for_a_lock(or_finished=put)

    response = finished(put, outcome)
    assert response.status_code == 400, response.content
    assert response.json()["error"]["message"] == "unknown group(s): vault"
    assert not Group.objects.filter(name="vault").exists()
    document.refresh_from_db()
    assert document.access_tier == "restricted"
    assert [g.name for g in document.allowed_groups.all()] == ["ops"]


def test_deleting_a_group_named_by_a_document_whose_acl_is_being_set_waits_for_it() -> None:
    """An admin deletes a group that a document names while its ACL is being set to that group alone: the delete
    waits for the ACL change, then takes the group off the document, which stays closed (confidential, with
    no group: readable by nobody until an admin sets its ACL)."""
    from knowledge.services import document_set_acl

    document = an_indexed_document("ops", "vault")
    vault = Group.objects.get(name="vault")
    browser = admin_browser("root")

    with transaction.atomic():
        document_set_acl(document=document, access_tier="confidential", groups=["vault"], actor=None)
        delete, outcome = in_thread(
            lambda: browser.post(f"/admin/auth/group/{vault.pk}/delete/", {"post": "yes"})
        )
        until_another_session_waits_for_a_lock(or_finished=delete)

    response = finished(delete, outcome)
    assert response.status_code == 302
    assert not Group.objects.filter(name="vault").exists()
    document.refresh_from_db()
    assert document.access_tier == "confidential"
    assert not document.allowed_groups.exists()


# --- a question answered in a conversation that an admin deletes ---------------------------------------------


@pytest.mark.slow  # answers a question: loads the models
def test_a_question_in_a_conversation_deleted_meanwhile_answers_no_such_conversation() -> None:
    """An admin deletes a conversation while its owner's next question in it is being answered: storing the
    answer waits for the delete and the question answers 404 as in any missing conversation, with no answer or
    curation item left (the answer used to be written beside the delete and fail at commit: a server error)."""
    alice = make_user("alice", "employees")
    conversation = Conversation.objects.create(user=alice, title="VPN keys")
    conversation_id = str(conversation.pk)
    api = client_for(alice)

    with transaction.atomic():
        admin_delete(Conversation, conversation)
        asked, outcome = in_thread(
            lambda: api.post(
                "/api/v1/ask",
                {
                    "question": "Which port does the lab's tftp mirror listen on?",
                    "conversation_id": conversation_id,
                },
                format="json",
            )
        )
        until_another_session_waits_for_a_lock(or_finished=asked)

    response = finished(asked, outcome)
    assert response.status_code == 404, response.content
    assert response.json()["error"] == {"code": "not_found", "message": "no such conversation"}
    assert not Conversation.objects.exists()
    assert not Answer.objects.exists() and not CurationItem.objects.exists()
    assert AuditEvent.objects.get(kind="question").verdict == "error"  # asked, and not answered


@pytest.mark.slow  # answers a question: loads the models
def test_deleting_a_conversation_while_its_answer_is_stored_takes_the_answer_with_it() -> None:
    """An admin deletes a conversation while an answer in it is being stored: the delete waits for it and
    removes the answer and its curation item with the conversation (the admin's delete used to miss the new
    answer and fail at commit on it: a server error)."""
    from agents.services import ask

    alice = make_user("alice", "employees")
    conversation = Conversation.objects.create(user=alice, title="VPN keys")
    browser = admin_browser("root")

    with transaction.atomic():
        ask(
            user=alice,
            question="Which port does the lab's tftp mirror listen on?",
            conversation_id=str(conversation.pk),
        )
        assert Answer.objects.filter(conversation=conversation).exists()
        delete, outcome = in_thread(
            lambda: browser.post(f"/admin/agents/conversation/{conversation.pk}/delete/", {"post": "yes"})
        )
        until_another_session_waits_for_a_lock(or_finished=delete)

    response = finished(delete, outcome)
    assert response.status_code == 302
    assert not Conversation.objects.exists()
    assert not Answer.objects.exists() and not CurationItem.objects.exists()


# --- an admin's change form pointing at a row that another admin deletes ------------------------------------


def a_change_form(browser: Client, path: str) -> dict[str, Any]:
    """The values an admin change page shows, as its form would send them back."""
    page = browser.get(path)
    assert page.status_code == 200
    form = page.context["adminform"].form
    data: dict[str, Any] = {}
    for field in form:
        value = field.value()
        if field.widget_type == "splitdatetime":
            data.update({f"{field.html_name}_0": "", f"{field.html_name}_1": ""})
        elif isinstance(value, list):
            data[field.html_name] = [str(item) for item in value]
        elif value is not None and value is not False:
            data[field.html_name] = value
    return data


def form_errors(response: Any) -> dict[str, list[str]]:
    """The errors of an admin change form sent back: the form shown again (200), not saved (302)."""
    assert response.status_code == 200, response.status_code
    return {name: list(messages) for name, messages in response.context["adminform"].form.errors.items()}


def test_an_admin_form_giving_a_document_to_a_group_deleted_meanwhile_is_refused() -> None:
    """One admin gives a document to a group in its change form while another deletes that group: the form
    waits for the delete and comes back with an error, the document unchanged (it used to be saved naming the
    deleted group and fail at commit: a server error)."""
    document = an_indexed_document("ops")
    vault = Group.objects.create(name="vault")
    browser = admin_browser("curator", "ops")
    path = f"/admin/knowledge/document/{document.pk}/change/"
    data = a_change_form(browser, path)
    data["allowed_groups"] = [
        str(pk) for pk in Group.objects.filter(name__in=["ops", "vault"]).values_list("pk", flat=True)
    ]

    with transaction.atomic():
        admin_delete(Group, vault)
        save, outcome = in_thread(lambda: browser.post(path, data))
        until_another_session_waits_for_a_lock(or_finished=save)

    errors = form_errors(finished(save, outcome))
    assert errors == {"allowed_groups": ["Deleted by someone else since this page was opened: vault."]}
    assert [g.name for g in document.allowed_groups.all()] == ["ops"]


def test_an_admin_form_superseding_a_document_by_one_deleted_meanwhile_is_refused() -> None:
    """One admin marks a document as superseded by another while a second admin deletes that other: the form
    waits for the delete and says the document was deleted (it used to be saved pointing at the deleted
    document and fail at commit: a server error)."""
    document = an_indexed_document("ops")
    newer = Document.objects.create(
        source="runbooks/token-rotation-v2.md",
        title="Token rotation v2",
        access_tier="restricted",
        status=DocumentStatus.INDEXED,
    )
    newer.allowed_groups.set(Group.objects.filter(name="ops"))
    browser = admin_browser("curator", "ops")
    path = f"/admin/knowledge/document/{document.pk}/change/"
    data = {**a_change_form(browser, path), "superseded_by": str(newer.pk)}

    with transaction.atomic():
        admin_delete(Document, newer)
        save, outcome = in_thread(lambda: browser.post(path, data))
        until_another_session_waits_for_a_lock(or_finished=save)

    errors = form_errors(finished(save, outcome))
    assert errors == {
        "superseded_by": ["This document was deleted by someone else since this page was opened."]
    }
    document.refresh_from_db()
    assert document.superseded_by_id is None


def test_an_admin_form_resolving_an_item_with_a_document_deleted_meanwhile_is_refused() -> None:
    """One admin resolves a curation item in its change form with a document that another admin deletes: the
    form waits for the delete and says the document was deleted, the item stays open (it used to be saved
    pointing at the deleted document and fail at commit: a server error)."""
    document = an_indexed_document("ops")
    item = an_abstained_answer(make_user("alice", "employees")).curation
    browser = admin_browser("curator", "kb-admins", "ops")
    path = f"/admin/agents/curationitem/{item.pk}/change/"
    data = {
        **a_change_form(browser, path),
        "resolved": "on",
        "resolution": "see the rotation runbook",
        "resolved_document": str(document.pk),
    }

    with transaction.atomic():
        admin_delete(Document, document)
        save, outcome = in_thread(lambda: browser.post(path, data))
        until_another_session_waits_for_a_lock(or_finished=save)

    errors = form_errors(finished(save, outcome))
    assert errors == {
        "resolved_document": ["This document was deleted by someone else since this page was opened."]
    }
    item.refresh_from_db()
    assert not item.resolved and item.resolved_document_id is None


# --- a user's first question or upload while an admin deletes the user --------------------------------------


def test_a_first_question_of_a_user_deleted_meanwhile_is_refused() -> None:
    """An admin deletes a user while that user's first question is starting its conversation: the question
    waits for the delete and is refused (403), leaving no conversation (it used to be written beside the delete
    and fail at commit on the missing user: a server error). The question is still audited."""
    alice = make_user("alice", "employees")
    api = client_for(User.objects.get(pk=alice.pk))  # the request's own copy (the delete clears alice.pk)

    with transaction.atomic():
        admin_delete(User, alice)
        asked, outcome = in_thread(
            lambda: api.post("/api/v1/ask", {"question": "Who rotates the VPN keys?"}, format="json")
        )
        until_another_session_waits_for_a_lock(or_finished=asked)

    response = finished(asked, outcome)
    assert response.status_code == 403, response.content
    assert response.json()["error"] == {"code": "forbidden", "message": "this account was deleted"}
    assert not User.objects.filter(username="alice").exists()
    assert not Conversation.objects.exists()
    assert AuditEvent.objects.get(kind="question").verdict == "error"


def test_a_first_upload_of_a_user_deleted_meanwhile_is_refused_and_its_file_removed(
    settings: Any, tmp_path: Any
) -> None:
    """An admin deletes a user while that user's first upload is being recorded: the upload waits for the
    delete, is refused (403), and leaves neither a document nor its stored file (the document used to be written
    beside the delete and fail at commit: a server error, and a file nobody owned)."""
    settings.MEDIA_ROOT = tmp_path / "media"
    settings.ATHENA_REALTIME_VIA_CELERY = True  # refused before anything is queued
    alice = make_user("alice", "employees")
    api = client_for(User.objects.get(pk=alice.pk))  # the request's own copy (the delete clears alice.pk)
    upload = SimpleUploadedFile("notes.md", b"# Notes\n\nThe lab's tftp mirror listens on 6969.\n")

    with transaction.atomic():
        admin_delete(User, alice)
        sent, outcome = in_thread(
            lambda: api.post("/api/v1/documents/upload", {"file": upload}, format="multipart")
        )
        until_another_session_waits_for_a_lock(or_finished=sent)

    response = finished(sent, outcome)
    assert response.status_code == 403, response.content
    assert response.json()["error"]["code"] == "forbidden"
    assert not Document.objects.exists()
    assert not [path for path in (tmp_path / "media").rglob("*") if path.is_file()]


@pytest.mark.parametrize("how", ["delete view", "delete action"])
def test_deleting_a_user_whose_first_question_is_being_stored_says_the_user_is_protected(how: str) -> None:
    """A user's first conversation is being stored when an admin deletes the user: the delete waits for it and
    then shows the admin's "cannot delete" page, as for any user with history (it used to look for protected
    rows before the conversation committed, delete, and fail at commit on it: a server error)."""
    from athena.services import user_held

    alice = make_user("alice", "employees")
    browser = admin_browser("root")
    if how == "delete view":
        post = lambda: browser.post(f"/admin/auth/user/{alice.pk}/delete/", {"post": "yes"})  # noqa: E731
    else:
        post = lambda: browser.post(  # noqa: E731
            "/admin/auth/user/", {"action": "delete_selected", "_selected_action": [alice.pk], "post": "yes"}
        )

    with transaction.atomic():
        user_held(user_id=alice.pk)  # as a first question or upload does before writing its row
        Conversation.objects.create(user=alice, title="VPN keys")
        delete, outcome = in_thread(post)
        until_another_session_waits_for_a_lock(or_finished=delete)

    response = finished(delete, outcome)
    assert response.status_code == 200, response.content
    assert b"protected" in response.content
    assert User.objects.filter(pk=alice.pk).exists()
    assert Conversation.objects.filter(user=alice).count() == 1
