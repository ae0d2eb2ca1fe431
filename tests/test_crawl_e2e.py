"""The whole loop on the real servers: ingest, `scrapy crawl novel` in its own process against a
local pirate site, matches in MongoDB, the day's report."""

from __future__ import annotations

import os
from dataclasses import replace
from datetime import UTC, datetime

import pytest

from tracker.crawling.crawl import run_crawl
from tracker.demo import build_site, master_documents, serve
from tracker.matching.library import MasterLibrary
from tracker.reports.build import build_report


@pytest.fixture()
def crawled_site(runtime, settings, tmp_path):
    library = MasterLibrary.from_runtime(runtime)
    library.ingest(master_documents())
    manifest = build_site(tmp_path / "site")
    # Unless the servers are external, the crawl process finds the embedded ones through the
    # data directory alone.
    crawl_settings = replace(
        settings, mongo_url=os.environ.get("MONGO_URL"), redis_url=os.environ.get("REDIS_URL")
    )
    with serve(manifest.root) as site:
        log = tmp_path / "crawl.log"
        assert (
            run_crawl(
                "novel",
                crawl_settings,
                arguments={"start_url": site.url},
                log_file=log,
                timeout=300,
            )
            == 0
        ), log.read_text()[-3000:]
        yield manifest, site.url, crawl_settings, log


def test_crawl_finds_exactly_the_planted_copies(crawled_site, runtime):
    manifest, base, _, _ = crawled_site
    pages = {
        doc["_id"]: sorted(doc.get("matched_doc_ids", []))
        for doc in runtime.db["pages"].find({}, {"matched_doc_ids": 1})
    }
    flagged = {url[len(base) :]: ids for url, ids in pages.items() if ids}
    assert flagged == {path: sorted(ids) for path, ids in manifest.expected.items()}
    for path in manifest.innocent:
        assert not pages.get(base + path)
    report = build_report(runtime.db, datetime.now(UTC).date())
    assert sorted(p["url"][len(base) :] for p in report["pages"]) == sorted(manifest.expected)
    assert {p["url"][len(base) :]: p["doc_ids"] for p in report["pages"]} == {
        path: sorted(ids) for path, ids in manifest.expected.items()
    }
    [run] = list(runtime.db["crawl_runs"].find())
    assert run["spider"] == "novel" and run["reason"] == "finished"
    assert run["stats"]["tracker__pages_matched"] == len(manifest.expected)


def test_recrawl_of_unchanged_site_adds_nothing(crawled_site, runtime):
    _, base, crawl_settings, log = crawled_site
    before_pages = runtime.db["pages"].count_documents({})
    before_matches = runtime.db["matches"].count_documents({})
    assert (
        run_crawl("novel", crawl_settings, arguments={"start_url": base}, log_file=log, timeout=300)
        == 0
    )
    assert runtime.db["pages"].count_documents({}) == before_pages
    assert runtime.db["matches"].count_documents({}) == before_matches
    runs = list(runtime.db["crawl_runs"].find().sort("finished_at", 1))
    assert runs[-1]["stats"]["tracker__pages_unchanged"] == before_pages
    assert runs[-1]["stats"].get("tracker__matches_new", 0) == 0
