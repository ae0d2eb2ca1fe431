"""Match a fingerprinted page against the master library index."""

from __future__ import annotations

import logging

from redis.exceptions import RedisError
from scrapy import Spider
from scrapy.crawler import Crawler

from tracker.context import tracker_context
from tracker.items import PageItem

log = logging.getLogger(__name__)


class MatchPipeline:
    def __init__(self, crawler: Crawler) -> None:
        self.crawler = crawler
        self.stats = crawler.stats

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> MatchPipeline:
        return cls(crawler)

    def process_item(self, item: PageItem, spider: Spider | None = None) -> PageItem:
        detector = tracker_context(self.crawler).detector
        try:
            matches = detector.check_normalized(item["normalized"], item["simhash"])
        except RedisError as exc:  # index unavailable: keep the page, count the error
            log.error("index lookup failed for %s: %s", item["url"], exc)
            self.stats.inc_value("tracker/errors/index")
            matches = []
        item["matches"] = [m.to_dict() for m in matches]
        if matches:
            self.stats.inc_value("tracker/pages_matched")
            self.stats.inc_value("tracker/matches", len(matches))
        return item
