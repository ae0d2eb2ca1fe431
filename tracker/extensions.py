"""Scrapy extension recording each crawl run's stats in MongoDB (``crawl_runs``)."""

from __future__ import annotations

import logging
from datetime import UTC, datetime

from pymongo.errors import PyMongoError
from scrapy import Spider, signals
from scrapy.crawler import Crawler

from tracker.context import tracker_context

log = logging.getLogger(__name__)


class CrawlRunRecorder:
    def __init__(self, crawler: Crawler) -> None:
        self.crawler = crawler

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> CrawlRunRecorder:
        extension = cls(crawler)
        crawler.signals.connect(extension.spider_closed, signal=signals.spider_closed)
        return extension

    def spider_closed(self, spider: Spider, reason: str) -> None:
        stats = {
            k.replace(".", "_").replace("/", "__"): v
            for k, v in (self.crawler.stats.get_stats() or {}).items()
        }
        record = {
            "spider": spider.name,
            "reason": reason,
            "finished_at": datetime.now(UTC),
            "start_url": getattr(spider, "start_url", None),
            "stats": stats,
        }
        try:
            tracker_context(self.crawler).runtime.db["crawl_runs"].insert_one(record)
        except PyMongoError as exc:
            log.error("could not record crawl stats: %s", exc)
