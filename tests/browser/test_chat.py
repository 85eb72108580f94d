"""Headless Chromium drives the pages the way the demo users would, on the server `make run` starts (see
conftest.py), with the sample knowledge base and a real Celery worker answering: ask, read the sources, open a
citation, vote; find the conversation again; compliance search and export; an admin changing a document's
groups; errors that read like a product; and an accessibility check (axe-core) of the chat page."""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import pytest

from tests.browser.conftest import ask, axe_violations, by_css, login, one, present, wait

pytestmark = [pytest.mark.browser, pytest.mark.slow, pytest.mark.django_db]

QUESTION = "How do I upgrade IOS-XE on a core router so that it rolls back by itself if something breaks?"
FOLLOW_UP = "And how do I roll it back?"
UPGRADE_SOP = "public/sop-core-router-upgrade.html"


def _clear_throttle(username: str) -> None:
    from django.contrib.auth.models import User

    from athena import throttling

    throttling.user_counters_clear(User.objects.get(username=username))


def _committed(change: Callable[[], object]) -> None:
    """Make `change` (ORM writes) and commit it at once, as an operator's shell would, so that the server sees
    it: the test's own connection is inside the test's transaction, which is never committed, while a thread
    gets a connection of its own, in autocommit."""
    from concurrent.futures import ThreadPoolExecutor

    from django.db import connection

    def run() -> None:
        try:
            change()
        finally:
            connection.close()  # the thread's connection

    with ThreadPoolExecutor(max_workers=1) as pool:
        pool.submit(run).result(timeout=30)


def test_alice_asks_reads_the_sources_and_votes(
    browser, web_server, sample_site, celery_worker_process, shot
) -> None:  # type: ignore[no-untyped-def]
    from selenium.webdriver.common.keys import Keys

    from agents.models import Answer, CurationItem, Feedback
    from audit.models import AuditEvent

    driver, base = browser, web_server
    _clear_throttle("alice")
    login(driver, base, "alice")
    wait(driver, present("#question"))
    shot("01-empty")

    # Shift+Enter is a new line, Enter asks; the page shows it is working until the answer arrives
    box = one(driver, "#question")
    box.send_keys("How do I upgrade", Keys.SHIFT, Keys.ENTER, Keys.SHIFT)
    assert box.get_attribute("value") == "How do I upgrade\n"
    box.clear()
    box.send_keys(QUESTION)
    assert one(driver, "#char-counter").text == f"{len(QUESTION)} / 1000"
    box.send_keys(Keys.ENTER)
    wait(driver, present(".turn.pending"), timeout=10)
    assert one(driver, "#progress").is_displayed()
    assert one(driver, "#ask-submit").get_attribute("disabled")
    shot("02-working")
    wait(driver, present(".turn.answered"), timeout=120)
    turn = by_css(driver, ".turn.answered")[-1]
    assert not by_css(driver, ".turn.pending") and not one(driver, "#progress").is_displayed()

    # the answer: its lead sentence first, then the rest; procedures as numbered steps
    lead = turn.find_element("css selector", ".answer-lead").text
    assert lead.strip()
    answer_text = turn.find_element("css selector", ".answer-text").text
    assert answer_text.startswith(lead)
    steps = turn.find_elements("css selector", ".answer-text ol.steps > li")
    answer = Answer.objects.filter(user__username="alice").latest("id")
    recorded = AuditEvent.objects.get(pk=answer.audit_event_id).payload["answer"]
    numbered = [line for line in recorded.splitlines() if re.match(r"\s*\d+[.)]\s", line)]
    assert len(steps) == len(numbered), (recorded, answer_text)

    # sources: each document once, with title, section, last update and access tier
    sources = turn.find_elements("css selector", ".sources > li")
    assert sources
    titles = [s.find_element("css selector", ".source-title").text for s in sources]
    assert len(titles) == len(set(titles)), titles
    for source in sources:
        assert source.find_element("css selector", ".source-updated").text.startswith("updated ")
        assert source.find_element("css selector", ".tier").text in {"public", "internal", "restricted"}
    assert any("upgrade" in title.lower() for title in titles), titles
    # each source is named once, in the list, not again before every fragment of the answer
    assert not [title for title in titles if f"From {title}:" in answer_text], answer_text
    shot("03-answer")

    # [1] opens the passage with the quoted sentence highlighted
    turn.find_element("css selector", "a.cite[data-ref='1']").click()
    wait(driver, present("#panel-passage .passage-text mark"))
    panel = one(driver, "#panel-passage").text
    assert "Last updated" in panel and "Access tier" in panel
    assert one(driver, "#tab-passage").get_attribute("aria-selected") == "true"
    shot("04-passage")

    # the evidence and trace panels
    one(driver, "#tab-evidence").click()
    assert by_css(driver, "#panel-evidence table tbody tr")
    assert one(driver, "#panel-evidence").is_displayed() and not one(driver, "#panel-passage").is_displayed()
    shot("05-evidence")
    one(driver, "#tab-trace").click()
    steps_traced = [row.text for row in by_css(driver, "#panel-trace table tbody tr")]
    assert any(row.startswith("retrieve") for row in steps_traced), steps_traced
    shot("06-trace")

    # thumbs down with a comment reaches the curation queue
    turn.find_element("css selector", ".feedback-comment").send_keys("the rollback timer is missing")
    turn.find_element("css selector", ".vote.down").click()
    wait(driver, lambda d: "curators" in turn.find_element("css selector", ".feedback-status").text)
    shot("07-feedback")
    feedback = Feedback.objects.get(answer=answer, user__username="alice")
    assert (feedback.vote, feedback.comment) == (-1, "the rollback timer is missing")
    assert CurationItem.objects.get(answer=answer).reason == "downvoted"

    # the conversation is in the list; after a reload it opens again, and a follow-up uses it
    wait(
        driver,
        lambda d: any(QUESTION[:30] in a.text for a in by_css(d, "#conversation-list a.conversation-link")),
    )
    driver.refresh()
    wait(driver, present("#conversation-list a.conversation-link"))
    shot("08-after-reload")
    one(driver, "#conversation-list a.conversation-link").click()
    wait(driver, lambda d: QUESTION in "".join(q.text for q in by_css(d, ".turn .question-bubble")))
    assert by_css(driver, ".turn .vote.down.chosen"), "the vote is shown again"
    follow_up = ask(driver, FOLLOW_UP)
    shot("09-follow-up")
    latest = Answer.objects.filter(user__username="alice").latest("id")
    assert latest.conversation_id == answer.conversation_id
    assert latest.question == FOLLOW_UP
    cited = {c["document"] for c in (latest.response or {}).get("citations", [])}
    assert UPGRADE_SOP in cited or UPGRADE_SOP in follow_up.text or "roll" in follow_up.text.lower(), cited
    assert len(by_css(driver, "#conversation-list a.conversation-link")) == 1

    # accessibility of the page with an answer, its sources and an open panel
    violations = axe_violations(driver)
    assert not violations, json.dumps(violations, indent=1)

    # phone width: one column, nothing wider than the screen
    driver.set_window_size(390, 844)
    overflow = driver.execute_script("return document.documentElement.scrollWidth - window.innerWidth")
    shot("10-phone")
    assert overflow <= 0, f"the page is {overflow}px wider than a phone screen"
    driver.set_window_size(1400, 900)


