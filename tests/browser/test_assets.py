"""Every page a person opens is styled and scripted by files the server itself serves: each stylesheet, script,
image and font the login, chat, compliance, admin and API-docs pages reference or load answers 200 from the
gunicorn that `make run` starts, under a hashed (manifest) name, and nothing comes from another host."""

from __future__ import annotations

import re
import urllib.error
import urllib.request
from typing import Any
from urllib.parse import urljoin, urlsplit

import pytest

from tests.browser.conftest import axe_violations, login, wait

pytestmark = [pytest.mark.browser, pytest.mark.slow, pytest.mark.django_db]

# the URLs a page references in its markup, and those the browser actually fetched (CSS url(), lazy scripts)
ASSET_URLS_JS = """
const refs = [];
document.querySelectorAll('link[href]').forEach(l => {
  if (/stylesheet|icon|preload|modulepreload/.test(l.rel)) refs.push(l.href);
});
document.querySelectorAll('script[src], img[src], source[src]').forEach(e => refs.push(e.src));
const loaded = performance.getEntriesByType('resource')
  .filter(e => e.initiatorType !== 'xmlhttprequest' && e.initiatorType !== 'fetch')
  .map(e => ({url: e.name, status: e.responseStatus || 0}));
return {refs: refs, loaded: loaded, blocked: window.__blockedByPolicy || []};
"""

HASHED = re.compile(r"/static/.+\.[0-9a-f]{12}\.(css|js|png|svg|ico|woff2?)$")


def _assets_of_page(driver: Any, base: str) -> list[str]:
    found = driver.execute_script(ASSET_URLS_JS)
    urls = {urljoin(driver.current_url, url) for url in found["refs"]}
    failed_loads = [entry for entry in found["loaded"] if entry["status"] and entry["status"] != 200]
    assert not failed_loads, f"{driver.current_url}: the browser got errors for {failed_loads}"
    urls |= {entry["url"] for entry in found["loaded"]}
    # a request the page's Content-Security-Policy stopped never left the browser (Redoc's vendor logo)
    urls -= set(found["blocked"])
    origin = urlsplit(base).netloc
    foreign = sorted(
        url for url in urls if urlsplit(url).scheme in {"http", "https"} and urlsplit(url).netloc != origin
    )
    assert not foreign, f"{driver.current_url} loads from other hosts: {foreign}"
    return sorted(url for url in urls if not url.startswith("data:"))


def _status(url: str) -> int:
    try:
        with urllib.request.urlopen(url, timeout=30) as response:
            return int(response.status)
    except urllib.error.HTTPError as exc:
        return int(exc.code)


def _check_page(driver: Any, base: str, *, ready_css: str, expect: tuple[str, ...]) -> list[str]:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support import expected_conditions as ec

    wait(driver, ec.presence_of_element_located((By.CSS_SELECTOR, ready_css)), timeout=60)
    assets = _assets_of_page(driver, base)
    for name in expect:
        assert any(name in url for url in assets), f"{driver.current_url} does not load {name}: {assets}"
    broken = {url: code for url in assets if (code := _status(url)) != 200}
    assert not broken, f"{driver.current_url}: assets that do not answer 200: {broken}"
    unhashed = [url for url in assets if "/static/" in url and not HASHED.search(url.split("?")[0])]
    assert not unhashed, f"static files not served under their manifest (hashed) names: {unhashed}"
    return assets


