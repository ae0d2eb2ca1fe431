"""Two `scrapy crawl` processes on loopback split one crawl through scrapy-redis: together they
fetch every page of a local site exactly once, each fetches part of it, both close when idle,
and the shared keys are gone afterwards."""

from __future__ import annotations

import uuid
from concurrent.futures import ThreadPoolExecutor

import pytest

from tests.sites import Page, TestSite, html_page, link_list
from tests.test_crawl_novel import crawl_settings
from tests.texts import prose
from tracker.crawling.crawl import run_crawl

pytestmark = pytest.mark.integration

PAGES = 30


def linked_site() -> TestSite:
    """A home page listing every chapter; each chapter also links to the next two."""
    site = TestSite()
    site.pages["/"] = Page(
        html_page("目录", link_list((f"/c/{i}.html", f"第{i}章") for i in range(PAGES))).encode()
    )
    for i in range(PAGES):
        body = "".join(f"<p>{p}</p>" for p in prose(700 + i, 300).splitlines())
        nav = link_list(
            [(f"/c/{(i + 1) % PAGES}.html", "下一章"), (f"/c/{(i + 2) % PAGES}.html", "后一章")]
        )
        site.pages[f"/c/{i}.html"] = Page(html_page(f"第{i}章", body + nav).encode(), delay=0.3)
    return site


def test_two_processes_split_one_crawl(runtime, settings, tmp_path):
    crawl_id = f"test-{uuid.uuid4().hex[:8]}"
    options = {
        "TRACKER_DISTRIBUTED": 1,
        "TRACKER_CRAWL_ID": crawl_id,
        "MAX_IDLE_TIME_BEFORE_CLOSE": 2,
        # Polite and slow enough that the second process (which polls the shared queue every
        # 5 s while idle) joins long before the first could finish alone.
        "AUTOTHROTTLE_START_DELAY": 0.2,
        "CONCURRENT_REQUESTS_PER_DOMAIN": 1,
    }
    with linked_site() as site:

        def worker(n: int) -> int:
            return run_crawl(
                "novel",
                crawl_settings(settings),
                arguments={"start_url": site.url},
                scrapy_settings=options,
                log_file=tmp_path / f"worker{n}.log",
                timeout=300,
            )

        with ThreadPoolExecutor(2) as pool:
            codes = list(pool.map(worker, (1, 2)))
        fetched = site.fetched()

    assert codes == [0, 0], (tmp_path / "worker1.log").read_text()[-2000:]
    assert fetched.pop("/robots.txt") <= 2  # each process reads robots.txt for itself
    assert dict(fetched) == {"/": 1, "/about.html": 1, **{f"/c/{i}.html": 1 for i in range(PAGES)}}

    runs = list(runtime.db["crawl_runs"].find())
    assert len(runs) == 2
    assert all(r["distributed"] and r["reason"] == "finished" for r in runs)
    stored = [r["pages"]["stored"] for r in runs]
    assert sum(stored) == PAGES and min(stored) > 0  # both took part
    assert runtime.db["pages"].count_documents({}) == PAGES
    # The last worker out deleted the shared queue, duplicate filter and worker list.
    assert not list(runtime.redis.scan_iter(match=f"{settings.redis_prefix}crawl:*"))
