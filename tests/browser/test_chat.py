"""Headless Chromium drives the real pages: sign in, ask, open a citation, vote, and a compliance user finds the
question in the audit log. Screenshots go to test-artifacts/ in the repository root."""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from django.contrib.auth.models import Group, User

pytestmark = [pytest.mark.browser, pytest.mark.slow]

ROOT = Path(__file__).resolve().parents[2]
ARTIFACTS = ROOT / "test-artifacts"
QUESTION = "How do I check NTP clock drift?"
CHROME_FLAGS = (
    "--headless=new",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-dev-shm-usage",
    "--disable-background-networking",
    "--disable-component-update",
    "--no-first-run",
    "--disable-sync",
    "--window-size=1400,900",
)


def _binary(*names: str) -> str | None:
    for name in names:
        found = shutil.which(name)
        if found:
            return found
    return None


@pytest.fixture()
def browser() -> Iterator[object]:
    from selenium import webdriver

    chrome, driver_path = _binary("chromium", "chromium-browser"), _binary("chromedriver")
    # make test installs them (scripts/browser-deps.sh): missing browsers are a broken setup, not a skip
    assert chrome and driver_path, "chromium / chromium-driver not installed (run scripts/browser-deps.sh)"
    profile = tempfile.mkdtemp(prefix="athena-chrome-")
    options = webdriver.ChromeOptions()
    options.binary_location = chrome
    for flag in CHROME_FLAGS:
        options.add_argument(flag)
    options.add_argument(f"--user-data-dir={profile}")
    from selenium.webdriver.chrome.service import Service

    driver = webdriver.Chrome(service=Service(executable_path=driver_path), options=options)
    driver.set_page_load_timeout(60)
    try:
        yield driver
    finally:
        driver.quit()
        shutil.rmtree(profile, ignore_errors=True)


@pytest.fixture()
def knowledge_base(tmp_path: Path, transactional_db) -> Path:  # type: ignore[no-untyped-def]
    from knowledge.services import IngestOptions, files_ingest

    root = tmp_path / "kb"
    root.mkdir()
    (root / "ntp.md").write_text(
        "# NTP drift runbook\n\n## Checking drift\n\nRun `chronyc tracking` to see the system clock offset. "
        "An offset above 100 ms means the clock is drifting.\n\n## Fixing drift\n\nRestart chronyd with "
        "`systemctl restart chronyd` and verify the sources with `chronyc sources -v`.\n"
    )
    (root / "vpn.md").write_text(
        "# VPN tunnel down\n\n## Diagnosis\n\nCheck the IKE phase 1 status with `show vpn ike-sa`. A missing SA "
        "usually means a pre-shared key mismatch.\n"
    )
    summary = files_ingest(
        root=str(root), files=[(p.name, str(p)) for p in sorted(root.glob("*.md"))], options=IngestOptions()
    )
    assert summary.failed == 0, summary.errors
    return root


def _wait(driver, condition, timeout: float = 90):  # type: ignore[no-untyped-def]
    from selenium.webdriver.support.ui import WebDriverWait

    return WebDriverWait(driver, timeout).until(condition)


def _login(driver, base: str, username: str) -> None:  # type: ignore[no-untyped-def]
    from selenium.webdriver.common.by import By

    driver.get(f"{base}/accounts/login/")
    driver.find_element(By.ID, "id_username").send_keys(username)
    driver.find_element(By.ID, "id_password").send_keys("secret-pw")
    driver.find_element(By.ID, "login-submit").click()