def test_compliance_finds_the_question_and_exports_it(
    browser, web_server, sample_site, celery_worker_process, shot
) -> None:  # type: ignore[no-untyped-def]
    driver, base = browser, web_server
    question = "What is reload-delay mlag set to on the Arista leaf pairs?"
    _clear_throttle("alice")
    login(driver, base, "alice")
    wait(driver, present("#question"))
    ask(driver, question)

    login(driver, base, "carol", next_path="/compliance/")
    driver.get(f"{base}/compliance/")
    wait(driver, present("#audit-filters"))
    one(driver, "#f-text").send_keys("reload-delay mlag")
    one(driver, "#f-user").send_keys("alice")
    one(driver, "#audit-search").click()
    # the unfiltered page lists the question too: read the results once the search's own page has loaded
    wait(
        driver,
        lambda d: (
            "text=reload-delay" in d.current_url
            and d.execute_script("return document.readyState") == "complete"
        ),
    )
    wait(driver, lambda d: question in one(d, "#audit-results").text)
    assert "Hash chain intact" in one(driver, "#chain-status").text
    shot("01-search")
    violations = axe_violations(driver)
    assert not violations, json.dumps(violations, indent=1)

    one(driver, "#audit-results tbody tr td a").click()
    wait(driver, present("#event-meta"))
    page = one(driver, "main").text
    assert question in page and "public/config-arista-mlag.md" in page
    shot("02-event")
    driver.back()
    wait(driver, present("#export-csv"))

    # the export links, fetched by the page's own session as a click would
    fetch = (
        "const done = arguments[arguments.length - 1];"
        "fetch(arguments[0], {credentials: 'same-origin'})"
        ".then(r => r.text().then(t => done({status: r.status, type: r.headers.get('content-type'), body: t})));"
    )
    csv = driver.execute_async_script(fetch, one(driver, "#export-csv").get_attribute("href"))
    assert csv["status"] == 200 and csv["type"].startswith("text/csv"), csv["type"]
    header = csv["body"].splitlines()[0]
    assert "kind" in header and question in csv["body"]
    jsonl = driver.execute_async_script(fetch, one(driver, "#export-jsonl").get_attribute("href"))
    assert jsonl["status"] == 200
    events = [json.loads(line) for line in jsonl["body"].splitlines() if line.strip()]
    assert events and all(e["actor"] == "alice" for e in events)
    assert any(e["payload"].get("question") == question for e in events)


