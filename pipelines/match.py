"""Match a fingerprinted page against the master library index."""

from __future__ import annotations

from scrapy import Spider
from scrapy.crawler import Crawler

from pipelines import SERVER_ERRORS, count_failure
from tracker.context import tracker_context
from tracker.items import PageItem


class MatchPipeline:
    def __init__(self, crawler: Crawler) -> None:
        self.crawler = crawler
        self.stats = crawler.stats

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> MatchPipeline:
        return cls(crawler)

    def process_item(self, item: PageItem, spider: Spider | None = None) -> PageItem:
        """Sets ``matches`` (None when matching failed: the page is stored as such and matched
        again by the next crawl or ``tracker rematch``) and ``library_version``."""
        context = tracker_context(self.crawler)
        try:
            matches = context.call(
                lambda: context.detector.check_normalized(item["normalized"], item["simhash"]),
                "matching",
            )
        except SERVER_ERRORS as exc:  # keep the page, unmatched; count it
            count_failure(self.stats, exc, item["url"], "matching", "unmatched")
            item["matches"] = None
            return item
        item["matches"] = [m.to_dict() for m in matches]
        item["library_version"] = context.detector.version or 0
        if matches:
            self.stats.inc_value("tracker/pages_matched")
            self.stats.inc_value("tracker/matches", len(matches))
        return item
