"""The pipelines' server work runs in worker threads, a batch of pages at a time, and keeps
the record's guarantees: writes ordered page index → matches → page document within a
batch, each page of a failed batch counted for itself, and a server that stops answering for
a while holds up the pages that need it, never the downloads."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import threading
import time

import pytest
import redis
from pymongo.errors import OperationFailure
from scrapy.exceptions import DropItem
from scrapy.utils.test import get_crawler

from pipelines.boilerplate import SiteBoilerplatePipeline
from pipelines.fingerprint import FingerprintPipeline
from pipelines.match import MatchPipeline
from pipelines.store import StorePipeline
from pipelines.unchanged import UnchangedPagePipeline
from tests.test_crawl_novel import crawl_settings
from tests.test_record import FAST, book, crawl, expected, own, own_servers, pirate_site  # noqa: F401
from tests.texts import prose
from tracker.crawling.context import TrackerContext
from tracker.crawling.crawl import crawl_command, crawl_environment
from tracker.crawling.items import PageItem
from tracker.matching.library import MasterLibrary
from tracker.servers import services
from tracker.text.normalize import normalize

pytestmark = pytest.mark.integration


def stages(crawler):
    return [
        UnchangedPagePipeline.from_crawler(crawler),
        SiteBoilerplatePipeline.from_crawler(crawler),
        FingerprintPipeline.from_crawler(crawler),
        MatchPipeline.from_crawler(crawler),
        StorePipeline.from_crawler(crawler),
    ]


def crawl_together(pipelines, pages: dict[str, str]) -> list[object]:
    """The pages through the stages at once, as a crawl's concurrent responses go (they meet
    in the same batches); the pipelines closed afterwards as at the end of a crawl."""

    async def one(url: str, text: str) -> object:
        item = PageItem(url=url, text=text, status=200, normalized=normalize(text))
        for stage in pipelines:
            item = await stage.process_item(item)
        return item

    async def main() -> list[object]:
        done = await asyncio.gather(
            *(one(url, text) for url, text in pages.items()), return_exceptions=True
        )
        for stage in pipelines:
            await stage.close_spider()
        return done

    return asyncio.run(main())


@pytest.fixture()
def crawler(runtime):
    crawler = get_crawler(settings_dict={"TRACKER_BATCH_DELAY": 0.2})
    crawler.stats.open_spider()
    crawler._tracker_context = TrackerContext(runtime)
    return crawler


def pages_of(masters, innocents: int = 2) -> dict[str, str]:
    pages = {f"http://x.test/c/{i}.html": m.text for i, m in enumerate(masters)}
    pages.update({f"http://x.test/o/{i}.html": prose(900 + i, 700) for i in range(innocents)})
    return pages


def test_a_batch_is_written_index_then_matches_then_pages(runtime, crawler):
    masters = book(4)
    MasterLibrary.from_runtime(runtime).ingest(masters)
    context = crawler._tracker_context
    writes: list[tuple[str, int]] = []

    def logged(name, write, count):
        def call(batch, *args, **kwargs):
            writes.append((name, count(batch)))
            return write(batch, *args, **kwargs)

        return call

    context.page_index.add = logged("page index", context.page_index.add, len)
    context.matches.record_many = logged("matches", context.matches.record_many, len)
    context.pages.save_many = logged("pages", context.pages.save_many, len)
    pipelines = stages(crawler)
    done = crawl_together(pipelines, pages_of(masters))

    assert not [d for d in done if isinstance(d, Exception)]
    # One batch of six pages per stage; each write once for all, the page documents last.
    assert writes == [("page index", 6), ("matches", 6), ("pages", 6)]
    assert [p.batcher.batches for p in pipelines] == [1, 1, 1, 1, 1]
    stats = crawler.stats.get_stats()
    assert (stats["tracker/pages_stored"], stats["tracker/pages_matched"]) == (6, 4)
    assert stats["tracker/matches_new"] == 4 and "tracker/degraded" not in stats
    stored = {d["_id"]: d for d in runtime.db["pages"].find()}
    assert {u: d["matched_doc_ids"] for u, d in stored.items() if d["matched_doc_ids"]} == {
        f"http://x.test/c/{i}.html": [m.doc_id] for i, m in enumerate(masters)
    }
    assert all(d["match_state"] == "ok" and d["n"] > 0 for d in stored.values())
    assert len({d["n"] for d in stored.values()}) == 6


def test_each_page_of_a_failed_batch_is_counted_and_finished_by_the_next_crawl(runtime, crawler):
    masters = book(3)
    MasterLibrary.from_runtime(runtime).ingest(masters)
    context = crawler._tracker_context
    pages = pages_of(masters)
    index_add = context.page_index.add

    def refuses(*args, **kwargs):
        raise redis.ResponseError("OOM command not allowed when used memory > 'maxmemory'")

    # The page index refuses the batch: every page is stored as not matched, each counted.
    context.page_index.add = refuses
    crawl_together(stages(crawler), pages)
    stats = crawler.stats.get_stats()
    assert stats["tracker/errors/index"] == stats["tracker/degraded/unmatched"] == 5
    assert runtime.db["pages"].count_documents({"match_state": "failed", "n": 0}) == 5
    assert runtime.db["matches"].count_documents({}) == 0

    # The next crawl: the matches cannot be written; no page may look done (the failed
    # records stay as they were), each counted.
    context.page_index.add = index_add

    def not_primary(*args, **kwargs):
        raise OperationFailure("not primary", code=10107)

    context.matches.record_many = not_primary
    crawl_together(stages(crawler), pages)
    stats = crawler.stats.get_stats()
    assert stats["tracker/degraded/unstored"] == 5 and stats["tracker/errors/store"] == 5
    assert stats["tracker/pages_rematched"] == 5  # unchanged, but their matching had failed
    assert runtime.db["pages"].count_documents({"match_state": "failed"}) == 5

    del context.matches.record_many  # the store is back: the third crawl finishes them
    crawl_together(stages(crawler), pages)
    assert runtime.db["pages"].count_documents({"match_state": "ok"}) == 5
    assert runtime.db["matches"].count_documents({"active": True}) == 3
    # A fourth finds every page up to date and only marks it seen.
    [again] = crawl_together(stages(crawler)[:1], {"http://x.test/c/0.html": masters[0].text})
    assert isinstance(again, DropItem) and "unchanged" in str(again)


@pytest.mark.parametrize("server", ["mongo", "redis"])
def test_a_server_that_stops_answering_does_not_stop_the_downloads(own, tmp_path, server):  # noqa: F811
    """SecantusDB or valkey frozen (SIGSTOP) as soon as the crawl has fetched its first
    chapter: the other chapters are still downloaded while it is frozen (the pages wait for
    it in the pipelines' workers); once it answers again (SIGCONT), every page is stored and
    matched and the crawl ends ok."""
    settings, runtime = own
    masters = book(40, chars=500)
    MasterLibrary.from_runtime(runtime).ingest(masters)
    site = pirate_site(masters)
    paths = {f"/c/{i}.html" for i in range(1, len(masters) + 1)}
    for path in paths:
        site.pages[path].delay = 0.3  # downloads last a few seconds
    pid = services.read_state(settings, server).pid

    def chapters() -> set[str]:
        return set(site.fetched()) & paths

    with site:
        codes: list[int] = []
        crawler = threading.Thread(target=lambda: codes.append(crawl(settings, site, tmp_path)))
        crawler.start()
        deadline = time.monotonic() + 120
        while not chapters():
            assert time.monotonic() < deadline and crawler.is_alive()
            time.sleep(0.01)
        os.kill(pid, signal.SIGSTOP)
        try:
            before = chapters()
            deadline = time.monotonic() + 30
            while chapters() != paths and time.monotonic() < deadline:
                time.sleep(0.05)
            during = chapters() - before
        finally:
            os.kill(pid, signal.SIGCONT)
        crawler.join(300)
    assert before | during == paths, f"downloads stopped while {server} was frozen"
    assert len(during) >= len(paths) // 2
    assert codes == [0]
    stored = {d["_id"][len(site.url) :]: d for d in runtime.db["pages"].find()}
    assert {u: d["matched_doc_ids"] for u, d in stored.items()} == expected(masters)
    assert all(d["match_state"] == "ok" for d in stored.values())


def test_ctrl_c_finishes_the_pages_in_hand_and_the_crawl_resumes(runtime, settings, tmp_path):
    """SIGINT to the crawl's process group, as a terminal's Ctrl-C sends it (its extraction
    worker included): the crawl closes gracefully, every page it extracted is stored and
    matched (the pending batches are finished), it exits 0, and the same command resumes it
    from its JOBDIR: every page stored once, nothing fetched twice."""
    masters = book(30, chars=400)
    MasterLibrary.from_runtime(runtime).ingest(masters)
    site = pirate_site(masters)
    for i in range(1, len(masters) + 1):
        # 30 pages at 2 in flight take 7.5 s: the signal comes well before the last of them.
        site.pages[f"/c/{i}.html"].delay = 0.5
    options = {**FAST, "JOBDIR": tmp_path / "job", "CONCURRENT_REQUESTS": 2}
    environment = crawl_environment(crawl_settings(settings))
    with site:
        command = crawl_command("novel", {"start_url": site.url}, options, tmp_path / "1.log")
        crawl = subprocess.Popen(command, env=environment, start_new_session=True)
        deadline = time.monotonic() + 120
        while runtime.db["pages"].estimated_document_count() < 3:
            assert time.monotonic() < deadline and crawl.poll() is None
            time.sleep(0.02)
        os.killpg(crawl.pid, signal.SIGINT)
        assert crawl.wait(120) == 0
        first = runtime.db["crawl_runs"].find_one()
        assert first["reason"] == "shutdown" and first["status"] == "ok"
        # No page lost to the signal (the site's /about.html may have been a 404 by then).
        assert set(first["errors"]) <= {"http_404"}
        stored = runtime.db["pages"].count_documents({"match_state": "ok"})
        assert 3 <= stored == first["pages"]["extracted"] < len(masters)
        command = crawl_command("novel", {"start_url": site.url}, options, tmp_path / "2.log")
        assert subprocess.run(command, env=environment, timeout=300).returncode == 0
        fetched = site.fetched()
    assert all(fetched[f"/c/{i}.html"] == 1 for i in range(1, len(masters) + 1))
    pages = {d["_id"][len(site.url) :]: d["matched_doc_ids"] for d in runtime.db["pages"].find()}
    assert pages == expected(masters)
