"""Takedown notices in MongoDB (``notices``): every notice composed to be sent, and its fate.

One document per notice, ``_id`` a random hex id: ``site``, ``to``, ``sender``, ``subject``,
``message_id``, ``urls`` (and ``pages``: each URL with the doc ids it was noticed for),
``text`` (the mail's body, so a retry sends the same notice),
``created_at``, ``state`` (``pending`` until the SMTP server accepts it, then ``sent``),
``sent_at``, and for a notice not sent yet its last ``error`` and ``tries``. A notice is
recorded before it is sent: one the SMTP server did not take is kept pending and sent again
by the next ``tracker notices send`` of its site (or the scheduler's ``takedown`` job).
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime
from typing import Any

from pymongo import DESCENDING
from pymongo.database import Database

from tracker.batching import ID_BATCH, batches

PENDING, SENT = "pending", "sent"


class NoticeStore:
    def __init__(self, db: Database) -> None:
        self.notices = db["notices"]

    def add(self, notice: dict[str, Any]) -> None:
        """Record ``notice`` (with its ``_id``) as pending, before it is sent."""
        self.notices.insert_one({**notice, "state": PENDING, "tries": 0})

    def sent(self, notice_id: str, at: datetime) -> None:
        self.notices.update_one(
            {"_id": notice_id}, {"$set": {"state": SENT, "sent_at": at}, "$unset": {"error": ""}}
        )

    def failed(self, notice_id: str, error: str, at: datetime) -> None:
        self.notices.update_one(
            {"_id": notice_id},
            {"$set": {"error": error, "tried_at": at}, "$inc": {"tries": 1}},
        )

    def pending(self, site: str | None = None) -> list[dict[str, Any]]:
        """Notices not sent yet (of ``site``), oldest first (index ``state``)."""
        query: dict[str, Any] = {"state": PENDING}
        if site is not None:
            query["site"] = site
        return sorted(self.notices.find(query), key=lambda n: n["created_at"])

    def by_ids(self, ids: Iterable[str]) -> dict[str, dict[str, Any]]:
        """``id → notice`` (without its text) of these notices."""
        found = {}
        for chunk in batches(sorted(set(ids)), ID_BATCH):
            for doc in self.notices.find({"_id": {"$in": chunk}}, {"text": 0, "evidence": 0}):
                found[doc["_id"]] = doc
        return found

    def of_site(self, site: str, limit: int = 50) -> list[dict[str, Any]]:
        """A site's notices, newest first (index ``site, created_at``)."""
        found = self.notices.find(
            {"site": site}, {"text": 0}, sort=[("created_at", DESCENDING)], limit=limit
        )
        return list(found)