def test_admin_changes_a_documents_groups_and_it_is_audited(browser, web_server, sample_site, shot) -> None:  # type: ignore[no-untyped-def]
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support import expected_conditions as ec

    from audit.models import AuditEvent
    from knowledge.models import Document

    driver, base = browser, web_server
    source = "public/sop-change-freeze.md"
    document = Document.objects.get(source=source)
    login(driver, base, "admin", next_path="/admin/")
    driver.get(f"{base}/admin/knowledge/document/?q=sop-change-freeze")
    wait(driver, present("#result_list"))
    shot("01-list")
    one(driver, "#result_list tbody tr th a").click()
    # the groups box searches the groups by name (Django's autocomplete): typed, then the match picked
    wait(driver, present(".field-allowed_groups .select2-search__field"))
    one(driver, ".field-allowed_groups .select2-search__field").click()
    one(driver, ".field-allowed_groups .select2-search__field").send_keys("noc-adm")
    option = "//li[contains(@class, 'select2-results__option') and normalize-space() = 'noc-admins']"
    wait(driver, ec.element_to_be_clickable((By.XPATH, option))).click()
    wait(driver, present(".field-allowed_groups .select2-selection__choice"))
    shot("02-groups")
    one(driver, "input[name=_save]").click()
    wait(driver, present(".messagelist .success"))
    shot("03-saved")

    assert list(document.allowed_groups.values_list("name", flat=True)) == ["noc-admins"]
    event = AuditEvent.objects.filter(kind="acl_change", documents=[source]).latest("id")
    assert event.actor == "admin" and event.payload["groups"] == ["noc-admins"]
    # the document now reads for noc-admins alone (the admin is not in it): the user list, filtered by that group
    # typed into its box (no link per group), shows who reads it; the search is kept
    driver.get(f"{base}/admin/auth/user/?q=o")
    wait(driver, present("#filter-groups__name")).send_keys("noc-admins\n")
    wait(driver, lambda d: "noc-admins" in one(d, "#filter-groups__name").get_attribute("value"))
    assert "q=o" in driver.current_url
    shot("03b-users-filtered-by-group")
    assert [row.text for row in driver.find_elements(By.CSS_SELECTOR, "#result_list tbody th")] == ["noc-bob"]

    login(driver, base, "carol", next_path="/compliance/")
    driver.get(f"{base}/compliance/?kind=acl_change&document={source}")
    wait(driver, lambda d: source in one(d, "#audit-results").text)
    shot("04-in-audit-log")


def test_the_admin_names_no_document_its_admin_may_not_read(browser, web_server, sample_site, shot) -> None:  # type: ignore[no-untyped-def]
    """The kb-admin (not in noc-admins) opens a public document that a restricted one supersedes: the form shows
    "a document you cannot read" in place of it, the page names no restricted document, and saving an edit keeps
    the pointer."""
    from knowledge.models import Document

    driver, base = browser, web_server
    public = Document.objects.get(source="public/manual-noc-shift-handover.md")
    restricted = Document.objects.filter(source__startswith="restricted/").order_by("source").first()
    assert restricted is not None
    titles = list(Document.objects.filter(source__startswith="restricted/").values_list("title", flat=True))
    _committed(lambda: Document.objects.filter(pk=public.pk).update(superseded_by=restricted))
    try:
        login(driver, base, "admin", next_path="/admin/")
        driver.get(f"{base}/admin/knowledge/document/{public.pk}/change/")
        wait(driver, present("input[name=_save]"))
        page = one(driver, "body").text
        assert "a document you cannot read" in page, page
        assert not by_css(driver, "#id_superseded_by")
        page_source = driver.page_source
        assert "restricted/" not in page_source and not [t for t in titles if t in page_source]
        field = one(driver, ".field-superseded_by_withheld")
        driver.execute_script("arguments[0].scrollIntoView({block: 'center'});", field)
        assert "a document you cannot read" in field.text
        shot("01-superseded-by-withheld")
        one(driver, "input[name=_save]").click()
        wait(driver, present(".messagelist .success"))
        shot("02-saved")
        public.refresh_from_db()
        assert public.superseded_by_id == restricted.pk
    finally:
        _committed(lambda: Document.objects.filter(pk=public.pk).update(superseded_by=None))


