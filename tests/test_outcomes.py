"""How a crawl accounts for every URL it fetched (tracker/crawling/outcomes.py), unit by unit;
the crawls of tests/test_crawl_defended.py, test_crawl_novel.py and test_real_pages.py assert
it end to end."""

from __future__ import annotations

from scrapy.exceptions import DropItem
from scrapy.statscollectors import MemoryStatsCollector
from scrapy.utils.test import get_crawler

from tracker.crawling.items import PageItem
from tracker.crawling.outcomes import (
    SKIPPED,
    UNCHANGED,
    Ended,
    HandedOn,
    UrlOutcomes,
    accounting,
    describe,
)


def outcomes() -> tuple[UrlOutcomes, MemoryStatsCollector]:
    crawler = get_crawler()
    crawler.stats.open_spider()
    return UrlOutcomes(crawler), crawler.stats


def test_items_end_once_with_their_parts_and_a_page_handed_to_the_browser_does_not():
    ext, stats = outcomes()
    stats.inc_value("tracker/urls/fetched", 8)
    ext.item_scraped(PageItem(url="http://a/1", parts=["http://a/1_2", "http://a/1_3"]))
    ext.item_scraped(PageItem(url="http://a/2", unstored=True))
    ext.item_scraped(PageItem(url="http://a/feed#1", fetched=False))  # a feed's entry
    ext.item_dropped(PageItem(url="http://a/3"), HandedOn("to the browser"))
    ext.item_dropped(PageItem(url="http://a/4"), Ended("unchanged since…", UNCHANGED))
    ext.item_dropped(PageItem(url="http://a/5"), Ended("list page…", SKIPPED, "list_page"))
    ext.item_dropped(PageItem(url="http://a/6"), DropItem("Not a chapter: http://a/6"))
    ext.item_error(PageItem(url="http://a/7"))
    urls = accounting(stats.get_stats())
    assert urls["stored"] == 3 and urls["unchanged"] == 1
    assert urls["unread_reasons"] == {"pipeline_error": 1, "unstored": 1}
    assert urls["skipped_reasons"] == {"list_page": 1, "not_a_chapter": 1}
    assert urls["unaccounted"] == 0
    assert describe(urls) == (
        "8 URLs fetched = 3 stored + 1 unchanged + 2 unread (pipeline_error 1, unstored 1)"
        " + 2 skipped (list_page 1, not_a_chapter 1)"
    )


def test_the_stored_record_reads_back_and_a_missing_end_shows():
    stored = {  # a crawl_runs record's stats: "/" stored as "__"
        "tracker__urls__fetched": 5,
        "tracker__urls__stored": 3,
        "tracker__urls__skipped": 1,
        "tracker__urls__skipped__http_404": 1,
    }
    urls = accounting(stored)
    assert urls["skipped_reasons"] == {"http_404": 1}
    assert urls["unaccounted"] == 1
    assert describe(urls).endswith("; UNACCOUNTED: 1")