def test_ask_cite_vote_and_audit(browser, live_server, knowledge_base) -> None:  # type: ignore[no-untyped-def]
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support import expected_conditions as ec

    ARTIFACTS.mkdir(exist_ok=True)
    alice = User.objects.create_user("alice", password="secret-pw")
    alice.groups.add(Group.objects.get_or_create(name="employees")[0])
    auditor = User.objects.create_user("auditor", password="secret-pw")
    auditor.groups.add(Group.objects.get_or_create(name="compliance")[0])
    from athena import throttling

    throttling.user_counters_clear(alice)
    driver, base = browser, live_server.url

    # 1. sign in and see the empty chat page
    _login(driver, base, "alice")
    _wait(driver, ec.presence_of_element_located((By.ID, "question")))
    driver.save_screenshot(str(ARTIFACTS / "01-chat-empty.png"))

    # 2. ask; the counter follows the text; the answer arrives with citations
    box = driver.find_element(By.ID, "question")
    box.send_keys(QUESTION)
    assert driver.find_element(By.ID, "char-counter").text == f"{len(QUESTION)} / 1000"
    driver.find_element(By.ID, "ask-submit").click()
    _wait(driver, ec.presence_of_element_located((By.CSS_SELECTOR, ".turn .answer-text")))
    answer = driver.find_element(By.CSS_SELECTOR, ".turn .answer-text").text
    assert answer.strip()
    driver.save_screenshot(str(ARTIFACTS / "02-answer.png"))

    # 3. open a citation: the passage with its highlighted quote and the document's metadata
    citations = driver.find_elements(By.CSS_SELECTOR, ".turn a.cite") or driver.find_elements(
        By.CSS_SELECTOR, ".turn a.cite-title"
    )
    assert citations, f"the answer has no citation: {answer!r}"
    citations[0].click()
    _wait(driver, ec.presence_of_element_located((By.CSS_SELECTOR, "#panel-passage .passage-text")))
    panel = driver.find_element(By.ID, "panel-passage").text
    assert "ntp.md" in panel and "Last updated" in panel
    assert driver.find_elements(By.CSS_SELECTOR, "#panel-passage mark")
    driver.save_screenshot(str(ARTIFACTS / "03-citation.png"))

    # evidence and trace panels
    driver.find_element(By.ID, "tab-trace").click()
    assert driver.find_elements(By.CSS_SELECTOR, "#panel-trace table tbody tr")
    driver.find_element(By.ID, "tab-evidence").click()
    driver.save_screenshot(str(ARTIFACTS / "04-evidence.png"))

    # 4. thumbs down with a comment
    driver.find_element(By.CSS_SELECTOR, ".turn .feedback-comment").send_keys("missing the chrony.conf path")
    driver.find_element(By.CSS_SELECTOR, ".turn .vote.down").click()
    _wait(driver, ec.text_to_be_present_in_element((By.CSS_SELECTOR, ".turn .feedback-status"), "Thanks"))
    driver.save_screenshot(str(ARTIFACTS / "05-feedback.png"))
    from agents.models import Feedback

    assert Feedback.objects.get(user=alice).comment == "missing the chrony.conf path"

    # 5. a compliance user finds the question in the audit log and opens the event
    driver.find_element(By.CSS_SELECTOR, "form[action='/accounts/logout/'] button").click()
    _wait(driver, lambda d: "logout" in d.current_url or "login" in d.current_url or d.title)
    driver.delete_all_cookies()
    _login(driver, base, "auditor")
    _wait(driver, ec.presence_of_element_located((By.ID, "question")))
    driver.get(f"{base}/compliance/?user=alice&kind=question")
    _wait(driver, ec.presence_of_element_located((By.ID, "audit-results")))
    assert "Hash chain intact" in driver.find_element(By.ID, "chain-status").text
    table = driver.find_element(By.ID, "audit-results").text
    assert QUESTION in table
    driver.save_screenshot(str(ARTIFACTS / "06-compliance-search.png"))
    driver.find_element(By.CSS_SELECTOR, "#audit-results tbody tr td a").click()
    _wait(driver, ec.presence_of_element_located((By.ID, "event-meta")))
    page = driver.find_element(By.TAG_NAME, "main").text
    assert QUESTION in page and "ntp.md" in page
    driver.save_screenshot(str(ARTIFACTS / "07-compliance-event.png"))