def test_every_page_asset_is_served_by_the_server(browser, web_server, sample_site, shot) -> None:  # type: ignore[no-untyped-def]
    from selenium.webdriver.common.by import By

    driver, base = browser, web_server
    # note what a page's Content-Security-Policy refused to fetch, from the first line of every document on
    driver.execute_cdp_cmd(
        "Page.addScriptToEvaluateOnNewDocument",
        {
            "source": "window.__blockedByPolicy = [];"
            "document.addEventListener('securitypolicyviolation',"
            " e => window.__blockedByPolicy.push(e.blockedURI));"
        },
    )

    driver.get(f"{base}/accounts/login/")
    _check_page(driver, base, ready_css="#login-submit", expect=("athena.",))
    # the stylesheet applies (an unstyled page would keep the browser's default transparent header)
    header = driver.find_element(By.CSS_SELECTOR, ".topbar")
    assert header.value_of_css_property("display") == "flex"
    shot("01-login")
    violations = axe_violations(driver)
    assert not violations, violations

    login(driver, base, "alice")
    _check_page(driver, base, ready_css="#conversation-list li:not(.loading)", expect=("athena.", "chat."))
    # the script runs: it replaced the "loading" placeholder of the conversation list
    assert "loading" not in driver.find_element(By.ID, "conversation-list").text
    shot("02-chat")
    driver.get(f"{base}/accounts/password_change/")
    _check_page(driver, base, ready_css="#id_new_password2", expect=("athena.",))
    assert driver.find_element(By.CSS_SELECTOR, ".topbar").value_of_css_property("display") == "flex"
    shot("02b-password-change")
    violations = axe_violations(driver)
    assert not violations, violations
    driver.get(f"{base}/accounts/password_reset/")
    _check_page(driver, base, ready_css="#id_email", expect=("athena.",))
    shot("02c-password-reset")
    violations = axe_violations(driver)
    assert not violations, violations

    login(driver, base, "carol", next_path="/compliance/")
    driver.get(f"{base}/compliance/")
    _check_page(driver, base, ready_css="#audit-results", expect=("athena.",))
    shot("03-compliance")

    login(driver, base, "admin", next_path="/admin/")
    driver.get(f"{base}/admin/")
    _check_page(driver, base, ready_css="#content", expect=("admin/css/base.",))
    shot("04-admin")
    driver.get(f"{base}/admin/knowledge/document/")
    _check_page(
        driver, base, ready_css="#result_list", expect=("admin/css/changelists.", "admin/js/actions.")
    )
    driver.find_element(By.CSS_SELECTOR, "#result_list tbody tr th a").click()
    # the groups box: Django's autocomplete (select2), drawn by its script
    _check_page(
        driver,
        base,
        ready_css=".field-allowed_groups .select2-container",
        expect=("admin/js/autocomplete.", "admin/js/vendor/select2/select2.full."),
    )
    shot("05-admin-document")

    driver.get(f"{base}/api/v1/docs")
    # Swagger UI rendered the schema: its scripts ran and the schema endpoint answered
    _check_page(
        driver, base, ready_css=".swagger-ui .info .title", expect=("swagger-ui-bundle.", "swagger-ui.")
    )
    assert "Athena KB API" in driver.find_element(By.CSS_SELECTOR, ".swagger-ui .info .title").text
    shot("06-api-docs")

    driver.get(f"{base}/api/v1/redoc")
    _check_page(driver, base, ready_css="[role=search], .api-content h1", expect=("redoc.standalone.",))
    assert "Athena KB API" in driver.find_element(By.CSS_SELECTOR, ".api-content h1").text
    shot("07-redoc")


def test_no_page_or_answer_is_kept_by_a_cache_and_static_files_are(web_server) -> None:  # type: ignore[no-untyped-def]
    """Pages and API answers (answers, passages, titles, audit events) are `no-store`, so that no proxy or
    browser cache keeps them or shows them again after the reader lost access; the hashed static files keep
    their long-lived caching."""
    base = web_server

    def headers(url: str) -> tuple[str, str]:
        try:
            with urllib.request.urlopen(url, timeout=30) as response:
                return response.headers.get("Cache-Control", ""), response.read().decode(errors="replace")
        except urllib.error.HTTPError as exc:
            return exc.headers.get("Cache-Control", ""), ""

    page_caching, html = headers(f"{base}/accounts/login/")
    stylesheet = re.search(r'href="(/static/[^"]+\.css)"', html)
    assert stylesheet, html[:500]
    for url in (f"{base}/accounts/login/", f"{base}/api/v1/health", f"{base}/api/v1/documents"):
        caching, _ = headers(url)
        assert "no-store" in caching and "private" in caching, (url, caching)
    static_caching, _ = headers(urljoin(base, stylesheet.group(1)))
    assert "no-store" not in static_caching and "max-age" in static_caching, static_caching
