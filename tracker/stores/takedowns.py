"""Takedown tracking in MongoDB (``takedowns``): every URL a notice was sent for, and what has
become of it since.

One document per URL, ``_id`` the URL: ``site``, ``doc_ids`` (the masters it was noticed for),
``first_noticed`` and ``last_noticed`` (when notices naming it were sent), ``notices`` (their
ids), ``state`` (``noticed`` until first checked, then ``live`` or ``removed``), ``checked_at``
(the last check), ``removed_at`` (the first time it was found removed), ``reappeared`` (how
many times it came back after being removed: stay-down failures), and ``changes``: every
change of state with its time, ``{at, state, status, reason}``, so the state at any past
moment can be read again (a report of an earlier day shows the figures of that day).
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime
from typing import Any

from pymongo import UpdateOne
from pymongo.database import Database

from tracker.batching import ID_BATCH, batches
from tracker.model import site_of

NOTICED, LIVE, REMOVED = "noticed", "live", "removed"


class TakedownStore:
    def __init__(self, db: Database) -> None:
        self.takedowns = db["takedowns"]

    def noticed(self, urls: dict[str, list[str]], notice_id: str, at: datetime) -> None:
        """A notice was sent for these URLs (``url → doc ids``)."""
        ops = [
            UpdateOne(
                {"_id": url},
                {
                    "$set": {"last_noticed": at, "site": site_of(url)},
                    "$setOnInsert": {
                        "first_noticed": at,
                        "state": NOTICED,
                        "reappeared": 0,
                        "changes": [{"at": at, "state": NOTICED, "status": None,
                                     "reason": "notice sent"}],
                    },
                    "$addToSet": {"notices": notice_id, "doc_ids": {"$each": doc_ids}},
                },
                upsert=True,
            )
            for url, doc_ids in urls.items()
        ]  # fmt: skip
        if ops:
            self.takedowns.bulk_write(ops, ordered=False)

    def last_noticed(self, urls: Iterable[str]) -> dict[str, datetime]:
        """When each of ``urls`` was last noticed (those never noticed are left out)."""
        found = {}
        for chunk in batches(sorted(set(urls)), ID_BATCH):
            for doc in self.takedowns.find({"_id": {"$in": chunk}}, {"last_noticed": 1}):
                found[doc["_id"]] = doc["last_noticed"]
        return found

    def of_urls(self, urls: Iterable[str]) -> dict[str, dict[str, Any]]:
        """``url → its document`` for those of ``urls`` ever noticed."""
        found = {}
        for chunk in batches(sorted(set(urls)), ID_BATCH):
            for doc in self.takedowns.find({"_id": {"$in": chunk}}):
                found[doc["_id"]] = doc
        return found

    def all(self, site: str | None = None) -> list[dict[str, Any]]:
        """Every noticed URL (of ``site``: index ``site``)."""
        return list(self.takedowns.find({} if site is None else {"site": site}))

    def noticed_by(self, moment: datetime) -> list[dict[str, Any]]:
        """The URLs first noticed at or before ``moment`` (index ``first_noticed``)."""
        return list(self.takedowns.find({"first_noticed": {"$lte": moment}}))

    def record_checks(self, checks: list[tuple[str, str, int | None, str, datetime]]) -> None:
        """The results of checks, ``(url, state, HTTP status, reason, at)``: each URL's
        ``checked_at`` set, and where its state changed, the change appended (with
        ``removed_at`` on its first removal, ``reappeared`` counted when a removed URL is live
        again)."""
        if not checks:
            return
        stored = {
            doc["_id"]: doc
            for chunk in batches(sorted({c[0] for c in checks}), ID_BATCH)
            for doc in self.takedowns.find({"_id": {"$in": chunk}}, {"state": 1, "removed_at": 1})
        }
        ops = []
        for url, state, status, reason, at in checks:
            doc = stored.get(url)
            if doc is None:
                continue
            update: dict[str, Any] = {"$set": {"checked_at": at, "last_status": status}}
            if doc.get("state") != state:
                update["$set"]["state"] = state
                update["$push"] = {
                    "changes": {"at": at, "state": state, "status": status, "reason": reason}
                }
                if state == REMOVED and not doc.get("removed_at"):
                    update["$set"]["removed_at"] = at
                if state == LIVE and doc.get("state") == REMOVED:
                    update["$inc"] = {"reappeared": 1}
            ops.append(UpdateOne({"_id": url, "state": doc.get("state")}, update))
        if ops:
            self.takedowns.bulk_write(ops, ordered=False)
