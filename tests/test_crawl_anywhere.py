"""The crawl commands the pages show work from any folder once the package is installed
(issue 38): ``tracker crawl`` always, ``scrapy crawl`` with ``SCRAPY_SETTINGS_MODULE`` named,
both started in a folder with no ``scrapy.cfg`` in it or above it."""

from __future__ import annotations

import subprocess
import sys

import pytest

from tests.sites import Page, TestSite, book_masters, chapter_p, encoded, html_page, link_list
from tracker.matching.library import MasterLibrary

pytestmark = pytest.mark.integration

FAST = ["-s", "AUTOTHROTTLE_ENABLED=0", "-s", "RETRY_TIMES=1", "-s", "DOWNLOAD_TIMEOUT=5"]


def small_site(masters) -> TestSite:
    """A catalogue and a page copying each master, one innocent page."""
    site = TestSite()
    links = [(f"/book/{i}.html", m.title) for i, m in enumerate(masters, 1)]
    site.pages["/"] = Page(encoded(html_page("书城", link_list(links)), "utf-8"))
    site.pages["/robots.txt"] = Page(b"User-agent: *\nAllow: /\n", "text/plain")
    for i, master in enumerate(masters, 1):
        body = chapter_p(master.title, master.text)
        site.pages[f"/book/{i}.html"] = Page(encoded(html_page(master.title, body), "utf-8"))
    return site


@pytest.mark.parametrize("command", ["tracker crawl", "scrapy crawl"])
def test_a_crawl_started_outside_the_checkout_stores_and_matches(
    command, runtime, server_env, tmp_path
):
    masters = book_masters(2, work="到处书", seed=3800)
    MasterLibrary.from_runtime(runtime).ingest(masters)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    assert not any((folder / "scrapy.cfg").exists() for folder in (elsewhere, *elsewhere.parents))
    env = dict(server_env)
    if command == "tracker crawl":
        program = [sys.executable, "-m", "tracker.cli", "crawl"]
    else:
        program = [sys.executable, "-m", "scrapy", "crawl"]
        env["SCRAPY_SETTINGS_MODULE"] = "tracker.crawling.settings"
    with small_site(masters) as site:
        done = subprocess.run(
            [*program, "novel", "-a", f"start_url={site.url}", *FAST],
            cwd=elsewhere,
            env=env,
            capture_output=True,
            text=True,
            timeout=300,
            check=False,
        )
    assert done.returncode == 0, done.stderr[-3000:]
    matched = {
        doc["url"]: doc["doc_id"] for doc in runtime.db["matches"].find({}, {"url": 1, "doc_id": 1})
    }
    assert sorted(matched.values()) == [m.doc_id for m in masters], done.stderr[-3000:]


def test_scrapy_without_the_settings_module_says_it_is_outside_a_project(server_env, tmp_path):
    """What the crawling page explains: away from the checkout, Scrapy needs the module named."""
    done = subprocess.run(
        [sys.executable, "-m", "scrapy", "crawl", "novel"],
        cwd=tmp_path,
        env=server_env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode != 0
    assert "not available from this location" in done.stdout + done.stderr
