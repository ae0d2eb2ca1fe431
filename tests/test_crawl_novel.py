"""`scrapy crawl novel` against a generated pirate site in three layouts and five encodings, with
continuations, crawler traps and every kind of bad page: exactly the planned pages are fetched,
extracted and matched, every fault is counted, and nothing stored is lost. Then pause/resume
through JOBDIR."""

from __future__ import annotations

import os
from dataclasses import replace

import pytest

from tests.disguise import traditional
from tests.sites import AD, Page, TestSite, html_page, link_list, novel_site
from tests.texts import prose
from tracker.crawling.crawl import run_crawl
from tracker.matching.library import MasterLibrary
from tracker.stores.pages import PageRecord, PageStore

pytestmark = pytest.mark.integration

# Fast and deterministic: no AutoThrottle delays, one retry with a short backoff, 3 s timeout
# (a shorter one can expire on a busy machine).
FAST = {
    "AUTOTHROTTLE_ENABLED": 0,
    "RETRY_TIMES": 1,
    "RETRY_BACKOFF_BASE": 0.1,
    "DOWNLOAD_TIMEOUT": 3,
    "TRACKER_TRAP_MAX_DATE_PAGES": 3,
}


def crawl_settings(settings):
    """The crawl process finds the embedded servers through the data directory."""
    return replace(
        settings, mongo_url=os.environ.get("MONGO_URL"), redis_url=os.environ.get("REDIS_URL")
    )


def crawl(spider, settings, tmp_path, arguments, extra=None, name="crawl"):
    log = tmp_path / f"{name}.log"
    code = run_crawl(
        spider,
        crawl_settings(settings),
        arguments=arguments,
        scrapy_settings={**FAST, **(extra or {})},
        log_file=log,
        timeout=300,
    )
    assert code == 0, log.read_text(encoding="utf-8")[-3000:]
    return log


