"""Scrapy extension closing each crawl run: it groups the pages the run matched into mirror
groups (:mod:`tracker.reports.clustering`), records the run's stats in MongoDB (``crawl_runs``, with
``status: ok`` or ``degraded`` when pages could not be matched or stored) and logs a summary:
pages fetched, extracted, unchanged and stored, matches, and errors by kind."""

from __future__ import annotations

import logging
import os
import socket
from datetime import UTC, datetime
from typing import Any

from pymongo.errors import PyMongoError
from redis.exceptions import RedisError
from scrapy import Spider, signals
from scrapy.crawler import Crawler

from tracker.crawling.context import tracker_context
from tracker.crawling.distributed import crawl_id_for
from tracker.crawling.outcomes import accounting, describe
from tracker.model import site_of
from tracker.stores.crawl_runs import CrawlRunStore

log = logging.getLogger(__name__)

ERROR_PREFIX = "tracker/errors/"
UNREAD_PREFIX = "tracker/unread/"


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
        "degraded": {
            "unmatched": get("tracker/degraded/unmatched"),
            "unstored": get("tracker/degraded/unstored"),
        },
        "traps": {
            key.rsplit("/", 1)[1]: value
            for key, value in stats.items()
            if key.startswith("tracker/traps/")
        },
        # how every fetched URL ended (see tracker.crawling.outcomes)
        "urls": accounting(stats),
        # pages that could not be read, by reason (see tracker.crawling.unread)
        "unread": {
            key[len(UNREAD_PREFIX) :]: value
            for key, value in sorted(stats.items())
            if key.startswith(UNREAD_PREFIX)
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
        clustering = self._cluster()
        raw = self.crawler.stats.get_stats() or {}
        summary = run_summary(raw)
        degraded = sum(summary["degraded"].values())
        pages, matches = summary["pages"], summary["matches"]
        log.info(
            "crawl summary (%s): %d pages fetched, %d with text, %d unchanged, %d stored, "
            "%d matched (%d new matches); errors: %s; unread: %s%s",
            reason,
            pages["fetched"],
            pages["extracted"],
            pages["unchanged"],
            pages["stored"],
            pages["matched"],
            matches["new"],
            ", ".join(f"{k}={v}" for k, v in summary["errors"].items()) or "none",
            ", ".join(f"{k}={v}" for k, v in summary["unread"].items()) or "none",
            f"; DEGRADED: {degraded} page(s) not matched or not stored" if degraded else "",
        )
        urls = summary["urls"]
        (log.warning if urls["unaccounted"] else log.info)("crawl URLs: %s", describe(urls))
        settings = self.crawler.settings
        site = getattr(spider, "site", None)
        record = {
            # The id its starter chose (a scheduled crawl finds its own run by it), or MongoDB's.
            **({"_id": run_id} if (run_id := settings.get("TRACKER_RUN_ID")) else {}),
            "spider": spider.name,
            "reason": reason,
            "status": "degraded" if degraded else "ok",
            "started_at": self.started_at,
            "finished_at": datetime.now(UTC),
            "start_url": (getattr(spider, "start_urls", None) or [None])[0],
            "start_urls": list(getattr(spider, "start_urls", []) or []),
            # the hosts crawled from, for the console's per-site runs (index sites+finished_at)
            "sites": sorted(
                {site_of(str(url)) for url in getattr(spider, "start_urls", []) or []} - {""}
            ),
            "site_config": getattr(site, "name", None),
            "robots_obeyed": settings.getbool("ROBOTSTXT_OBEY"),
            "robots_reason": getattr(spider, "robots_reason", "") or None,
            "distributed": settings.getbool("TRACKER_DISTRIBUTED"),
            # the shared crawl it took part in, when distributed (its workers' runs share it)
            "crawl_id": crawl_id_for(spider) if settings.getbool("TRACKER_DISTRIBUTED") else None,
            "scrapyd_job": getattr(spider, "_job", None),  # run by Scrapyd: its job id
            "worker": f"{socket.gethostname()}:{os.getpid()}",
            **summary,
            "clustering": clustering,
            "stats": {k.replace(".", "_").replace("/", "__"): v for k, v in raw.items()},
        }
        try:
            context = tracker_context(self.crawler)
            # The store is made in the call: a retry after a reconnection writes on the new one.
            context.call(lambda: CrawlRunStore(context.runtime.db).record(record), "crawl record")
        except PyMongoError as exc:
            log.error("could not record crawl stats: %s", exc)
            self.crawler.stats.inc_value("tracker/errors/store")
            self.crawler.stats.inc_value("tracker/degraded")

    def _cluster(self) -> dict[str, Any] | None:
        """Mirror groups of the pages this run matched (reports only read them)."""
        if self.started_at is None or not self.crawler.stats.get_value("tracker/pages_matched"):
            return None
        from tracker.reports.clustering import PageClusterer

        try:
            context = tracker_context(self.crawler)
            clusterer = PageClusterer.from_runtime(context.runtime)
            return clusterer.cluster_seen_since(self.started_at).to_dict()
        except (PyMongoError, RedisError) as exc:  # the next crawl or report job clusters them
            log.error("could not group the matched pages into mirror groups: %s", exc)
            return None