def test_an_admin_deletes_a_document_and_reads_a_curation_item(
    browser, web_server, sample_site, shot
) -> None:  # type: ignore[no-untyped-def]
    """On the server people use: the delete confirmation names the document and counts its chunks (Django refused
    the delete, a superuser's too, and would have listed every chunk's text), the delete is audited under the
    admin's name, and a curation item's page shows the question and the thumbs-down comment to resolve it by."""
    from django.contrib.auth import get_user_model

    from agents.models import Answer, CurationItem, Feedback
    from audit.models import AuditEvent
    from knowledge.models import Document
    from tests.factories import DocumentFactory

    driver, base = browser, web_server
    source = "public/retired-walkthrough.md"
    body = "The retired walkthrough restarts the lab resolver before the drill."
    _committed(lambda: DocumentFactory(source=source, title="Retired walkthrough", body=body))
    document = Document.objects.get(source=source)

    def downvoted() -> None:
        alice = get_user_model().objects.get(username="alice")
        answer = Answer.objects.create(user=alice, question="How do I drain the lab edge?", abstained=True)
        Feedback.objects.create(answer=answer, user=alice, vote=-1, comment="nothing about the lab edge")
        CurationItem.objects.create(answer=answer, reason="downvoted")

    _committed(downvoted)
    item = CurationItem.objects.get(answer__question="How do I drain the lab edge?")
    try:
        login(driver, base, "admin", next_path="/admin/")
        driver.get(f"{base}/admin/knowledge/document/{document.pk}/delete/")
        summary = wait(driver, present("#content")).text
        shot("01-delete-confirmation")
        assert "Document: Retired walkthrough" in summary and "Chunks: 1" in summary, summary
        assert "Cannot delete" not in summary and "restarts the lab resolver" not in summary
        one(driver, "#content form input[type=submit]").click()
        wait(driver, present(".messagelist .success"))
        shot("02-deleted")
        assert not Document.objects.filter(pk=document.pk).exists()
        event = AuditEvent.objects.filter(kind="documents_removed", documents=[source]).get()
        assert (event.actor, event.payload["how"]) == ("admin", "deleted in the admin")

        driver.get(f"{base}/admin/agents/curationitem/{item.pk}/change/")
        page = wait(driver, present("#content")).text
        shot("03-curation-item")
        assert (
            "How do I drain the lab edge?" in page
            and "not helpful (alice): nothing about the lab edge" in page
        )
        assert "CurationItem object" not in page
    finally:
        _committed(lambda: CurationItem.objects.filter(pk=item.pk).delete())
        _committed(lambda: Answer.objects.filter(question="How do I drain the lab edge?").delete())


def test_errors_read_like_a_product(browser, web_server, sample_site, celery_worker_process, shot) -> None:  # type: ignore[no-untyped-def]
    from django.conf import settings
    from django.contrib.auth.models import User
    from selenium.webdriver.common.keys import Keys

    from athena import throttling

    driver, base = browser, web_server
    alice = User.objects.get(username="alice")
    _clear_throttle("alice")
    login(driver, base, "alice")
    wait(driver, present("#question"))

    # personal data: refused, and the page says why; the question stays in the box to be corrected
    pii_question = "My SSN is 536-22-1234, can I reset my VPN token?"
    box = one(driver, "#question")
    box.send_keys(pii_question)
    box.send_keys(Keys.ENTER)
    wait(driver, lambda d: one(d, "#ask-error").is_displayed())
    refusal = one(driver, "#ask-error").text
    assert "Social Security number" in refusal and "Personal data must not be sent" in refusal, refusal
    assert one(driver, "#question").get_attribute("value") == pii_question
    assert not by_css(driver, ".turn.pending")
    shot("01-pii")
    box.clear()

    # the hourly limit used up: 429, and the page says when the user can ask again
    while throttling.ask_throttle_hit(alice) > 0:
        pass
    box = one(driver, "#question")
    box.send_keys("How do I check NTP drift?")
    one(driver, "#ask-submit").click()
    wait(driver, lambda d: one(d, "#ask-error").is_displayed())
    message = one(driver, "#ask-error").text
    assert f"{settings.ATHENA_QUESTIONS_PER_HOUR} questions" in message and "ask again at" in message, message
    assert one(driver, "#question").get_attribute("value") == "How do I check NTP drift?", (
        "the question is kept"
    )
    shot("02-throttled")
    _clear_throttle("alice")


