"""Real saved pages (tests/fixtures/pages, see its SOURCES.md): every article page of Chinese
news portals, WeChat and the rest is kept as an article with its body, list pages are not; then
the same pages served on 127.0.0.1 go through a real crawl and are stored and matched."""

from __future__ import annotations

import pytest

from bench.extraction import FIXTURES, load, measure, page_bytes
from tests.sites import Page, TestSite, html_page, link_list
from tests.test_crawl_novel import crawl
from tracker.matching.library import MasterLibrary
from tracker.model import MasterDocument

PAGES = load()
ARTICLES = [e for e in PAGES if e["kind"] == "article"]
LISTS = [e for e in PAGES if e["kind"] == "list"]


@pytest.mark.parametrize("entry", ARTICLES, ids=[e["name"] for e in ARTICLES])
def test_article_pages_are_kept_with_their_body(entry):
    result = measure(entry)
    assert result.decision == "article", (result.extractor, result.decision)
    if result.recall is not None:
        assert result.recall >= 0.8
    assert result.with_found >= result.with_total - 1  # at most one sentence cut at the edges


def test_bodies_are_found_whole_and_lists_are_skipped():
    results = [measure(entry) for entry in PAGES]
    recalls = [r.recall for r in results if r.recall is not None]
    assert sum(recalls) / len(recalls) >= 0.95
    assert sum(r.with_found for r in results) >= 0.95 * sum(r.with_total for r in results)
    skipped = {r.name for r in results if r.kind == "list" and r.decision != "article"}
    # The Tieba board shows previews of its threads' first posts: prose enough to be kept.
    assert skipped >= {"list-163-1", "list-163-2", "list-netease-forum-1"}


@pytest.mark.integration
def test_real_pages_through_a_crawl(runtime, settings, tmp_path):
    site = TestSite()
    paths = {e["name"]: f"/saved/{e['name']}.html" for e in PAGES}
    for entry in PAGES:
        site.pages[paths[entry["name"]]] = Page(page_bytes(entry), "text/html")
    site.pages["/"] = Page(
        html_page("saved pages", link_list((p, n) for n, p in paths.items())).encode()
    )
    masters = [  # each article's expected body is a master: the page must be found copying it
        MasterDocument(
            e["name"], "fixtures", e["name"], (FIXTURES / e["expected"]).read_text("utf-8")
        )
        for e in ARTICLES
        if e.get("expected")
    ]
    MasterLibrary.from_runtime(runtime).ingest(masters)
    with site:
        # 73 real pages, some large: on a loaded machine a download can take longer than the
        # fast crawls' 3 s timeout.
        crawl(
            "novel",
            settings,
            tmp_path,
            {"start_url": site.url, "max_depth": "1"},
            extra={"DOWNLOAD_TIMEOUT": 60},
        )
        served = set(site.fetched()) & set(site.pages)  # the pages (no stylesheets, no 404s)
    base = site.url.rstrip("/")
    stored = {doc["_id"][len(base) :]: doc for doc in runtime.db["pages"].find()}
    for entry in ARTICLES:
        assert paths[entry["name"]] in stored, entry["name"]
    for master in masters:
        assert master.doc_id in stored[paths[master.doc_id]]["matched_doc_ids"], master.doc_id
    for name in ("list-163-1", "list-163-2", "list-netease-forum-1"):
        assert paths[name] not in stored
    [run] = list(runtime.db["crawl_runs"].find())
    assert run["stats"]["tracker__skipped__list_page"] >= 3
    # Every URL fetched ended one way (tracker.crawling.outcomes), each counted once however
    # often it was fetched (a render candidate, again by the browser); besides the pages, a
    # page's own links may 404 (its stylesheets are not pages).
    urls = run["urls"]
    assert len(served) == len(PAGES) + 1
    assert urls["fetched"] == len(served) + urls["skipped_reasons"].get("http_404", 0)
    assert urls["unaccounted"] == 0, urls
    assert urls["stored"] == len(stored)
    assert urls["stored"] + urls["unchanged"] + urls["unread"] + urls["skipped"] == urls["fetched"]
    assert urls["unread"] == 0, urls["unread_reasons"]
