"""Drop a site's own boilerplate — short lines repeated across many of its pages — from the text
that is fingerprinted and matched (the stored text and every offset stay as they were)."""

from __future__ import annotations

import logging

from redis.exceptions import RedisError
from scrapy import Spider
from scrapy.crawler import Crawler

from tracker.context import tracker_context
from tracker.items import PageItem
from tracker.model import site_of
from tracker.text.normalize import normalize
from tracker.text.site_boilerplate import SiteBoilerplate

log = logging.getLogger(__name__)


class SiteBoilerplatePipeline:
    def __init__(self, crawler: Crawler) -> None:
        self.crawler = crawler
        self.stats = crawler.stats
        self.min_pages = crawler.settings.getint("TRACKER_BOILERPLATE_MIN_PAGES", 5)
        self._boilerplate: SiteBoilerplate | None = None

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> SiteBoilerplatePipeline:
        return cls(crawler)

    def process_item(self, item: PageItem, spider: Spider | None = None) -> PageItem:
        if self._boilerplate is None:
            runtime = tracker_context(self.crawler).runtime
            self._boilerplate = SiteBoilerplate(
                runtime.redis, runtime.settings.redis_prefix, min_pages=self.min_pages
            )
        try:
            mask, dropped = self._boilerplate.mask(site_of(item["url"]), item["text"])
        except RedisError as exc:  # counts unavailable: match the page as it is
            log.error("site boilerplate lookup failed for %s: %s", item["url"], exc)
            self.stats.inc_value("tracker/errors/index")
            return item
        if dropped:
            item["normalized"] = normalize(item["text"], drop=mask)
            self.stats.inc_value("tracker/boilerplate_lines", dropped)
        return item
