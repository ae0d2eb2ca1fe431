"""The real console in headless Chromium (Debian's ``chromium`` through playwright): sign in
through the form, open the dashboard and the evidence page of a page titled
``<img src=x onerror=alert(1)>``, and check that no script of the page's ever runs.

Screenshots go to the test's temporary folder only: the documentation's are made from the demo's
realistic data by ``docs/screenshots.py``.
"""

from __future__ import annotations

import os
import socket
import threading
import time
from pathlib import Path
from urllib.parse import quote

import pytest

from tests.console_data import (
    HOSTILE_TITLE,
    HOSTILE_URL,
    OPERATOR,
    UNREAD_REASON,
    drop,
    module_settings,
    seed,
)
from tracker.crawling.rendering import LAUNCH_ARGS

pytestmark = pytest.mark.integration

CHROMIUM = Path(os.environ.get("TRACKER_CHROMIUM", "/usr/bin/chromium"))
ARGS = list(LAUNCH_ARGS)  # the crawl's own flags for a sandboxed container run as root


def _playwright():
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        return None
    return sync_playwright


@pytest.fixture(scope="module")
def served(server_settings):
    """The console on uvicorn in a thread, on a free port of 127.0.0.1."""
    import uvicorn

    from tracker.console import create_app

    data = seed(module_settings(server_settings, "browser", console_cache_s=60))
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    config = uvicorn.Config(
        create_app(data.settings, data.runtime), host="127.0.0.1", port=port, log_level="warning"
    )
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started and time.monotonic() < deadline:
        time.sleep(0.05)
    assert server.started, "uvicorn did not start"
    yield f"http://127.0.0.1:{port}"
    server.should_exit = True
    thread.join(10)
    drop(data)


@pytest.mark.skipif(not CHROMIUM.exists(), reason=f"no Chromium at {CHROMIUM} (apt chromium)")
@pytest.mark.skipif(_playwright() is None, reason="playwright is not installed (.[test])")
def test_console_in_chromium_runs_no_hostile_script(served, tmp_path):
    dialogs: list[str] = []
    errors: list[str] = []
    with _playwright()() as playwright:
        browser = playwright.chromium.launch(executable_path=str(CHROMIUM), args=ARGS)
        try:
            page = browser.new_page(viewport={"width": 1280, "height": 900})
            page.on("dialog", lambda dialog: (dialogs.append(dialog.message), dialog.dismiss()))
            page.on("pageerror", lambda error: errors.append(str(error)))

            page.goto(f"{served}/")
            assert page.locator("form[action='/login']").is_visible()  # 401: the login form
            page.fill("input[name=name]", OPERATOR[0])
            page.fill("input[name=password]", OPERATOR[1])
            page.click("button[type=submit]")
            page.wait_for_url(f"{served}/")
            assert page.locator("h1").inner_text().startswith("Infringements on")
            assert page.locator(".summary strong").first.inner_text() == "3"
            assert page.locator("svg.chart").count() == 3
            assert HOSTILE_TITLE in page.locator("body").inner_text()  # shown as text
            page.screenshot(path=str(tmp_path / "console-dashboard.png"), full_page=True)

            page.goto(f"{served}/page?url={quote(HOSTILE_URL, safe='')}")
            assert page.locator("h2.page-title").inner_text() == HOSTILE_TITLE
            assert page.locator("img").count() == 0  # the title made no element
            assert page.locator(".pair").count() >= 2
            assert page.locator(".pair mark").count() > 0
            page.screenshot(path=str(tmp_path / "console-evidence.png"), full_page=False)
            page.locator(".pair").first.click()  # the console's own script still runs
            assert "selected" in (page.locator(".pair").first.get_attribute("class") or "")

            page.goto(f"{served}/pages")
            assert page.locator("table tbody tr").count() == 3

            page.goto(f"{served}/unread")  # a hostile URL and reason among the unread pages
            assert page.locator("table.unread-pages tbody tr").count() == 3
            assert page.locator("img").count() == 0
            assert UNREAD_REASON in page.locator("table.unread-pages").inner_text()

            page.goto(f"{served}/docs")  # the OpenAPI page, drawn by the bundled Swagger UI
            page.wait_for_selector(".opblock", timeout=30_000)
            assert page.locator(".opblock").count() == 10  # the API's 10 routes
        finally:
            browser.close()
    assert dialogs == [], f"a hostile script ran: {dialogs}"
    assert errors == []
    for name in ("console-dashboard.png", "console-evidence.png"):
        assert (tmp_path / name).stat().st_size > 10_000
