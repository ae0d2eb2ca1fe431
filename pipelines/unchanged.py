"""Skip pages whose text has not changed since they were stored (content hash).

A page re-crawled with the same extracted text (``tracker.stores.pages.content_hash``) is not
fingerprinted or matched again: its stored record and matches only get their ``last_seen``
refreshed, so the day's report still lists them. A page cut short in transfer is never
stored over a complete earlier copy.
"""

from __future__ import annotations

import logging

from pymongo.errors import PyMongoError
from scrapy import Spider
from scrapy.crawler import Crawler
from scrapy.exceptions import DropItem

from tracker.context import tracker_context
from tracker.items import PageItem
from tracker.model import content_hash

log = logging.getLogger(__name__)


class UnchangedPagePipeline:
    def __init__(self, crawler: Crawler) -> None:
        self.crawler = crawler
        self.stats = crawler.stats

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> UnchangedPagePipeline:
        return cls(crawler)

    def process_item(self, item: PageItem, spider: Spider | None = None) -> PageItem:
        context = tracker_context(self.crawler)
        digest = content_hash(item["text"])
        item["content_hash"] = digest
        try:
            stored = context.pages.known_hash(item["url"])
        except PyMongoError as exc:  # the store is away: process the page as new
            log.error("could not look up %s: %s", item["url"], exc)
            self.stats.inc_value("tracker/errors/store")
            return item
        if stored is None or (stored != digest and not item.get("truncated")):
            return item
        try:
            context.pages.touch(item["url"], status=item.get("status"))
            refreshed = context.matches.touch(item["url"])
        except PyMongoError as exc:
            log.error("could not refresh %s: %s", item["url"], exc)
            self.stats.inc_value("tracker/errors/store")
            refreshed = 0
        if stored == digest:
            self.stats.inc_value("tracker/pages_unchanged")
            self.stats.inc_value("tracker/matches_refreshed", refreshed)
            raise DropItem(f"unchanged since last crawl: {item['url']}")
        self.stats.inc_value("tracker/pages_truncated_kept")
        raise DropItem(f"truncated copy of a stored page, stored copy kept: {item['url']}")