def test_alice_uploads_a_docx_asks_about_it_and_bob_cannot_see_it(
    browser, web_server, sample_site, celery_worker_process, shot, tmp_path, request
) -> None:  # type: ignore[no-untyped-def]
    from zoneinfo import ZoneInfo

    import docx

    from knowledge.models import Document

    driver, base = browser, web_server
    title = "Zebrafrost badge printer"
    question = "How do I reset the Zebrafrost badge printer?"
    document = docx.Document()
    document.add_heading(title, level=1)
    document.add_heading("Resetting the printer", level=2)
    document.add_paragraph(
        "To reset the Zebrafrost badge printer, hold the feed button for 12 seconds until the status light "
        "blinks amber, then release it and wait for the calibration label."
    )
    document.add_paragraph("The printer keeps its badge templates across a reset.")
    path = tmp_path / "zebrafrost-printer.docx"
    document.save(str(path))

    for user in ("alice", "noc-bob"):
        _clear_throttle(user)
    # alice works in Kolkata (UTC+05:30): the expiry she is told is her own date and time, named as such
    driver.execute_cdp_cmd("Emulation.setTimezoneOverride", {"timezoneId": "Asia/Kolkata"})
    request.addfinalizer(lambda: driver.execute_cdp_cmd("Emulation.setTimezoneOverride", {"timezoneId": ""}))
    login(driver, base, "alice")
    wait(driver, present("#upload-file"))
    one(driver, "#upload-file").send_keys(str(path))
    one(driver, "#upload-submit").click()
    # her laptop's clock is stepped ten minutes forward while the file is indexed (NTP, a resumed lid): the
    # page's five-minute patience is a duration, and it still waits for the file and says when it is ready
    wait(driver, lambda d: "Indexing" in one(d, "#upload-status").text, timeout=30)
    driver.execute_script(
        "var wallClock = Date.now; Date.now = function () { return wallClock() + 600000; };"
    )
    wait(driver, lambda d: "is ready" in one(d, "#upload-status").text, timeout=240)
    status = one(driver, "#upload-status").text
    assert "is ready: 1 passage, private to you, expires" in status, status  # one passage, not "1 passages"
    expires = Document.objects.get(title=title).expires_at.astimezone(ZoneInfo("Asia/Kolkata"))
    # (Chromium's ICU names the zone by its older alias)
    assert re.search(rf"expires {expires:%Y-%m-%d %H:%M} \(Asia/(Kolkata|Calcutta)\)", status), (
        status,
        expires,
    )
    shot("01-uploaded")
    turn = ask(driver, question)
    titles = [t.text for t in turn.find_elements("css selector", ".sources .source-title")]
    assert title in titles, (titles, turn.text)
    assert turn.find_element("css selector", ".sources .tier").text == "confidential"
    # the passage's heading is in the source list, not glued before the quoted sentence
    assert "Resetting the printer To reset" not in turn.text, turn.text
    assert "To reset the Zebrafrost badge printer" in turn.find_element("css selector", ".answer-lead").text
    shot("02-answer-from-upload")

    login(driver, base, "noc-bob")
    wait(driver, present("#question"))
    other = ask(driver, question)
    assert "Zebrafrost badge printer" not in other.text.replace(question, "")
    assert title not in [t.text for t in other.find_elements("css selector", ".sources .source-title")]
    shot("03-bob-cannot-see-it")


def test_bob_reopens_an_answer_from_a_group_he_has_left_and_it_is_withheld(
    browser, web_server, sample_site, celery_worker_process, shot
) -> None:  # type: ignore[no-untyped-def]
    """noc-bob is answered from a restricted document of noc-admins; once he has left the group, the
    conversation opened again from his list shows his question and a "Withheld" label in place of the answer,
    and nothing of the restricted documents: no text of the earlier answer, no title, no source list."""
    from django.contrib.auth.models import Group, User

    from knowledge.models import Document

    driver, base = browser, web_server
    question = "What is the break-glass procedure for core router credentials?"
    bob = User.objects.get(username="noc-bob")
    noc_admins = Group.objects.get(name="noc-admins")
    assert bob.groups.filter(pk=noc_admins.pk).exists()
    _clear_throttle("noc-bob")
    login(driver, base, "noc-bob")
    wait(driver, present("#question"))
    turn = ask(driver, question)
    sources = turn.find_elements("css selector", ".sources > li")
    restricted = [s for s in sources if s.get_attribute("data-document").startswith("restricted/")]
    assert restricted, turn.text
    assert restricted[0].find_element("css selector", ".tier").text == "restricted"
    earlier = [
        line.strip()
        for line in turn.find_element("css selector", ".answer-text").text.splitlines()
        if len(line.strip()) >= 25
    ]
    assert earlier, turn.text
    shot("01-answer-from-restricted")

    try:
        _committed(lambda: bob.groups.remove(noc_admins))
        # as bob would: the page again, and the conversation from his list
        driver.refresh()
        wait(
            driver,
            lambda d: any(question in a.text for a in by_css(d, "#conversation-list a.conversation-link")),
        )
        assert not by_css(driver, "#thread .turn")
        shot("02-list-after-leaving-the-group")
        link = next(a for a in by_css(driver, "#conversation-list a.conversation-link") if question in a.text)
        link.click()
        wait(driver, present("#thread .turn.withheld"))
        turns = by_css(driver, "#thread .turn")
        assert len(turns) == 1, [t.text for t in turns]
        turn = turns[0]
        label = turn.find_element("css selector", ".answer .refusal-label")
        assert label.is_displayed() and label.get_attribute("textContent") == "Withheld"
        assert turn.find_element("css selector", ".question-bubble").text == question
        assert "withheld" in turn.find_element("css selector", ".answer-text").text.lower(), turn.text
        assert not turn.find_elements("css selector", ".sources, .sources-heading, a.cite"), turn.text
        # nothing left to inspect or vote on
        assert not turn.find_elements("css selector", ".feedback, .show-evidence, .show-trace"), turn.text
        assert not by_css(driver, "#panel-evidence table tbody tr")
        # nothing of the restricted documents anywhere in the page, shown or hidden
        titles = list(
            Document.objects.filter(source__startswith="restricted/").values_list("title", flat=True)
        )
        assert titles
        for page in (one(driver, "body").text, driver.execute_script("return document.body.textContent")):
            assert "restricted/" not in page
            assert not [title for title in titles if title in page], page
            assert not [line for line in earlier if line in page], page
        shot("03-withheld")
    finally:
        _committed(lambda: bob.groups.add(noc_admins))


