"""Crawled pages and their matches in MongoDB.

``pages``: one document per URL (upserted), with the extracted text and a content hash so an
unchanged re-crawl adds nothing. ``matches``: one document per (page URL, master doc id) with the
score, coverage and evidence passages; ``first_seen``/``last_seen`` record when it was found.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from pymongo import ASCENDING, DESCENDING, UpdateOne
from pymongo.database import Database

from tracker.model import content_hash, site_of


@dataclass
class PageRecord:
    url: str
    text: str
    title: str = ""
    extractor: str = ""
    status: int = 200
    simhash: int | None = None
    extra: dict[str, Any] = field(default_factory=dict)


class PageStore:
    def __init__(self, db: Database) -> None:
        self.pages = db["pages"]

    def ensure_indexes(self) -> None:
        self.pages.create_index([("site", ASCENDING), ("last_seen", DESCENDING)])
        self.pages.create_index([("last_seen", DESCENDING)])
        self.pages.create_index([("content_hash", ASCENDING)])

    def known_hash(self, url: str) -> str | None:
        doc = self.pages.find_one({"_id": url}, {"content_hash": 1})
        return doc.get("content_hash") if doc else None

    def save(self, page: PageRecord, now: datetime | None = None) -> bool:
        """Upsert ``page``; returns True when its content is new or changed."""
        now = now or datetime.now(UTC)
        digest = content_hash(page.text)
        changed = self.known_hash(page.url) != digest
        update: dict[str, Any] = {
            "$set": {"last_seen": now, "status": page.status},
            "$setOnInsert": {"first_seen": now, "site": site_of(page.url)},
        }
        if changed:
            update["$set"].update(
                {
                    "text": page.text,
                    "title": page.title,
                    "content_hash": digest,
                    "extractor": page.extractor,
                    "simhash": page.simhash,
                    "changed_at": now,
                    **page.extra,
                }
            )
        self.pages.update_one({"_id": page.url}, update, upsert=True)
        return changed

    def touch(self, url: str, now: datetime | None = None, status: int | None = None) -> bool:
        """Record that ``url`` was seen again, unchanged; returns False when it is not stored."""
        fields: dict[str, Any] = {"last_seen": now or datetime.now(UTC)}
        if status is not None:
            fields["status"] = status
        return self.pages.update_one({"_id": url}, {"$set": fields}).matched_count > 0


class MatchStore:
    def __init__(self, db: Database) -> None:
        self.matches = db["matches"]

    def ensure_indexes(self) -> None:
        self.matches.create_index([("last_seen", DESCENDING)])
        self.matches.create_index([("first_seen", DESCENDING)])
        self.matches.create_index([("doc_id", ASCENDING)])
        self.matches.create_index([("url", ASCENDING)])

    def record(self, url: str, matches: list[dict[str, Any]], now: datetime | None = None) -> int:
        """Upsert the matches of one page; returns how many were new."""
        if not matches:
            return 0
        now = now or datetime.now(UTC)
        site = site_of(url)
        ops = []
        for match in matches:
            fields = {k: v for k, v in match.items() if k != "doc_id"}
            ops.append(
                UpdateOne(
                    {"_id": f"{url}\x00{match['doc_id']}"},
                    {
                        "$set": {
                            **fields,
                            "url": url,
                            "site": site,
                            "doc_id": match["doc_id"],
                            "last_seen": now,
                        },
                        "$setOnInsert": {"first_seen": now},
                    },
                    upsert=True,
                )
            )
        result = self.matches.bulk_write(ops, ordered=False)
        return result.upserted_count

    def touch(self, url: str, now: datetime | None = None) -> int:
        """Mark the matches of an unchanged page as seen again; returns how many there are."""
        result = self.matches.update_many(
            {"url": url}, {"$set": {"last_seen": now or datetime.now(UTC)}}
        )
        return result.matched_count

    def seen_between(self, start: datetime, end: datetime) -> list[dict]:
        """Matches seen in ``[start, end)``: last seen after start and first seen before end."""
        query = {"last_seen": {"$gte": start}, "first_seen": {"$lt": end}}
        # Name the index: with range filters on two fields SecantusDB would otherwise scan.
        return list(self.matches.find(query).hint([("last_seen", DESCENDING)]))
