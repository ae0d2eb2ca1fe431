"""Evidence captures in MongoDB (``captures``): what the crawl kept of each page it matched.

One document per capture (a page whose text was matched, at the time it was fetched), ``_id`` a
random hex id:

``url``, ``site``, ``at`` (when the response was received), ``status``, ``content_hash`` (of
the extracted text), ``payload_sha256`` (of the body as served; of the parts' bodies one after
the other for a page fetched in parts), ``parts`` (per part: ``url``, ``status``, ``at``, ``ip``,
``user_agent``, ``sha256``, ``length``, the request and response headers, and ``records``: the
WARC records' file, offset, length, id and type), ``matches`` (the masters found, with their
scores and evidence spans, as found then), ``tracker_version``, ``screenshot`` (``file``,
``sha256``, ``bytes``) once taken, and ``stamp``: the manifest of the export bundle and its RFC
3161 token once time-stamped (``state``: ``stamped``), or why not yet (``pending``, ``error``,
``tries``).

Captures are written by the crawl before the matches that name them (``capture_id`` and
``payload_sha256`` on each match), and never changed but for their screenshot and stamp.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime
from typing import Any

from pymongo import DESCENDING
from pymongo.database import Database

from tracker.batching import ID_BATCH, batches

PENDING, STAMPED = "pending", "stamped"


class CaptureStore:
    def __init__(self, db: Database) -> None:
        self.captures = db["captures"]

    def add_many(self, captures: list[dict[str, Any]]) -> None:
        if captures:
            self.captures.insert_many(captures, ordered=False)

    def get(self, capture_id: str) -> dict[str, Any] | None:
        return self.captures.find_one({"_id": capture_id})

    def latest(self, url: str) -> dict[str, Any] | None:
        """The newest capture of ``url`` (index ``url, at``)."""
        found = self.captures.find({"url": url}, sort=[("at", DESCENDING)], limit=1)
        return next(iter(found), None)

    def latest_of(self, urls: Iterable[str], fields: dict[str, int]) -> dict[str, dict]:
        """The newest capture of each of ``urls`` that has one (index ``url``), with
        ``fields``."""
        newest: dict[str, dict[str, Any]] = {}
        for chunk in batches(sorted(set(urls)), ID_BATCH):
            for doc in self.captures.find({"url": {"$in": chunk}}, {**fields, "url": 1, "at": 1}):
                kept = newest.get(doc["url"])
                if kept is None or doc["at"] > kept["at"]:
                    newest[doc["url"]] = doc
        return newest

    def of_url(self, url: str, fields: dict[str, int] | None = None) -> list[dict[str, Any]]:
        """Every capture of ``url``, newest first."""
        return list(self.captures.find({"url": url}, fields, sort=[("at", DESCENDING)]))

    def captured_hashes(self, urls: Iterable[str]) -> dict[str, set[str]]:
        """The text digests captured of each of ``urls`` (index ``url``): a page whose current
        text is among them needs no new capture."""
        found: dict[str, set[str]] = {}
        for chunk in batches(sorted(set(urls)), ID_BATCH):
            query = {"url": {"$in": chunk}}
            for doc in self.captures.find(query, {"url": 1, "content_hash": 1}):
                found.setdefault(doc["url"], set()).add(doc.get("content_hash") or "")
        return found

    def set_screenshot(self, capture_id: str, screenshot: dict[str, Any]) -> None:
        self.captures.update_one({"_id": capture_id}, {"$set": {"screenshot": screenshot}})

    def set_stamped(
        self, capture_id: str, manifest: bytes, token: bytes, tsa: str, at: datetime
    ) -> bool:
        """Keep the stamped manifest and its token, unless another export stamped it first
        (the first token stands: it is the earlier proof). True when this one was kept."""
        result = self.captures.update_one(
            {"_id": capture_id, "stamp.state": {"$ne": STAMPED}},
            {
                "$set": {
                    "stamp": {
                        "state": STAMPED,
                        "manifest": manifest,
                        "token": token,
                        "tsa": tsa,
                        "at": at,
                    }
                }
            },
        )
        return result.modified_count == 1

    def set_pending(
        self, capture_id: str, manifest: bytes, error: str, at: datetime, tsa: str = ""
    ) -> None:
        """A stamp that failed: kept pending with the manifest it is for, retried later; the
        TSA's last answer (``error``, ``tsa``), and since when it fails (``failing_since``)."""
        self.captures.update_one(
            {"_id": capture_id, "stamp.state": {"$ne": STAMPED}},
            {
                "$set": {
                    "stamp.state": PENDING,
                    "stamp.manifest": manifest,
                    "stamp.error": error,
                    "stamp.tsa": tsa,
                    "stamp.at": at,
                },
                "$min": {"stamp.failing_since": at},
                "$inc": {"stamp.tries": 1},
            },
        )

    def overdue(self, before: datetime, fields: dict[str, int] | None = None) -> list[dict]:
        """Pending stamps failing since before ``before`` (index ``stamp.state,
        stamp.failing_since``)."""
        query = {"stamp.state": PENDING, "stamp.failing_since": {"$lt": before}}
        return list(self.captures.find(query, fields))

    def mark_alerted(self, capture_ids: Iterable[str], at: datetime) -> None:
        """Pending stamps whose alert was queued: not alerted again while pending."""
        for chunk in batches(sorted(set(capture_ids)), ID_BATCH):
            query = {"_id": {"$in": chunk}, "stamp.state": PENDING}
            self.captures.update_many(query, {"$set": {"stamp.alerted_at": at}})

    def pending(self) -> list[dict[str, Any]]:
        """Captures whose stamp is pending (index ``stamp.state``)."""
        return list(self.captures.find({"stamp.state": PENDING}))

    def by_ids(self, ids: Iterable[str]) -> list[dict[str, Any]]:
        found = []
        for chunk in batches(sorted(set(ids)), ID_BATCH):
            found += self.captures.find({"_id": {"$in": chunk}})
        return found
