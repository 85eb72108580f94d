"""The pages as an engineer uses them at night: on a phone, by keyboard, with a screen reader, with long and odd
answers, and after something went wrong (the session ended, the password mistyped, the answer slow). Driven
on the server `make run` starts (conftest.py), with a real Celery worker where an answer is needed."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest

from tests.browser.conftest import PASSWORDS, ask, axe_violations, by_css, login, one, present, wait

pytestmark = [pytest.mark.browser, pytest.mark.slow, pytest.mark.django_db]

PHONE = (375, 812)

# an uploaded runbook with what answers on a phone must survive: a URL and a command line with no space to
# break at for a whole screen's width, a title of one long hyphenated word, and a table of seven columns
LONG_URL = (
    "https://intranet.example.internal/wiki/display/PLATFORM/Quasar+Relay+Key+Renewal+Procedure"
    "+For+The+Northern+Availability+Zone?revision=17&anchor=renew-relay-signing-key-and-reload"
)
ODD_RUNBOOK = f"""# Renewing the signing key of the quasar-relay-northern-availability-zone-primary-and-standby-nodes

## Renewing the relay key

To renew the quasar relay signing key, run this on every relay node:

    /usr/local/quasar/sbin/quasar-relayctl --renew-signing-key --key-file=/srv/quasar/keys/relay-northern-zone-2027.pem --chain-file=/srv/quasar/keys/relay-chain-internal-root-and-issuing-ca.pem --reload-when-done

The quasar relay key renewal is described in full at {LONG_URL}

## Relay nodes

