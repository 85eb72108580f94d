"""Write paths that two requests (or a request and a background job) run at the same time, against the real
PostgreSQL: each thread has its own database connection (closed when it ends), a barrier lines the writes up,
and where one write must be caught mid-way the test waits until PostgreSQL reports the other session waiting
for a lock (never a sleep that hopes for the right order)."""

from __future__ import annotations

import os
import threading
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth.hashers import MD5PasswordHasher
from django.db import connections, transaction
from django.test import Client

from agents.feedback import curation_resolve
from audit.models import AuditEvent
from tests.api import client_for, make_user
from tests.concurrency import (
    WAIT_SECONDS,
    an_abstained_answer,
    in_thread,
    together,
    until_another_session_waits_for_a_lock,
)

pytestmark = [pytest.mark.integration, pytest.mark.django_db(transaction=True)]

# --- curation --------------------------------------------------------------------------------------------------


def test_a_resolution_sent_twice_at_once_is_recorded_once() -> None:
    """A double submit of the same resolution: both requests succeed, the item is resolved once, one audit
    event (the second used to write the resolution again and audit it a second time)."""
    admin = make_user("kbadmin", "kb-admins")
    item = an_abstained_answer(make_user("alice", "employees")).curation
    url = f"/api/v1/curation/{item.pk}/resolve"
    body = {"resolution": "added the token rotation runbook"}
    first, second = client_for(admin), client_for(admin)

    responses = together(
        lambda: first.post(url, body, format="json"), lambda: second.post(url, body, format="json")
    )

    assert [r.status_code for r in responses] == [200, 200]
    item.refresh_from_db()
    assert item.resolved and item.resolution == body["resolution"]
    assert AuditEvent.objects.filter(kind="curation_resolved").count() == 1


def test_two_admins_resolving_one_item_at_once_one_wins_the_other_is_told() -> None:
    """Two different resolutions at once: the first committed stays, the other gets 409 (it used to replace
    the first silently, both answered 200)."""
    item = an_abstained_answer(make_user("alice", "employees")).curation
    url = f"/api/v1/curation/{item.pk}/resolve"
    ann, ben = client_for(make_user("ann", "kb-admins")), client_for(make_user("ben", "kb-admins"))

    responses = together(
        lambda: ann.post(url, {"resolution": "ann: added a runbook"}, format="json"),
        lambda: ben.post(url, {"resolution": "ben: out of scope"}, format="json"),
    )

    assert sorted(r.status_code for r in responses) == [200, 409]
    winner = next(r for r in responses if r.status_code == 200).json()
    loser = next(r for r in responses if r.status_code == 409).json()
    assert loser["error"]["code"] == "conflict"
    item.refresh_from_db()
    assert item.resolved and item.resolution == winner["resolution"]
    events = AuditEvent.objects.filter(kind="curation_resolved")
    assert [e.payload["resolution"] for e in events] == [winner["resolution"]]


def test_the_admin_resolve_action_keeps_a_resolution_committed_while_it_ran() -> None:
    """The admin's "Resolve selected items" lists the open items, then resolves each. An admin resolving one
    of them through the API meanwhile: the action waits for that row, then finds it resolved and keeps what
    that admin wrote (it used to overwrite it with "resolved in admin by ...")."""
    item = an_abstained_answer(make_user("alice", "employees")).curation
    api_admin = make_user("ann", "kb-admins")
    make_user("root", "kb-admins", superuser=True)
    browser = Client()
    assert browser.login(username="root", password="pw")

    def resolve_action() -> Any:
        return browser.post(
            "/admin/agents/curationitem/",
            {"action": "resolve", "_selected_action": [str(item.pk)]},
            follow=True,
        )

    with transaction.atomic():
        curation_resolve(item_id=item.pk, actor=api_admin, resolution="ann: added the rotation runbook")
        action, result = in_thread(resolve_action)
        until_another_session_waits_for_a_lock()  # the action listed the item as open and waits for its row
    action.join(WAIT_SECONDS)

    assert not action.is_alive()
    (response,) = result
    assert not isinstance(response, BaseException), response
    item.refresh_from_db()
    assert item.resolution == "ann: added the rotation runbook"
    assert AuditEvent.objects.filter(kind="curation_resolved").count() == 1
    assert response.status_code == 200
    assert "resolved meanwhile by someone else" in response.content.decode()