def test_no_worker_answering_reads_as_busy(browser, web_server_without_worker, sample_site, shot) -> None:  # type: ignore[no-untyped-def]
    driver, base = browser, web_server_without_worker
    login(driver, base, "alice")
    wait(driver, present("#question"))
    box = one(driver, "#question")
    box.send_keys("How do I check NTP drift?")
    one(driver, "#ask-submit").click()
    wait(driver, present(".turn.pending"), timeout=10)
    wait(driver, lambda d: one(d, "#ask-error").is_displayed(), timeout=60)
    message = one(driver, "#ask-error").text
    assert message.startswith("Athena is busy") and "try again in a minute" in message, message
    assert not by_css(driver, ".turn.pending")
    assert one(driver, "#question").get_attribute("value") == "How do I check NTP drift?"
    shot("01-busy")


def _alice_asks_without_waiting(driver: Any, base: str, question: str) -> None:
    """alice signs in and asks `question` with the Ask button; the answer is not waited for."""
    _clear_throttle("alice")
    login(driver, base, "alice")
    wait(driver, present("#question"))
    one(driver, "#question").send_keys(question)
    one(driver, "#ask-submit").click()


@contextmanager
def _live_worker(broker: Any, *, others: dict[str, float] | None = None) -> Iterator[None]:
    """A live realtime worker with one process, as WorkerHeartbeat writes it, refreshed every half second; with
    `others` (member prefix -> expected end), the tasks of other queues its process runs, as OtherTaskLease
    writes them. Nobody consumes this broker: a question asked waits until the answer timeout."""
    import threading
    import time

    from agents import realtime

    stop = threading.Event()

    def beat() -> None:
        while not stop.is_set():
            now = time.time()
            broker.zadd(realtime.workers_key(), {"celery@busy|1": now})
            for member, ends in (others or {}).items():
                broker.zadd(realtime.others_key(), {f"{member}|{ends}": now})
            stop.wait(0.5)

    beating = threading.Thread(target=beat, daemon=True)
    beating.start()
    try:
        yield
    finally:
        stop.set()
        beating.join(5)
        broker.delete(realtime.others_key())


def test_a_waiting_question_shows_its_place_in_the_queue(
    browser, web_server_queued, sample_site, shot
) -> None:  # type: ignore[no-untyped-def]
    """Three questions of other users wait ahead on the one busy answering process: while alice's question
    waits, the page shows her place and expected wait from GET /api/v1/ask/queue."""
    import time

    from agents import realtime

    driver, (base, broker) = browser, web_server_queued
    broker.zadd(realtime.pending_key(), {f"other-{i}": time.time() - 1 for i in range(3)})
    broker.set(realtime.service_key(), "1000")
    with _live_worker(broker):
        _alice_asks_without_waiting(driver, base, "How do I check NTP drift?")
        # three ahead, one process: half an answer, then two more at 1 s each
        wait(driver, lambda d: "3 questions ahead of yours" in one(d, "#progress-text").text, timeout=8)
        assert one(driver, "#progress-text").text == "3 questions ahead of yours, about 3 s"
        shot("01-queued")
        # nobody consumes this broker: after the answer timeout the page says the service is busy
        wait(driver, lambda d: one(d, "#ask-error").is_displayed(), timeout=30)
        assert one(driver, "#ask-error").text.startswith("Athena is busy")
        assert not one(driver, "#progress").is_displayed()


def test_a_question_behind_documents_being_indexed_says_so(
    browser, web_server_queued, sample_site, shot
) -> None:  # type: ignore[no-untyped-def]
    """No question waits, but the one answering process is embedding a batch of documents that ends in about 20
    s: alice's question is admitted (refusing it would not end the batch sooner) and the page says why it waits
    and for how long, not nothing."""
    import time

    from agents import realtime

    driver, (base, broker) = browser, web_server_queued
    broker.set(realtime.service_key(), "1000")
    # the process runs an embed task, as OtherTaskLease writes it
    with _live_worker(broker, others={"celery@busy|101|embed": time.time() + 20}):
        _alice_asks_without_waiting(driver, base, "How do I check NTP drift?")
        wait(driver, lambda d: "being indexed" in one(d, "#progress-text").text, timeout=8)
        text = one(driver, "#progress-text").text
        assert text.startswith("Documents are being indexed; yours starts in about "), text
        assert 10 <= int(text.rsplit(" ", 2)[1]) <= 20, text
        shot("01-behind-indexing")


