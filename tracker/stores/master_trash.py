"""Masters removed from the library, kept for a while (``master_trash``).

Whatever removes a master or replaces its text (an ingest of a chapter with new text, ``tracker
index delete``, ``ingest --replace-work``, ``demo --clear``) first copies it here: one document
per removed version, ``doc_id``, ``work``, ``title``, ``text``, ``source``, ``reason`` (what
removed it), ``removed_at`` and ``expires_at`` (``master_trash_days`` later). ``tracker index
restore-deleted`` ingests the newest kept version of each asked id again. Expired versions are
removed whenever another is kept (no TTL index: SecantusDB does not run one).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

from pymongo import DESCENDING
from pymongo.database import Database

from tracker.batching import ID_BATCH, batches


class MasterTrash:
    def __init__(self, db: Database, days: int) -> None:
        self.trash = db["master_trash"]
        self.days = days

    def keep(self, masters: Iterable[dict[str, Any]], reason: str) -> int:
        """Keep these masters (``_id``, ``work``, ``title``, ``text``, ``source`` as stored),
        removed for ``reason``; returns how many were kept (none when ``days`` is 0)."""
        if self.days <= 0:
            return 0
        now = datetime.now(UTC)
        rows = [
            {
                "doc_id": str(doc["_id"]),
                "work": str(doc.get("work", "")),
                "title": str(doc.get("title", "")),
                "text": str(doc.get("text", "")),
                "source": str(doc.get("source", "")),
                "reason": reason,
                "removed_at": now,
                "expires_at": now + timedelta(days=self.days),
            }
            for doc in masters
        ]
        if rows:
            self.trash.insert_many(rows)
            self.trash.delete_many({"expires_at": {"$lt": now}})
        return len(rows)

    def newest(
        self, doc_ids: Iterable[str] = (), work: str | None = None, everything: bool = False
    ) -> Iterator[dict[str, Any]]:
        """The newest kept version of each of ``doc_ids``, of each master of ``work``, or (with
        ``everything``) of every master kept, not expired."""
        now = datetime.now(UTC)
        alive = {"expires_at": {"$gte": now}}
        if everything:
            queries = [alive]
        elif work is not None:
            queries = [{**alive, "work": work}]
        else:
            queries = [
                {**alive, "doc_id": {"$in": chunk}}
                for chunk in batches(sorted(set(doc_ids)), ID_BATCH)
            ]
        seen: set[str] = set()
        for query in queries:
            for doc in self.trash.find(query).sort("removed_at", DESCENDING):
                if doc["doc_id"] not in seen:
                    seen.add(doc["doc_id"])
                    yield doc

    def forget(self, ids: Iterable[Any]) -> None:
        """Remove these kept versions (``_id``s of :meth:`newest`): restored."""
        for chunk in batches(list(ids), ID_BATCH):
            self.trash.delete_many({"_id": {"$in": chunk}})

    def count(self) -> int:
        return self.trash.count_documents({"expires_at": {"$gte": datetime.now(UTC)}})
