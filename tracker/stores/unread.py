"""Pages a crawl could not read, in MongoDB: ``unread_pages`` and ``unread_days``.

A page that could not be read (a challenge or captcha page, a ban that outlasted the retries,
a browser that failed to render it, a body cut short, a server error or timeout) is not a page
without a copy: it is *unread*, and the report says so.

``unread_pages``: one document per URL still unread (``_id`` the URL), with its ``site``, the
latest ``reason``, ``first_seen``, ``last_seen`` and ``attempts`` (crawls that failed to read
it). The next crawl of the site asks for these URLs again, and a successful read removes the
document.

``unread_days``: one document per URL and UTC day it was left unread (``_id`` = ``DAY URL``),
with the page's figures as they stood at its last attempt that day; a read later the same day
sets ``cleared_at``, so a day's report (:meth:`UnreadStore.on_day`) lists the pages that day
ended without reading. Like ``page_days``, it keeps each day's record when later days change
the page's.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import UTC, date, datetime
from typing import Any

from pymongo import UpdateOne
from pymongo.database import Database

from tracker.batching import ID_BATCH, batches
from tracker.model import site_of

#: The fields of an unread page in a report.
REPORTED = ("url", "site", "reason", "first_seen", "last_seen", "attempts")


class UnreadStore:
    def __init__(self, db: Database) -> None:
        self.pages = db["unread_pages"]
        self.days = db["unread_days"]

    def record_many(self, unread: Iterable[tuple[str, str]], now: datetime | None = None) -> None:
        """Record that each ``(url, reason)`` could not be read now: one more attempt on the
        page's record and today's (two bulk writes and a read, for the whole batch)."""
        now = now or datetime.now(UTC)
        reasons = dict(unread)  # a URL twice in a batch: one attempt, its last reason
        if not reasons:
            return
        self.pages.bulk_write(
            [
                UpdateOne(
                    {"_id": url},
                    {
                        "$set": {"reason": reason, "last_seen": now},
                        "$setOnInsert": {"site": site_of(url), "first_seen": now},
                        "$inc": {"attempts": 1},
                    },
                    upsert=True,
                )
                for url, reason in reasons.items()
            ],
            ordered=False,
        )
        day = now.date().isoformat()
        writes = []
        for chunk in batches(sorted(reasons), ID_BATCH):
            for page in self.pages.find({"_id": {"$in": chunk}}):
                fields = {key: page.get(key) for key in REPORTED if key != "url"}
                writes.append(
                    UpdateOne(
                        {"_id": f"{day} {page['_id']}"},
                        {"$set": {**fields, "url": page["_id"], "day": day, "cleared_at": None}},
                        upsert=True,
                    )
                )
        if writes:
            self.days.bulk_write(writes, ordered=False)

    def clear(self, urls: Iterable[str], now: datetime | None = None) -> None:
        """The pages among ``urls`` were read now: no longer unread (today's record keeps
        that they were, until now)."""
        now = now or datetime.now(UTC)
        urls = sorted(set(urls))
        day = now.date().isoformat()
        for chunk in batches(urls, ID_BATCH):
            self.pages.delete_many({"_id": {"$in": chunk}})
            self.days.update_many(
                {"_id": {"$in": [f"{day} {url}" for url in chunk]}}, {"$set": {"cleared_at": now}}
            )

    def of_sites(self, sites: Iterable[str], limit: int = 10_000) -> list[str]:
        """URLs still unread on ``sites`` (hosts), at most ``limit``."""
        sites = sorted(set(sites))
        if not sites:
            return []
        found = self.pages.find({"site": {"$in": sites}}, {"_id": 1}, limit=limit)
        return sorted(doc["_id"] for doc in found)

    def on_day(self, day: date) -> list[dict[str, Any]]:
        """The pages ``day`` ended without reading, by site and URL: ``{"url", "site",
        "reason", "first_seen", "last_seen", "attempts"}`` (times as ISO strings)."""
        entries = []
        for doc in self.days.find({"day": day.isoformat(), "cleared_at": None}):
            entries.append(
                {
                    "url": doc["url"],
                    "site": doc.get("site") or site_of(doc["url"]),
                    "reason": str(doc.get("reason") or ""),
                    "first_seen": _iso(doc.get("first_seen")),
                    "last_seen": _iso(doc.get("last_seen")),
                    "attempts": int(doc.get("attempts") or 0),
                }
            )
        entries.sort(key=lambda e: (e["site"], e["url"]))
        return entries


def _iso(moment: datetime | None) -> str | None:
    if moment is None:
        return None
    moment = moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment.astimezone(UTC)
    return moment.isoformat()