def test_a_table_in_a_cited_passage_reads_as_a_table(
    browser, web_server, sample_site, celery_worker_process, shot
) -> None:  # type: ignore[no-untyped-def]
    """A parsed table reaches its passage as "cell | cell" lines under a "--- | ---" header rule: the passage
    tab shows it as a table with its header, the quoted row marked, and no rule line."""
    from agents.models import Answer

    driver, base = browser, web_server
    _clear_throttle("alice")
    login(driver, base, "alice")
    wait(driver, present("#question"))
    turn = ask(driver, "What timeout does the nw_http_healthz monitor use?")
    citations = Answer.objects.filter(user__username="alice").latest("id").response["citations"]
    shown_tables = 0
    for citation in citations:
        turn.find_element("css selector", f"a.cite[data-ref='{citation['ref']}']").click()
        wait(driver, lambda d, c=citation: f"[{c['ref']}] " in one(d, "#panel-passage").text)
        panel = one(driver, "#panel-passage")
        assert "--- |" not in panel.text, panel.text
        tables = panel.find_elements("css selector", ".passage-table")
        if not tables:
            continue
        shown_tables += 1
        header = [th.text for th in tables[0].find_elements("css selector", "thead th")]
        assert header == ["Setting", "Value", "Reason"], header
        assert "16 seconds" in [td.text for td in tables[0].find_elements("css selector", "tbody td")]
        if " | " in citation["quote"]:  # the quoted sentence is a row: that row is marked
            marked = tables[0].find_elements("css selector", "tbody tr.quote")
            assert len(marked) == 1 and marked[0].text.split()[0] in citation["quote"], citation["quote"]
        shot(f"table-passage-{citation['ref']}")
    assert shown_tables, [c["document"] for c in citations]


def test_a_configuration_snippet_in_an_answer_reads_as_code(
    browser, web_server, sample_site, celery_worker_process, shot
) -> None:  # type: ignore[no-untyped-def]
    """A configuration block quoted in an answer keeps its lines (agents/layout.py): the page shows it as a
    code block, one setting per line, with its citation link after the block and not inside the code."""
    from agents.models import Answer

    driver, base = browser, web_server
    _clear_throttle("alice")
    login(driver, base, "alice")
    wait(driver, present("#question"))
    turn = ask(
        driver,
        "What virtual_router_id does the keepalived instance VI_WEB use on lb-01/lb-02?",
    )
    answer = Answer.objects.filter(user__username="alice").latest("id").response["answer"]
    assert re.search(r"\n {4,}virtual_router_id 51\n", answer), answer  # a line of its own, indented
    blocks = turn.find_elements("css selector", ".answer-text pre.answer-code")
    assert blocks, turn.text
    code = blocks[0].text.splitlines()
    assert "virtual_router_id 51" in [line.strip() for line in code], code
    for block in blocks:  # each sentence's citation is a link after its block, never text inside the code
        assert not re.search(r"\[\d+\]", block.text), block.text
    cites = turn.find_elements("css selector", ".answer-text .code-cites a.cite")
    assert cites, turn.text
    cites[0].click()
    wait(driver, lambda d: "virtual_router_id 51" in one(d, "#panel-passage").text)
    shot("answer-code-block")


def _alice_uploads_and_asks(driver, base: str, path, question: str):  # type: ignore[no-untyped-def]
    """alice uploads `path` on the chat page, waits until it is indexed and asks `question` in a new thread.
    Returns the answer's turn on the page and the answer text as stored."""
    from agents.models import Answer

    _clear_throttle("alice")
    login(driver, base, "alice")
    wait(driver, present("#upload-file"))
    one(driver, "#upload-file").send_keys(str(path))
    one(driver, "#upload-submit").click()
    wait(driver, lambda d: "is ready" in one(d, "#upload-status").text, timeout=240)
    turn = ask(driver, question)
    return turn, Answer.objects.filter(user__username="alice").latest("id").response["answer"]


def test_the_commands_of_one_listing_read_as_one_code_block(
    browser, web_server, sample_site, celery_worker_process, shot, tmp_path
) -> None:  # type: ignore[no-untyped-def]
    """Commands that stand on lines of their own under a lead-in, each a sentence of its own to the sentence
    splitter, read as one code block under the lead-in (agents/layout.py `command_line`), cited once after
    the block; the root prompt the splitter drops stays out of the code."""
    path = tmp_path / "quillgate-spool.txt"
    path.write_text(
        "Quillgate relay spool directory\n\n"
        "The Quillgate relay keeps its queue in a spool directory and does not start without it. "
        "If the spool directory is missing after a reinstall, create it with these commands (as root):\n"
        "# mkdir /run/quillgate\n"
        "# chown quillgate /run/quillgate\n\n"
        "The relay fills the directory again on its next start.\n"
    )
    turn, answer = _alice_uploads_and_asks(
        browser, web_server, path, "How do I create the missing Quillgate spool directory?"
    )
    assert "\n\n    mkdir /run/quillgate\n    chown quillgate /run/quillgate [" in answer, answer
    blocks = turn.find_elements("css selector", ".answer-text pre.answer-code")
    assert [block.text.splitlines() for block in blocks] == [
        ["mkdir /run/quillgate", "chown quillgate /run/quillgate"]
    ], turn.text
    assert turn.find_elements("css selector", ".answer-text .code-cites a.cite"), turn.text
    shot("one-listing-one-block")


