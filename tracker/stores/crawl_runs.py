"""The record of crawl runs in MongoDB (``crawl_runs``): one document per ``scrapy crawl``.

Written once when a crawl closes (:class:`tracker.crawling.extensions.CrawlStatsRecorder`):
its spider, reason and status (``ok`` or ``degraded``), start and finish times, start URLs and
the ``sites`` they are on, the pages and matches counted, the errors by kind, its mirror
groups and Scrapy's stats. ``_id`` is the id its starter chose (``TRACKER_RUN_ID``: a
scheduled crawl finds its own run by it) or MongoDB's; the workers of a distributed crawl
share its ``crawl_id``.
"""

from __future__ import annotations

from typing import Any

from pymongo import DESCENDING
from pymongo.database import Database

_LISTED = {"stats": 0, "clustering": 0}  # a list of runs leaves out the bulky parts


class CrawlRunStore:
    def __init__(self, db: Database) -> None:
        self.runs = db["crawl_runs"]

    def record(self, run: dict[str, Any]) -> None:
        self.runs.insert_one(run)

    def get(self, run_id: str) -> dict[str, Any] | None:
        return self.runs.find_one({"_id": run_id})

    def of_crawl(self, crawl_id: str) -> list[dict[str, Any]]:
        """The runs of the workers that took part in distributed crawl ``crawl_id`` (its
        ``crawl_id`` index)."""
        return list(self.runs.find({"crawl_id": crawl_id}))

    def latest(self, site: str | None = None, skip: int = 0, limit: int = 20) -> list[dict]:
        """The latest runs (that crawled ``site``), newest first, without their stats and mirror
        groups: through the ``finished_at`` and ``sites, finished_at`` indexes."""
        query = {} if site is None else {"sites": site}
        cursor = self.runs.find(query, _LISTED).sort("finished_at", DESCENDING)
        return list(cursor.skip(skip).limit(limit))