def test_novel_site_crawl(runtime, settings, tmp_path):
    plan = novel_site()
    base = plan.site.url
    MasterLibrary.from_runtime(runtime).ingest(plan.masters)
    # Pages stored by an earlier crawl, now broken: cut short in transfer, or answering 500.
    store = PageStore(runtime.db)
    innocent = plan.extra["innocent"]
    store.save(PageRecord(url=base + "bad/truncated-known.html", text=innocent))
    store.save(PageRecord(url=base + "bad/error.html", text="旧的完整文本。" * 20))

    with plan.site:
        crawl("novel", settings, tmp_path, {"start_url": base})
        fetched = plan.site.fetched()

    # Fetched: exactly the planned pages, each once (retried ones as often as retried).
    assert fetched.pop("/robots.txt") == 1
    # Twisted may resend a request once on its own when a pooled connection drops.
    assert 2 <= fetched.pop("/bad/gone.html") <= 4
    expected = {path: n for path, n in plan.fetched.items() if path != "/bad/gone.html"}
    assert dict(fetched) == expected

    pages = {doc["_id"][len(base) - 1 :]: doc for doc in runtime.db["pages"].find()}
    preexisting = {"/bad/truncated-known.html", "/bad/error.html"}
    canonical, variant = plan.extra["canonical_pair"]  # same text: one copy, either URL
    if variant in pages:
        assert canonical not in pages
        pages[canonical] = pages.pop(variant)
    assert set(pages) - preexisting == plan.stored
    matched = {
        path: doc["matched_doc_ids"] for path, doc in pages.items() if doc.get("matched_doc_ids")
    }
    assert matched == plan.matched

    # A chapter over two pages is one page: its parts recorded, the whole chapter matched.
    for path, parts in plan.extra["parts"].items():
        assert [url[len(base) - 1 :] for url in pages[path]["parts"]] == parts, path
        assert pages[path]["reading"]["parts"] == 2
    [split] = runtime.db["matches"].find({"url": base + "book/1/2.html"})
    assert split["coverage"] >= 0.95

    # Extraction: extractor, encoding and chapter title recorded; ad lines gone.
    for path in plan.stored:
        assert pages[path]["extractor"] in ("trafilatura", "fallback"), path
        assert AD not in pages[path]["text"], path
    assert pages["/book/1/1.html"]["encoding"] == "gb18030"  # GBK in <meta>
    assert pages["/book/2/3.html"]["encoding"] == "big5"  # Big5 in the header
    assert pages["/book/3/read/5.html"]["encoding"] == "gb18030"  # GB2312 in the header
    assert pages["/book/3/read/4.html"]["encoding"] == "utf-8"  # undeclared
    assert pages["/bad/wrongcharset.html"]["encoding"] == "gb18030"  # header said UTF-8
    assert pages["/book/2/3.html"]["chapter_title"] == traditional(plan.masters[2].title)
    assert pages["/book/1/1.html"]["chapter_title"] == plan.masters[0].title
    assert pages["/bad/truncated.html"]["truncated"] is True

    # Nothing stored is lost: the broken pages keep their earlier copies.
    assert pages["/bad/truncated-known.html"]["text"] == innocent
    assert pages["/bad/error.html"]["text"] == "旧的完整文本。" * 20

    [run] = list(runtime.db["crawl_runs"].find())
    assert run["reason"] == "finished"
    assert run["errors"] == plan.errors
    assert run["traps"] == {"session_id": 2, "canonical": 1, "calendar": 2, "repeated_path": 1}
    assert run["pages"]["stored"] == len(plan.stored)
    assert run["pages"]["matched"] == len(plan.matched)
    assert run["stats"]["tracker__skipped__robots"] == 1
    assert run["stats"]["tracker__pages_truncated_kept"] == 1
    # Every URL fetched ended one way (tracker.crawling.outcomes): the broken pages unread or
    # skipped with their reasons, each fetched page once however often retried.
    urls = run["urls"]
    assert urls["unaccounted"] == 0, urls
    assert urls["fetched"] == len(expected)  # the planned pages (robots.txt aside)
    # the stored pages and the further parts read with them
    assert urls["stored"] == len(plan.stored) + run["stats"]["tracker__parts__pages"]
    assert urls["unread_reasons"] == {"connection": 1, "http_500": 1, "timeout": 1, "truncated": 1}


def chain_site(n: int) -> TestSite:
    """A home page listing ``n`` chapters of innocent prose."""
    site = TestSite()
    links = [(f"/c/{i}.html", f"第{i}章") for i in range(1, n + 1)]
    site.pages["/"] = Page(html_page("目录", link_list(links)).encode())
    for i in range(1, n + 1):
        body = "".join(f"<p>{p}</p>" for p in prose(500 + i, 400).splitlines())
        site.pages[f"/c/{i}.html"] = Page(html_page(f"第{i}章", body).encode())
    return site


def test_pause_and_resume_with_jobdir(runtime, settings, tmp_path):
    n = 10
    job = {"JOBDIR": str(tmp_path / "job"), "CONCURRENT_REQUESTS": 1}
    with chain_site(n) as site:
        crawl(
            "novel",
            settings,
            tmp_path,
            {"start_url": site.url},
            {**job, "CLOSESPIDER_PAGECOUNT": 5},
            "first",
        )
        first = site.fetched()
        crawl("novel", settings, tmp_path, {"start_url": site.url}, job, "second")
        total = site.fetched()
    first_pages = {p for p in first if p.startswith("/c/")}
    assert 0 < len(first_pages) < n  # paused part-way
    total.pop("/robots.txt")
    pages = {"/": 1, "/about.html": 1, **{f"/c/{i}.html": 1 for i in range(1, n + 1)}}
    assert dict(total) == pages  # each page once over both runs (about.html: a 404)
    runs = list(runtime.db["crawl_runs"].find().sort("finished_at", 1))
    assert [r["reason"] for r in runs] == ["closespider_pagecount", "finished"]
    assert runtime.db["pages"].count_documents({}) == n
