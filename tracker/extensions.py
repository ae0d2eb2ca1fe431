"""Scrapy extension recording each crawl run's stats in MongoDB (``crawl_runs``) and logging a
summary: pages fetched, extracted, unchanged and stored, matches, and errors by kind."""

from __future__ import annotations

import logging
import os
import socket
from datetime import UTC, datetime
from typing import Any

from pymongo.errors import PyMongoError
from scrapy import Spider, signals
from scrapy.crawler import Crawler

from tracker.context import tracker_context

log = logging.getLogger(__name__)

ERROR_PREFIX = "tracker/errors/"


def run_summary(stats: dict[str, Any]) -> dict[str, Any]:
    """The figures an operator reads first, from Scrapy's and tracker's stats."""

    def get(key: str) -> int:
        return int(stats.get(key, 0) or 0)

    errors = {
        key[len(ERROR_PREFIX) :]: value
        for key, value in stats.items()
        if key.startswith(ERROR_PREFIX)
    }
    return {
        "pages": {
            "fetched": get("response_received_count"),
            "extracted": get("tracker/pages_extracted"),
            "without_text": get("tracker/pages_without_text"),
            "unchanged": get("tracker/pages_unchanged"),
            "stored": get("tracker/pages_stored"),
            "matched": get("tracker/pages_matched"),
        },
        "matches": {
            "found": get("tracker/matches"),
            "new": get("tracker/matches_new"),
            "refreshed": get("tracker/matches_refreshed"),
        },
        "errors": dict(sorted(errors.items())),
        "traps": {
            key.rsplit("/", 1)[1]: value
            for key, value in stats.items()
            if key.startswith("tracker/traps/")
        },
    }


class CrawlRunRecorder:
    def __init__(self, crawler: Crawler) -> None:
        self.crawler = crawler
        self.started_at: datetime | None = None

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> CrawlRunRecorder:
        extension = cls(crawler)
        crawler.signals.connect(extension.spider_opened, signal=signals.spider_opened)
        crawler.signals.connect(extension.spider_closed, signal=signals.spider_closed)
        return extension

    def spider_opened(self, spider: Spider) -> None:
        self.started_at = datetime.now(UTC)

    def spider_closed(self, spider: Spider, reason: str) -> None:
        raw = self.crawler.stats.get_stats() or {}
        summary = run_summary(raw)
        pages, matches = summary["pages"], summary["matches"]
        log.info(
            "crawl summary (%s): %d pages fetched, %d with text, %d unchanged, %d stored, "
            "%d matched (%d new matches); errors: %s",
            reason,
            pages["fetched"],
            pages["extracted"],
            pages["unchanged"],
            pages["stored"],
            pages["matched"],
            matches["new"],
            ", ".join(f"{k}={v}" for k, v in summary["errors"].items()) or "none",
        )
        settings = self.crawler.settings
        site = getattr(spider, "site", None)
        record = {
            "spider": spider.name,
            "reason": reason,
            "started_at": self.started_at,
            "finished_at": datetime.now(UTC),
            "start_url": (getattr(spider, "start_urls", None) or [None])[0],
            "start_urls": list(getattr(spider, "start_urls", []) or []),
            "site_config": getattr(site, "name", None),
            "robots_obeyed": settings.getbool("ROBOTSTXT_OBEY"),
            "robots_reason": getattr(spider, "robots_reason", "") or None,
            "distributed": settings.getbool("TRACKER_DISTRIBUTED"),
            "worker": f"{socket.gethostname()}:{os.getpid()}",
            **summary,
            "stats": {k.replace(".", "_").replace("/", "__"): v for k, v in raw.items()},
        }
        try:
            runs = tracker_context(self.crawler).runtime.db["crawl_runs"]
            runs.create_index([("finished_at", -1)])
            runs.insert_one(record)
        except PyMongoError as exc:
            log.error("could not record crawl stats: %s", exc)