| Relay node name | Address | Relay port | Admin port | Key fingerprint | Key expiry | Owner |
| --- | --- | --- | --- | --- | --- | --- |
| quasar-relay-north-primary-01.zone-n.example.internal | 10.77.3.11 | 7443 | 7444 | 5C:0E:91:AB:44:12:7F:C3:08:6D | 2027-02-28 | relay-platform-team |
| quasar-relay-north-standby-02.zone-n.example.internal | 10.77.3.12 | 7443 | 7444 | 5C:0E:91:AB:44:12:7F:C3:08:6E | 2027-02-28 | relay-platform-team |
"""


def _clear_throttle(username: str) -> None:
    from django.contrib.auth.models import User

    from athena import throttling

    throttling.user_counters_clear(User.objects.get(username=username))


def _focused(driver: Any) -> Any:
    return driver.execute_script("return document.activeElement")


# every box of the page whose content is wider than the box and cut off or scrolled sideways, except the
# boxes made to scroll (a code block, a table's own scroll box)
SIDEWAYS = """
const out = [];
for (const node of document.querySelectorAll(arguments[0])) {
  if (node.scrollWidth > node.clientWidth + 1) { out.push(node.className + ': ' + node.scrollWidth + ' > ' + node.clientWidth); }
}
return out;
"""


def test_long_urls_commands_and_tables_fit_a_phone_and_a_citation_takes_the_reader_to_its_passage(
    browser, web_server, sample_site, celery_worker_process, shot, tmp_path
) -> None:  # type: ignore[no-untyped-def]
    driver, base = browser, web_server
    path = tmp_path / "quasar-relay-key.md"
    path.write_text(ODD_RUNBOOK)
    _clear_throttle("alice")
    login(driver, base, "alice")
    driver.set_window_size(*PHONE)
    wait(driver, present("#upload-file"))
    one(driver, "#upload-file").send_keys(str(path))
    one(driver, "#upload-submit").click()
    wait(driver, lambda d: "is ready" in one(d, "#upload-status").text, timeout=240)

    turn = ask(driver, "How do I renew the quasar relay signing key?")
    assert LONG_URL in turn.text.replace("\n", "")
    shot("01-long-url-and-command")
    # the URL breaks inside the answer's box: neither the box nor the thread scrolls sideways
    assert not driver.execute_script(SIDEWAYS, ".answer, .answer-text, .thread, .sources"), turn.text
    assert driver.execute_script("return document.documentElement.scrollWidth") <= driver.execute_script(
        "return window.innerWidth"
    )

    # on a phone the passage panel is below the thread: the citation takes the focus (and the page) there,
    # and "Back to the answer" returns to the citation
    cite = turn.find_element("css selector", "a.cite")
    cite.click()
    wait(driver, present("#panel-passage .passage-title"))
    wait(driver, lambda d: _focused(d) == one(d, "#panel-passage .passage-title"), timeout=10)
    top = driver.execute_script("return arguments[0].getBoundingClientRect().top", _focused(driver))
    assert 0 <= top < driver.execute_script("return window.innerHeight"), "the passage is not in view"
    shot("02-passage-in-view")
    assert not driver.execute_script(SIDEWAYS, "#panel-passage, .passage-text")
    one(driver, "#panel-passage .back-to-answer").click()
    assert _focused(driver) == cite

    # a table of seven columns scrolls in a box of its own, which the keyboard can reach; the panel does not
    turn = ask(driver, "What admin port do the northern quasar relay nodes use?")
    for link in turn.find_elements("css selector", "a.cite"):
        link.click()
        wait(driver, present("#panel-passage .passage-title"))
        if by_css(driver, "#panel-passage .passage-table"):
            break
    scroller = one(driver, "#panel-passage .passage-table-scroll")
    assert scroller.get_attribute("tabindex") == "0" and scroller.get_attribute("aria-label")
    assert driver.execute_script("return arguments[0].scrollWidth > arguments[0].clientWidth", scroller)
    assert not driver.execute_script(SIDEWAYS, "#panel-passage, .passage-text")
    shot("03-wide-table")
    violations = axe_violations(driver)
    assert not violations, json.dumps(violations, indent=1)


def test_a_mistyped_password_keeps_the_user_name_and_focuses_the_password(
    browser, web_server, sample_site, shot
) -> None:  # type: ignore[no-untyped-def]
    from selenium.webdriver.common.keys import Keys

    driver, base = browser, web_server
    driver.delete_all_cookies()
    driver.get(f"{base}/accounts/login/")
    one(driver, "#id_username").send_keys("alice")
    one(driver, "#id_password").send_keys("not-her-password", Keys.ENTER)
    wait(driver, present("p.error[role=alert]"))
    assert one(driver, "#id_username").get_attribute("value") == "alice"
    assert _focused(driver) == one(driver, "#id_password")
    assert one(driver, "#id_password").get_attribute("aria-describedby") == "login-error"
    shot("01-failed")
    violations = axe_violations(driver)
    assert not violations, json.dumps(violations, indent=1)
    one(driver, "#id_password").send_keys(PASSWORDS["alice"], Keys.ENTER)
    wait(driver, present("#question"))


def test_a_question_asked_after_the_session_ended_is_kept_through_the_sign_in(
    browser, web_server, sample_site, shot, tmp_path
) -> None:  # type: ignore[no-untyped-def]
    from selenium.webdriver.common.keys import Keys

    driver, base = browser, web_server
    question = "How do I check NTP drift on the core routers?"
    login(driver, base, "alice")
    wait(driver, present("#conversation-list li:not(.loading)"))
    chat = driver.current_window_handle
    driver.switch_to.new_window("tab")
    driver.get(f"{base}/")
    wait(driver, present("form.inline button"))
    one(driver, "form.inline button").click()  # signed out in another tab
    wait(driver, lambda d: "/accounts/logout/" in d.current_url)
    driver.close()
    driver.switch_to.window(chat)

    # an upload says so in the reader's words, not the API's
    upload = tmp_path / "notes.md"
    upload.write_text("# Notes\n\nThe spare optics are in cabinet 4.\n")
    one(driver, "#upload-file").send_keys(str(upload))
    one(driver, "#upload-submit").click()
    wait(driver, lambda d: "signed out" in one(d, "#upload-status").text, timeout=30)
    assert "credentials" not in one(driver, "#upload-status").text

    one(driver, "#question").send_keys(question, Keys.ENTER)
    wait(driver, lambda d: one(d, "#ask-error").is_displayed(), timeout=30)
    message = one(driver, "#ask-error").text
    assert "signed out" in message and "question is kept" in message, message
    assert one(driver, "#question").get_attribute("value") == question
    shot("01-signed-out")
    one(driver, "#ask-error-link").click()
    wait(driver, present("#id_username"))
    one(driver, "#id_username").send_keys("alice")
    one(driver, "#id_password").send_keys(PASSWORDS["alice"], Keys.ENTER)
    wait(driver, present("#question"))
    wait(driver, lambda d: one(d, "#question").get_attribute("value") == question, timeout=10)
    shot("02-signed-in-again")
    # given back once: the tab keeps no copy of it
    assert driver.execute_script("return window.sessionStorage.length") == 0


# the text a screen reader reads from #progress (a live region) after each change: its text without the
# parts hidden from assistive technology
WATCH_PROGRESS = """
window.__announced = [];
const region = document.getElementById('progress');
function spoken(node) {
  if (node.nodeType === Node.TEXT_NODE) { return node.textContent; }
  if (node.nodeType !== Node.ELEMENT_NODE || node.getAttribute('aria-hidden') === 'true') { return ''; }
  return Array.from(node.childNodes).map(spoken).join('');
}
new MutationObserver(() => {
  const text = spoken(region).trim();
  if (!region.hidden && text && text !== window.__announced[window.__announced.length - 1]) { window.__announced.push(text); }
}).observe(region, {subtree: true, childList: true, characterData: true, attributes: true});
"""


def test_a_slow_answer_is_announced_by_its_steps_not_every_second(
    browser, web_server_without_worker, sample_site, shot
) -> None:  # type: ignore[no-untyped-def]
    driver, base = browser, web_server_without_worker
    login(driver, base, "alice")
    wait(driver, present("#question"))
    driver.execute_script(WATCH_PROGRESS)
    one(driver, "#question").send_keys("How do I check NTP drift?")
    one(driver, "#ask-submit").click()
    wait(driver, lambda d: one(d, "#progress").is_displayed(), timeout=10)
    # the seconds are shown beside the step
    wait(driver, lambda d: re.search(r"\b2 s$", one(d, "#progress").text), timeout=10)
    shot("01-working")
    assert one(driver, "#ask-submit").get_attribute("disabled"), "a second ask is blocked while one is out"
    wait(driver, lambda d: one(d, "#ask-error").is_displayed(), timeout=60)
    announced = driver.execute_script("return window.__announced")
    # no worker answers within the 3 s: the steps are read out, the seconds are not
    assert announced and len(announced) <= 3, announced
    assert not any(text.endswith(" s") for text in announced), announced


def test_the_compliance_pages_fit_a_phone_and_pass_axe(browser, web_server, sample_site, shot) -> None:  # type: ignore[no-untyped-def]
    driver, base = browser, web_server
    login(driver, base, "carol", next_path="/compliance/")
    driver.set_window_size(*PHONE)
    driver.get(f"{base}/compliance/")
    wait(driver, present("#audit-filters"))
    # each filter box inside the form's card (a date field's own width pushed the right column out of it)
    spill = driver.execute_script(
        "const card = document.getElementById('audit-filters').getBoundingClientRect();"
        "return [...document.querySelectorAll('#audit-filters input')]"
        "  .filter(i => i.getBoundingClientRect().right > card.right).map(i => i.id);"
    )
    shot("01-search-phone")
    assert not spill, spill
    # the link to each event is a finger's size (WCAG 2.5.8), not the width of its digits
    sizes = driver.execute_script(
        "return [...document.querySelectorAll('#audit-results tbody a')].map(a => {"
        "  const r = a.getBoundingClientRect(); return [r.width, r.height]; });"
    )
    assert sizes and all(w >= 24 and h >= 24 for w, h in sizes), sizes
    one(driver, "#audit-results tbody tr td a").click()
    wait(driver, present("#event-meta"))
    shot("02-event-phone")
    assert driver.execute_script("return document.documentElement.scrollWidth - window.innerWidth") <= 0
    violations = axe_violations(driver)
    assert not violations, json.dumps(violations, indent=1)


def test_the_conversation_list_keeps_the_keyboard_focus_and_the_page_keeps_its_title(
    browser, web_server, sample_site, celery_worker_process, shot
) -> None:  # type: ignore[no-untyped-def]
    from selenium.webdriver.common.keys import Keys

    driver, base = browser, web_server
    _clear_throttle("alice")
    login(driver, base, "alice")
    wait(driver, present("#conversation-list li:not(.loading)"))
    before = len(by_css(driver, "#conversation-list a.conversation-link"))  # of the module's earlier tests
    ask(driver, "How do I check NTP drift?")
    one(driver, "#new-conversation").send_keys(Keys.ENTER)
    assert _focused(driver) == one(driver, "#question")
    ask(driver, "How do I reset a BGP session without dropping traffic?")
    # the welcome text and its title gave way to the answers; the page keeps one h1 for a screen reader
    assert [h.get_attribute("textContent") for h in by_css(driver, "h1")] == ["Ask Athena"]
    wait(driver, lambda d: len(by_css(d, "#conversation-list a.conversation-link")) == before + 2)

    # Enter on a conversation opens it; the list is drawn anew, and the focus stays on that conversation
    older = by_css(driver, "#conversation-list a.conversation-link")[1]
    title = older.text
    # the live region's setting whenever turns are drawn into the thread
    driver.execute_script(
        "window.__drawn = []; const thread = document.getElementById('thread');"
        "new MutationObserver(records => { if (records.some(r => r.addedNodes.length))"
        "  window.__drawn.push(thread.getAttribute('aria-live')); }).observe(thread, {childList: true});"
    )
    older.send_keys(Keys.ENTER)
    wait(driver, lambda d: "NTP drift" in one(d, "#thread").text and "BGP" not in one(d, "#thread").text)
    wait(driver, lambda d: "current" in (_focused(d).get_attribute("class") or ""), timeout=10)
    assert _focused(driver).text == title
    # the conversation was drawn with the live region off (a screen reader does not read every turn out); a
    # status line says what was opened, and the region is live again for the next answer
    assert driver.execute_script("return window.__drawn") == ["off"]
    assert (
        one(driver, "#thread-status").get_attribute("textContent") == "Opened the conversation: 1 question."
    )
    wait(driver, lambda d: one(d, "#thread").get_attribute("aria-live") == "polite", timeout=5)
    shot("01-opened-by-keyboard")

    # deleting the other one by keyboard leaves the focus on the conversation now in its place
    driver.execute_script("window.confirm = () => true;")
    other = [
        li
        for li in by_css(driver, "#conversation-list li")
        if not li.find_elements("css selector", ".current")
    ]
    delete = other[0].find_element("css selector", "button.delete")
    size = driver.execute_script(
        "const r = arguments[0].getBoundingClientRect(); return [r.width, r.height]", delete
    )
    assert size[0] >= 24 and size[1] >= 24, size
    delete.send_keys(Keys.ENTER)
    wait(driver, lambda d: len(by_css(d, "#conversation-list a.conversation-link")) == before + 1)
    wait(driver, lambda d: _focused(d) == one(d, "#conversation-list a.conversation-link"), timeout=10)


def test_a_sign_in_form_left_open_in_another_tab_says_it_expired_on_a_phone(
    browser, web_server, sample_site, shot
) -> None:  # type: ignore[no-untyped-def]
    from selenium.webdriver.common.keys import Keys

    driver, base = browser, web_server
    driver.delete_all_cookies()
    driver.set_window_size(*PHONE)
    driver.get(f"{base}/accounts/login/")
    first = driver.current_window_handle
    driver.switch_to.new_window("tab")
    driver.get(f"{base}/accounts/login/")
    stale = driver.current_window_handle
    driver.switch_to.window(first)
    login(driver, base, "alice")  # signs in (and so changes the form token) in the first tab
    one(driver, "form.inline button").click()
    wait(driver, lambda d: "/accounts/logout/" in d.current_url)
    driver.switch_to.window(stale)
    one(driver, "#id_username").send_keys("alice")
    one(driver, "#id_password").send_keys(PASSWORDS["alice"], Keys.ENTER)
    wait(driver, lambda d: d.find_elements("css selector", "h1"))
    shot("01-expired-form")
    assert one(driver, "h1").text == "The form had expired"
    assert driver.execute_script("return document.documentElement.scrollWidth - window.innerWidth") <= 0
    violations = axe_violations(driver)
    assert not violations, json.dumps(violations, indent=1)
    one(driver, "main a[href='/accounts/login/']").click()
    one(driver, "#id_username").send_keys("alice")
    one(driver, "#id_password").send_keys(PASSWORDS["alice"], Keys.ENTER)
    wait(driver, present("#question"))


@pytest.mark.django_db(transaction=True)  # the turns written here are committed, for the server to read
def test_a_long_conversation_opens_at_its_newest_turns_and_offers_the_earlier_ones(
    browser, web_server, sample_site, django_db_blocker, shot
) -> None:  # type: ignore[no-untyped-def]
    """A conversation of more turns than the history's page opens at its newest 200 and says how many there
    are; a button above them draws the earlier ones, a page per press, until the first question is on the page
    (the history API sends a page at a time, and the page had no way to the turns before it)."""
    from django.contrib.auth.models import User

    from agents.models import Answer, Conversation

    with django_db_blocker.unblock():
        alice = User.objects.get(username="alice")
        conversation = Conversation.objects.create(user=alice, title="A long night of questions")
        for number in range(1, 206):
            Answer.objects.create(
                conversation=conversation,
                user=alice,
                question=f"Question number {number}?",
                abstained=False,
                template="factual_lookup",
                response={"answer": f"Answer number {number}.", "abstained": False, "citations": []},
            )
    driver, base = browser, web_server
    login(driver, base, "alice")
    link = wait(
        driver, present(f'#conversation-list li[data-conversation="{conversation.pk}"] a.conversation-link')
    )
    link.click()
    wait(driver, lambda d: len(by_css(d, "#thread .turn")) == 200)
    turns = by_css(driver, "#thread .question-bubble")
    assert (turns[0].text, turns[-1].text) == ("Question number 6?", "Question number 205?")
    status = one(driver, "#thread-status").get_attribute("textContent")
    assert status == "Opened the conversation: the newest 200 of 205 questions."
    earlier = one(driver, "#earlier-turns")
    assert earlier.is_displayed() and earlier.text == "Show 5 earlier questions"
    shot("01-long-conversation")

    earlier.click()
    wait(driver, lambda d: len(by_css(d, "#thread .turn")) == 205)
    turns = by_css(driver, "#thread .question-bubble")
    assert [turn.text for turn in turns[:2]] == ["Question number 1?", "Question number 2?"]
    assert turns[-1].text == "Question number 205?"
    assert not one(driver, "#earlier-turns").is_displayed()
    assert one(driver, "#thread-status").get_attribute("textContent") == "Showing 5 earlier questions."
    shot("02-earlier-shown")
