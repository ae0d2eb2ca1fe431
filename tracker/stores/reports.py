"""Daily reports in MongoDB (``reports``): each day's figures, so trends need no recomputation.

One document per reported UTC day, ``_id`` = ``YYYY-MM-DD``, holding the report's summary and
its per-site and per-work figures (not the page lists, which the ``matches`` collection keeps).
Generating a day's report again replaces its figures.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import date, datetime
from typing import Any

from pymongo import ASCENDING, DESCENDING
from pymongo.database import Database


def figures(report: dict[str, Any]) -> dict[str, Any]:
    """The stored form of a report from :func:`tracker.reports.build.build_report`."""
    return {
        "_id": report["date"],
        "generated_at": datetime.fromisoformat(report["generated_at"]),
        "summary": report["summary"],
        "sites": [
            {key: site[key] for key in ("site", "pages", "works", "matches", "new_pages")}
            for site in report["sites"]
        ],
        "works": [
            {
                "work": work["work"],
                "pages": len(work["pages"]),
                "chapters": work["chapters"],
                "total_chapters": work["total_chapters"],
                "new_pages": work["new_pages"],
            }
            for work in report["works"]
        ],
    }


class ReportStore:
    def __init__(self, db: Database) -> None:
        self.reports = db["reports"]

    def save(self, report: dict[str, Any]) -> None:
        self.reports.replace_one({"_id": report["date"]}, figures(report), upsert=True)

    def get(self, day: date) -> dict[str, Any] | None:
        return self.reports.find_one({"_id": day.isoformat()})

    def previous(self, day: date) -> dict[str, Any] | None:
        """The latest stored report of a day before ``day``."""
        # A sorted range: SecantusDB reads the whole _id index either way (a report a day);
        # the hint keeps it from scanning the documents.
        found = self.reports.find(
            {"_id": {"$lt": day.isoformat()}}, sort=[("_id", DESCENDING)], limit=1
        ).hint([("_id", ASCENDING)])
        return next(iter(found), None)

    def last_date(self, before: date) -> date | None:
        previous = self.previous(before)
        return date.fromisoformat(previous["_id"]) if previous else None

    def count(self) -> int:
        return self.reports.estimated_document_count()

    def latest(self, skip: int = 0, limit: int = 50) -> list[dict[str, Any]]:
        """The stored reports' ``_id`` (the day), ``summary`` and ``generated_at``, newest day
        first (one document a day: a small scan)."""
        cursor = self.reports.find({}, {"summary": 1, "generated_at": 1}).sort("_id", DESCENDING)
        return list(cursor.skip(skip).limit(limit))

    def days(self, days: Iterable[date]) -> dict[str, dict[str, Any]]:
        """The stored reports of ``days``, by ``YYYY-MM-DD``."""
        wanted = sorted({day.isoformat() for day in days})
        if not wanted:
            return {}
        return {doc["_id"]: doc for doc in self.reports.find({"_id": {"$in": wanted}})}