def test_a_configuration_in_a_markdown_code_block_reads_as_code_with_its_placeholders(
    browser, web_server, sample_site, celery_worker_process, shot, tmp_path
) -> None:  # type: ignore[no-untyped-def]
    """A router configuration has no sigil, brace or '=' that tells it from prose: only its Markdown code block
    says it is code (Chunk.code_lines). It reads as a block under its heading; the runbook's placeholders in
    angle brackets ("QG-RELAY-<nn>") are shown, not dropped as HTML tags."""
    path = tmp_path / "quillgate-edge.md"
    path.write_text(
        "# Quillgate edge routers\n\n"
        "Edge routers are named QG-EDGE-<nn>, where nn is the site number.\n\n"
        "## Quillgate relay uplink configuration\n\n"
        "    interface Quillgate0/1\n"
        "     description QG-RELAY-<nn>\n"
        "     relay-hold 45\n\n"
        "Apply it in a change window.\n"
    )
    turn, answer = _alice_uploads_and_asks(
        browser, web_server, path, "How is the Quillgate relay uplink configured on the edge routers?"
    )
    # (the heading the block is under, and the prose after it, stay prose around it)
    assert (
        "Quillgate relay uplink configuration\n\n    interface Quillgate0/1\n     description QG-RELAY-<nn>\n"
        "     relay-hold 45\nApply it" in answer
    ), answer
    blocks = turn.find_elements("css selector", ".answer-text pre.answer-code")
    assert [[line.strip() for line in block.text.splitlines()] for block in blocks] == [
        ["interface Quillgate0/1", "description QG-RELAY-<nn>", "relay-hold 45"]
    ], turn.text
    shot("markdown-configuration-block")
    # the cited passage shows the same lines as code (the API's code_lines), the prose around them as text
    turn.find_element("css selector", "a.cite[data-ref='1']").click()
    wait(browser, present("#panel-passage .passage-text pre.passage-code"))
    panel = one(browser, "#panel-passage .passage-text")
    codes = panel.find_elements("css selector", "pre.passage-code")
    assert [[line.strip() for line in code.text.splitlines()] for code in codes] == [
        ["interface Quillgate0/1", "description QG-RELAY-<nn>", "relay-hold 45"]
    ], panel.text
    assert "Apply it in a change window." in panel.text and "Apply it" not in codes[0].text
    shot("markdown-configuration-passage")


def test_a_right_to_left_answer_reads_right_to_left(
    browser, web_server, sample_site, celery_worker_process, shot, tmp_path
) -> None:  # type: ignore[no-untyped-def]
    """An Arabic document asked about in Arabic: the question, the answer's paragraphs and the source's title each
    take their direction from their own text (dir="auto"), so the sentence reads right to left with its full
    stop and citation at its end; English text on the same page stays left to right."""
    path = tmp_path / "arabic-server.md"
    path.write_text(
        "# \u0625\u0639\u062f\u0627\u062f \u062e\u0627\u062f\u0645 \u0627\u0644\u0642\u0627\u0641\u0644\u0629\n\n"
        "\u064a\u062a\u0645 \u0625\u0639\u062f\u0627\u062f \u062e\u0627\u062f\u0645 \u0627\u0644\u0642\u0627\u0641"
        "\u0644\u0629 qg-caravan-01 \u0645\u0646 \u0644\u0648\u062d\u0629 \u0627\u0644\u062a\u062d\u0643\u0645.\n",
        encoding="utf-8",
    )
    turn, answer = _alice_uploads_and_asks(
        browser,
        web_server,
        path,
        "\u0643\u064a\u0641 \u064a\u062a\u0645 \u0625\u0639\u062f\u0627\u062f \u062e\u0627\u062f\u0645 "
        "\u0627\u0644\u0642\u0627\u0641\u0644\u0629 qg-caravan-01\u061f",
    )
    assert "qg-caravan-01" in answer, answer
    direction = "return getComputedStyle(arguments[0]).direction"
    assert browser.execute_script(direction, turn.find_element("css selector", ".question-bubble")) == "rtl"
    lead = turn.find_element("css selector", ".answer-text p")
    assert browser.execute_script(direction, lead) == "rtl", lead.text
    assert browser.execute_script(direction, turn.find_element("css selector", ".source-title")) == "rtl"
    assert browser.execute_script(direction, turn.find_element("css selector", ".sources-heading")) == "ltr"
    shot("answer-right-to-left")
