"""The alert outbox in MongoDB (``alerts``): new copies waiting to be POSTed to the webhook.

One document per new match, ``_id`` the match's (``URL`` NUL ``doc id``), written by the crawl
before the match itself (so a crash between the two re-finds the match new and writes the same
alert again, not a second one): ``url``, ``site``, ``doc_id``, ``work``, ``title``, ``score``,
``first_seen``, ``state`` (``pending`` → ``sending`` while a sender holds it → ``sent``),
``next_at`` (when it may be sent, later after each failure), ``tries``, ``error``.

A sender *claims* due alerts (pending, or sending but abandoned by a sender that died), so
two crawl processes never send the same alert at once; what it could not deliver goes back to
pending with a later ``next_at``.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from pymongo.database import Database
from pymongo.errors import BulkWriteError

from tracker.batching import ID_BATCH, batches
from tracker.stores.writes import DUPLICATE_KEY

PENDING, SENDING, SENT = "pending", "sending", "sent"
#: A claim older than this was left by a sender that died: the alerts are due again.
ABANDONED_AFTER = timedelta(minutes=5)


class AlertOutbox:
    def __init__(self, db: Database) -> None:
        self.alerts = db["alerts"]

    def add(self, alerts: list[dict[str, Any]], now: datetime) -> int:
        """Queue ``alerts`` (each with its ``_id``); one already queued is left as it is.
        Returns how many were queued."""
        if not alerts:
            return 0
        documents = [
            {**alert, "state": PENDING, "next_at": now, "tries": 0, "created_at": now}
            for alert in alerts
        ]
        try:
            return len(self.alerts.insert_many(documents, ordered=False).inserted_ids)
        except BulkWriteError as error:
            errors = error.details.get("writeErrors", [])
            if error.details.get("writeConcernErrors") or any(
                e.get("code") != DUPLICATE_KEY for e in errors
            ):
                raise
            return int(error.details.get("nInserted", 0))

    def claim(self, claimer: str, now: datetime, limit: int = 500) -> list[dict[str, Any]]:
        """Take up to ``limit`` alerts that are due, for ``claimer``: pending ones whose time
        has come, and claims abandoned for ``ABANDONED_AFTER`` (index ``state, next_at``)."""
        due_now = {"state": PENDING, "next_at": {"$lte": now}}
        abandoned = {"state": SENDING, "next_at": {"$lte": now - ABANDONED_AFTER}}
        ids = [doc["_id"] for doc in self.alerts.find(due_now, {"_id": 1}, limit=limit)]
        if len(ids) < limit:
            found = self.alerts.find(abandoned, {"_id": 1}, limit=limit - len(ids))
            ids += [doc["_id"] for doc in found]
        claimed = []
        for chunk in batches(ids, ID_BATCH):
            # The same conditions again: an alert another sender claimed meanwhile is not due.
            self.alerts.update_many(
                {"_id": {"$in": chunk}, "$or": [due_now, abandoned]},
                {"$set": {"state": SENDING, "claimer": claimer, "next_at": now}},
            )
            mine = {"_id": {"$in": chunk}, "claimer": claimer, "state": SENDING}
            claimed += self.alerts.find(mine)
        return claimed

    def sent(self, ids: list[str], now: datetime) -> None:
        for chunk in batches(ids, ID_BATCH):
            self.alerts.update_many(
                {"_id": {"$in": chunk}},
                {"$set": {"state": SENT, "sent_at": now}, "$unset": {"claimer": "", "error": ""}},
            )

    def failed(self, ids: list[str], error: str, retry_at: datetime) -> None:
        """Back to pending, due again at ``retry_at``."""
        for chunk in batches(ids, ID_BATCH):
            self.alerts.update_many(
                {"_id": {"$in": chunk}},
                {
                    "$set": {"state": PENDING, "next_at": retry_at, "error": error},
                    "$unset": {"claimer": ""},
                    "$inc": {"tries": 1},
                },
            )

    def counts(self) -> dict[str, int]:
        """Alerts by state (a small scan of the ``state`` index)."""
        return {
            state: self.alerts.count_documents({"state": state})
            for state in (PENDING, SENDING, SENT)
        }