# --- two questions answered at once in one conversation --------------------------------------------------


@pytest.mark.slow  # answers two questions: loads the models
def test_two_questions_at_once_in_one_conversation_are_remembered_in_the_order_stored(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """The conversation's memory (the turns a follow-up is read against) keeps the order of its stored history
    when two questions in it are answered at once. The first is held just as it is remembered; the second is
    answered meanwhile. Remembering after commit let the second be remembered first (a follow-up would then
    read the older question as the last); remembered while the conversation's row is held, the second waits."""
    from agents import memory
    from agents.models import Answer, Conversation
    from agents.services import ask

    user = make_user("alice", "employees")
    conversation = Conversation.objects.create(user=user, title="VPN keys")
    first, second = "Who rotates the VPN keys?", "Where are the VPN keys kept?"
    reached, release = threading.Event(), threading.Event()
    remember = memory.memory_append

    def held_first(conversation_id: str, turn: memory.Turn) -> None:
        if turn.question == first:
            reached.set()
            assert release.wait(WAIT_SECONDS)
        remember(conversation_id, turn)

    monkeypatch.setattr(memory, "memory_append", held_first)  # a new conversation: its memory is empty
    try:
        asking = [in_thread(lambda: ask(user=user, question=first, conversation_id=str(conversation.pk)))]
        assert reached.wait(WAIT_SECONDS)
        asking.append(
            in_thread(lambda: ask(user=user, question=second, conversation_id=str(conversation.pk)))
        )
        until_another_session_waits_for_a_lock(or_finished=asking[1][0])
        release.set()
        for thread, outcome in asking:
            thread.join(WAIT_SECONDS)
            assert not thread.is_alive() and not isinstance(outcome[0], BaseException), outcome

        stored = list(Answer.objects.filter(conversation=conversation).order_by("created_at", "pk"))
        assert [answer.question for answer in stored] == [first, second]
        remembered = [turn.question for turn in memory.memory_load(str(conversation.pk))]
        assert remembered == [first, second]
    finally:
        release.set()


def test_a_turn_taken_back_leaves_the_conversations_other_turns() -> None:
    """An answer whose storing failed after it was remembered is taken back out of the memory (the real Redis),
    and only that turn: the turns before and after it stay, in order."""
    from agents import memory

    key = str(uuid.uuid4())  # a conversation of its own (its memory expires with the TTL)
    turns = [
        memory.Turn(question=q, rewritten=q, answer="", template="factual_lookup", chunk_ids=[])
        for q in ("first?", "second?", "third?")
    ]
    for turn in turns:
        memory.memory_append(key, turn)
    memory.memory_forget(key, turns[1])
    assert [turn.question for turn in memory.memory_load(key)] == ["first?", "third?"]


# --- group membership during a question ---------------------------------------------------------------------


@pytest.mark.slow
def test_the_audit_snapshot_is_the_groups_a_question_was_answered_for() -> None:
    """The question's audit event keeps the ACL snapshot it was answered under. The asker leaves a group while
    the pipeline runs (here: while its retrieval waits for the chunks table, which the test holds locked): the
    event records the groups the retrieval used, not the membership read again once the answer is stored
    (which would show an answer citing a group's documents to someone outside the group)."""
    from django.contrib.auth.models import Group

    from agents.services import ask

    user = make_user("eng", "employees", "noc-admins")
    noc = Group.objects.get(name="noc-admins")

    with transaction.atomic(), connections["default"].cursor() as cursor:
        cursor.execute("LOCK TABLE knowledge_chunk IN ACCESS EXCLUSIVE MODE")
        asking, result = in_thread(lambda: ask(user=user, question="How is the DHCP lease time changed?"))
        until_another_session_waits_for_a_lock()  # the pipeline has its principal and is retrieving
        leaving, left = in_thread(lambda: user.groups.remove(noc))
        leaving.join(WAIT_SECONDS)
        assert left == [None]
    asking.join(WAIT_SECONDS)

    assert not asking.is_alive()
    (body,) = result
    assert not isinstance(body, BaseException), body
    assert sorted(user.groups.values_list("name", flat=True)) == ["employees"]
    event = AuditEvent.objects.get(kind="question")
    assert event.payload["groups"] == ["employees", "noc-admins"]


# --- uploads ---------------------------------------------------------------------------------------------------

PIECE = 256 * 1024  # above the file buffer: each piece reaches the file as it is written


class StreamedUpload:
    """An uploaded file arriving in pieces (what Django hands upload_store); `between` runs once the first
    piece has been written, before the next is handed over."""

    def __init__(self, name: str, pieces: list[bytes], between: Callable[[], None] | None = None) -> None:
        self.name, self.pieces, self.between = name, pieces, between
        self.size = sum(len(piece) for piece in pieces)

    def chunks(self) -> Any:
        for number, piece in enumerate(self.pieces):
            yield piece
            if number == 0 and self.between is not None:
                self.between()


def two_uploads(user: Any, first: StreamedUpload, second: StreamedUpload) -> tuple[Any, Any]:
    """`first` is stored; once its first piece is on disk, `second` is stored from another request, and
    `first` goes on when `second` is done or waits for it. Returns each call's result or exception."""
    from knowledge.apis import upload_store

    started = threading.Event()
    holder: dict[str, Any] = {}

    def second_arrives() -> None:
        holder["thread"], holder["result"] = in_thread(lambda: upload_store(user=user, upload=second))
        started.set()
        until_another_session_waits_for_a_lock(or_finished=holder["thread"])

    first.between = second_arrives
    thread, result = in_thread(lambda: upload_store(user=user, upload=first))
    thread.join(WAIT_SECONDS)
    assert started.is_set()
    holder["thread"].join(WAIT_SECONDS)
    assert not thread.is_alive() and not holder["thread"].is_alive()
    return result[0], holder["result"][0]


def test_the_same_file_name_uploaded_twice_at_once_is_stored_whole(settings, tmp_path) -> None:  # type: ignore[no-untyped-def]
    """Two uploads of one file name at once (a resubmit with a corrected file, two tabs): the stored file is
    one of the two, whole. Both used to write into the same file, the second truncating it while the first
    went on writing, which left the second's start followed by the rest of the first."""
    settings.MEDIA_ROOT = str(tmp_path / "media")
    user = make_user("eng", "employees")
    first = StreamedUpload("notes.md", [b"a" * PIECE, b"a" * PIECE, b"a" * PIECE])
    second = StreamedUpload("notes.md", [b"b" * PIECE])

    stored_first, stored_second = two_uploads(user, first, second)

    assert not isinstance(stored_first, BaseException), stored_first
    assert not isinstance(stored_second, BaseException), stored_second
    path = stored_first[1]
    assert path == stored_second[1]
    assert path.read_bytes() in (b"a" * 3 * PIECE, b"b" * PIECE)
    assert [p.name for p in path.parent.iterdir()] == ["notes.md"]  # nothing else left behind


def test_two_uploads_at_once_cannot_pass_the_quota_together(settings, tmp_path) -> None:  # type: ignore[no-untyped-def]
    """Each of two uploads sent at once fits the quota, both together do not: one is stored, the other is
    refused (both used to pass the check, which saw only what was on disk before either was written)."""
    from knowledge.uploads import UploadQuotaExceeded

    settings.MEDIA_ROOT = str(tmp_path / "media")
    settings.ATHENA_UPLOAD_QUOTA_BYTES = 4 * PIECE
    user = make_user("eng", "employees")
    first = StreamedUpload("first.md", [b"a" * PIECE] * 3)
    second = StreamedUpload("second.md", [b"b" * PIECE] * 2)

    stored_first, stored_second = two_uploads(user, first, second)

    assert not isinstance(stored_first, BaseException), stored_first
    assert isinstance(stored_second, UploadQuotaExceeded), stored_second
    folder = stored_first[1].parent
    assert sum(p.stat().st_size for p in folder.iterdir()) <= settings.ATHENA_UPLOAD_QUOTA_BYTES
    assert [p.name for p in folder.iterdir()] == ["first.md"]


# --- a document's access: the admin form and the ACL API --------------------------------------------------------


def document_change_form(browser: Client, document: Any) -> tuple[str, dict[str, Any]]:
    """The admin change page of `document` as an admin opens it: its URL and the values its form was shown
    with (hidden fields included), ready to be sent back."""
    import json

    change = f"/admin/knowledge/document/{document.pk}/change/"
    page = browser.get(change)
    assert page.status_code == 200
    form = page.context["adminform"].form
    data: dict[str, Any] = {
        "source": document.source,
        "title": document.title,
        "access_tier": document.access_tier,
        "doc_type": document.doc_type,
        "analyzer_version": document.analyzer_version,
        "metadata": json.dumps(document.metadata),
        "allowed_groups": [str(pk) for pk in document.allowed_groups.values_list("pk", flat=True)],
        "expires_at_0": "",
        "expires_at_1": "",
    }
    for hidden in form.hidden_fields():
        data[hidden.html_name] = hidden.value()
    return change, data


def a_document_open_to(*groups: str) -> Any:
    from django.contrib.auth.models import Group

    from knowledge.models import Document

    document = Document.objects.create(source="runbook.md", title="Runbook", access_tier="internal")
    document.allowed_groups.set([Group.objects.get_or_create(name=name)[0] for name in groups])
    return document


def test_an_admin_form_saved_after_an_acl_change_keeps_that_change() -> None:
    """An admin opens a document's page to fix its title; meanwhile another admin restricts it through the ACL
    API. Saving the title keeps the new access: the form used to send back the tier and groups it had shown,
    which opened the document again to the groups just taken off it."""
    from knowledge.models import Document

    make_user("curator", "employees", "kb-admins", "ops", "vault", superuser=True)
    document = a_document_open_to("ops", "vault")
    browser = Client()
    assert browser.login(username="curator", password="pw")
    change, form = document_change_form(browser, document)

    acl = client_for(make_user("secops", "employees", "kb-admins", "vault")).put(
        f"/api/v1/documents/{document.pk}/acl",
        {"access_tier": "restricted", "groups": ["vault"]},
        format="json",
    )
    assert acl.status_code == 200
    saved = browser.post(change, {**form, "title": "Runbook (2025)"})

    assert saved.status_code == 302, saved.content.decode()[:3000]
    document = Document.objects.get(pk=document.pk)
    assert document.title == "Runbook (2025)"
    assert document.access_tier == "restricted"
    assert list(document.allowed_groups.values_list("name", flat=True)) == ["vault"]


def test_an_admin_acl_edit_over_an_acl_changed_meanwhile_is_refused() -> None:
    """Both admins changed the access: the form that was opened first is refused with a message (its admin
    reloads and decides), instead of one of the two changes silently replacing the other."""
    from django.contrib.auth.models import Group

    from knowledge.models import Document

    make_user("curator", "employees", "kb-admins", "ops", "vault", superuser=True)
    document = a_document_open_to("ops", "vault")
    browser = Client()
    assert browser.login(username="curator", password="pw")
    change, form = document_change_form(browser, document)

    acl = client_for(make_user("secops", "employees", "kb-admins", "vault")).put(
        f"/api/v1/documents/{document.pk}/acl",
        {"access_tier": "restricted", "groups": ["vault"]},
        format="json",
    )
    assert acl.status_code == 200
    ops_only = [str(Group.objects.get(name="ops").pk)]
    refused = browser.post(change, {**form, "allowed_groups": ops_only})

    assert refused.status_code == 200  # the form again, with its error
    assert "changed by someone else" in refused.content.decode()
    document = Document.objects.get(pk=document.pk)
    assert document.access_tier == "restricted"
    assert list(document.allowed_groups.values_list("name", flat=True)) == ["vault"]


# --- the first documents indexed at once in a fresh process ------------------------------------------------------

FIRST_TOKEN_COUNTS = """
import json, threading
import django
django.setup()
from knowledge.chunking import make_token_counter
barrier, failures = threading.Barrier(8), []
def count():
    barrier.wait(120)
    try:
        make_token_counter()("The DHCP lease time is 8 hours.")
    except Exception as exc:
        failures.append(repr(exc))
threads = [threading.Thread(target=count) for _ in range(8)]
for thread in threads:
    thread.start()
for thread in threads:
    thread.join()
print(json.dumps(failures))
"""


@pytest.mark.slow
def test_documents_chunked_at_once_by_a_fresh_process_all_get_the_tokenizer() -> None:
    """Uploads indexed in the web process (ATHENA_REALTIME_VIA_CELERY=false), several at once right after it
    started (the same file sent twice): each thread's chunking loads the word-piece tokenizer, and transformers'
    first import from several threads at once failed ("cannot import name 'AutoTokenizer'"), so all but one of
    the uploads were marked failed as unreadable files. Run in a fresh interpreter: this one has loaded it."""
    import json
    import subprocess
    import sys

    root = Path(__file__).resolve().parents[2]
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "athena.settings.test"}
    run = subprocess.run(
        [sys.executable, "-c", FIRST_TOKEN_COUNTS],
        cwd=root,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert run.returncode == 0, run.stderr[-3000:]
    assert json.loads(run.stdout.strip().splitlines()[-1]) == []


# --- the audit log's checkpoints ---------------------------------------------------------------------------------


def flock_waiters(path: Any) -> int:
    """How many flock() calls wait for a lock on the file at `path` (Linux /proc/locks: `->` marks a waiter)."""
    inode = os.stat(path).st_ino
    lines = Path("/proc/locks").read_text().splitlines()
    return sum(
        1 for line in lines if "->" in line and "FLOCK" in line and line.split()[6].endswith(f":{inode}")
    )


def test_a_checkpoint_waits_for_one_being_written(audit_checkpoint_file) -> None:  # type: ignore[no-untyped-def]
    """Each checkpoint links to the line before it. The beat task overlapping a slow earlier run, or an
    operator's `audit_verify --checkpoint`, used to read the same last line as the other writer and link to it
    too: the file then read as one with lines removed, and every later verification failed. A writer holding
    the file (as the checkpoint writer does, from reading its last line to appending) makes the next one wait."""
    import fcntl

    from audit.services import audit_checkpoint_write, audit_record, audit_verify, checkpoints_read

    audit_record(kind="probe", payload={"n": 1})
    assert audit_checkpoint_write() is not None
    audit_record(kind="probe", payload={"n": 2})

    with open(audit_checkpoint_file, "a") as held:
        fcntl.flock(held, fcntl.LOCK_EX)  # another writer, between reading the last line and appending
        writer, written = in_thread(audit_checkpoint_write)
        deadline = time.monotonic() + WAIT_SECONDS
        while writer.is_alive() and not flock_waiters(audit_checkpoint_file) and time.monotonic() < deadline:
            time.sleep(0.02)
        waited = writer.is_alive()
        fcntl.flock(held, fcntl.LOCK_UN)
    writer.join(WAIT_SECONDS)

    assert waited, "the checkpoint was appended while another writer held the file"
    assert not isinstance(written[0], BaseException), written[0]
    checkpoints, problems = checkpoints_read()
    assert problems == [] and len(checkpoints) == 2
    assert audit_verify().ok


def test_checkpoints_written_at_once_keep_the_file_verifiable() -> None:
    from audit.services import audit_checkpoint_write, audit_record, audit_verify, checkpoints_read

    for round_ in range(5):
        audit_record(kind="probe", payload={"round": round_})
        results = together(*[audit_checkpoint_write] * 4)
        assert not any(isinstance(result, BaseException) for result in results), results
        assert checkpoints_read()[1] == []
    assert audit_verify().ok


# --- sign-in throttling ------------------------------------------------------------------------------------------


class PasswordCheckGate:
    """Holds each password check until every attempt of a burst has either reached its own check or ended
    without one: the burst is as concurrent as it can be, whatever the scheduler does."""

    def __init__(self, attempts: int) -> None:
        self.attempts, self.checks, self.settled = attempts, 0, 0
        self.condition = threading.Condition()
        self.local = threading.local()

    def check(self) -> None:
        self.local.checked = True
        with self.condition:
            self.checks += 1
            self.settled += 1
            self.condition.notify_all()
            assert self.condition.wait_for(lambda: self.settled >= self.attempts, WAIT_SECONDS)

    def attempt(self, call: Callable[[], Any]) -> Any:
        self.local.checked = False
        try:
            return call()
        finally:
            if not self.local.checked:  # refused without a check: it no longer holds up the others
                with self.condition:
                    self.settled += 1
                    self.condition.notify_all()


GATE: list[PasswordCheckGate] = []


class GatedPasswordHasher(MD5PasswordHasher):
    """Django's MD5 hasher (the test settings' own), each check passing the test's gate first."""

    algorithm = "gated_md5"

    def verify(self, password: str, encoded: str) -> bool:
        GATE[0].check()
        return super().verify(password, encoded)


def test_a_burst_of_sign_ins_checks_no_more_passwords_than_the_limit(settings) -> None:  # type: ignore[no-untyped-def]
    """Twelve guesses at one name sent at once, the limit three: three passwords are checked, the others are
    refused unchecked, and the right password is refused too until the name's window ends. Each attempt used
    to read the counter, check the password and be counted once that failed, so every attempt of a burst
    found the counter as it was before the burst and checked its password: guesses sent in parallel
    multiplied what the limit allows."""
    from django.contrib.auth import authenticate
    from django.test import RequestFactory

    settings.PASSWORD_HASHERS = [f"{__name__}.GatedPasswordHasher", *settings.PASSWORD_HASHERS]
    settings.ATHENA_LOGIN_FAILURES_PER_NAME = 3
    make_user("alice", "employees")  # password "pw", stored by the gated hasher
    attempts = 12
    gate = PasswordCheckGate(attempts)
    GATE[:] = [gate]

    def guess(number: int) -> Any:
        request = RequestFactory().post("/accounts/login/")
        return gate.attempt(lambda: authenticate(request, username="alice", password=f"guess-{number}"))

    results = together(*[lambda n=n: guess(n) for n in range(attempts)])

    assert results == [None] * attempts
    assert gate.checks == 3
    GATE[:] = [PasswordCheckGate(1)]
    assert authenticate(RequestFactory().post("/accounts/login/"), username="alice", password="pw") is None
    assert GATE[0].checks == 0


def test_an_acl_change_for_a_document_deleted_meanwhile_answers_not_found() -> None:
    """An admin deletes a document while another sets its ACL through the API: the ACL change waits for the
    delete and then answers 404, as for any missing document (it used to end in a server error)."""
    from knowledge.models import Document

    document = a_document_open_to("vault")
    api = client_for(make_user("secops", "employees", "kb-admins", "vault"))
    url = f"/api/v1/documents/{document.pk}/acl"

    with transaction.atomic():
        Document.objects.select_for_update().get(pk=document.pk)  # the delete, under way
        put, result = in_thread(
            lambda: api.put(url, {"access_tier": "restricted", "groups": ["vault"]}, format="json")
        )
        until_another_session_waits_for_a_lock()
        Document.objects.filter(pk=document.pk).delete()
    put.join(WAIT_SECONDS)

    assert not put.is_alive()
    (response,) = result
    assert not isinstance(response, BaseException), response
    assert response.status_code == 404
    assert response.json()["error"]["code"] == "not_found"


def test_an_admin_form_saved_while_its_document_is_deleted_says_so() -> None:
    """The document is deleted (by another admin) while this admin's form is being saved: the form comes back
    saying so, instead of a server error from the locked re-read of a row that is gone."""
    from knowledge.models import Document

    make_user("curator", "employees", "kb-admins", "ops", superuser=True)
    document = a_document_open_to("ops")
    browser = Client()
    assert browser.login(username="curator", password="pw")
    change, form = document_change_form(browser, document)

    with transaction.atomic():
        Document.objects.select_for_update().get(pk=document.pk)  # the delete, under way
        save, result = in_thread(lambda: browser.post(change, {**form, "title": "Runbook (2025)"}))
        until_another_session_waits_for_a_lock()
        Document.objects.filter(pk=document.pk).delete()
    save.join(WAIT_SECONDS)

    assert not save.is_alive()
    (response,) = result
    assert not isinstance(response, BaseException), response
    assert response.status_code == 200
    assert "deleted by someone else" in response.content.decode()
    assert not Document.objects.filter(pk=document.pk).exists()
