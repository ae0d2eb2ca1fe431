"""Where the scheduler's pulls read new master documents from, in MongoDB.

``master_sources``: one cursor document per source (a dropped file, a MongoDB collection),
``_id`` the source's id, holding how far its documents have been ingested
(:class:`SourceCursorStore`; see :mod:`tracker.scheduler.sources` for what each source keeps).

The user's own collection of new documents ``{_id, id?, work?, title?, text}``, on the
tracker's server or another (:class:`SourceCollection`), read in order of a cursor field
(``_id`` by default, or e.g. an ``updated_at`` that the producer sets) with ties broken by
``_id``, from an index on both that the tracker creates when it is allowed to.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from pymongo import ASCENDING, MongoClient
from pymongo.collection import Collection
from pymongo.database import Database
from pymongo.errors import OperationFailure

log = logging.getLogger(__name__)


class SourceCursorStore:
    """The ``master_sources`` collection: one cursor document per source (or dropped file)."""

    def __init__(self, db: Database) -> None:
        self.cursors = db["master_sources"]

    def get(self, source_id: str) -> dict[str, Any]:
        """The cursor of ``source_id`` (empty when it has none yet)."""
        return self.cursors.find_one({"_id": source_id}) or {}

    def many(self, source_ids: list[str]) -> dict[str, dict[str, Any]]:
        """The cursors of these sources that have one, by source id."""
        if not source_ids:
            return {}
        return {doc["_id"]: doc for doc in self.cursors.find({"_id": {"$in": source_ids}})}

    def set(self, source_id: str, **values: Any) -> None:
        """Set these values of the cursor of ``source_id`` (created if it has none)."""
        values["updated_at"] = datetime.now(UTC)
        self.cursors.update_one({"_id": source_id}, {"$set": values}, upsert=True)


@dataclass(frozen=True)
class SourceCollection:
    """New documents of a MongoDB collection, in order of ``cursor_field`` then ``_id``;
    ``client`` is the connection opened for it (None: the tracker's own), closed by
    :meth:`close`."""

    collection: Collection
    cursor_field: str = "_id"
    client: MongoClient | None = None

    @classmethod
    def connect(
        cls,
        default_db: Database,
        collection: str,
        database: str,
        url: str | None = None,
        cursor_field: str = "_id",
    ) -> SourceCollection:
        """Collection ``collection`` of ``database``, on the server at ``url`` (a connection of
        its own) or else on ``default_db``'s."""
        client = MongoClient(url, tz_aware=True, serverSelectionTimeoutMS=10_000) if url else None
        server = client if client is not None else default_db.client
        return cls(server[database][collection], cursor_field or "_id", client)

    @property
    def source_id(self) -> str:
        return f"mongo:{self.collection.database.name}.{self.collection.name}"

    def close(self) -> None:
        if self.client is not None:
            self.client.close()

    def ensure_index(self) -> None:
        """The ordered read needs an index on ``(cursor_field, _id)``; create it when allowed."""
        if self.cursor_field == "_id":
            return
        try:
            self.collection.create_index([(self.cursor_field, ASCENDING), ("_id", ASCENDING)])
        except OperationFailure as exc:
            log.warning(
                "could not create the index (%s, _id) on %s (create it there): %s",
                self.cursor_field,
                self.source_id,
                exc,
            )

    def after(self, cursor: dict[str, Any]) -> Iterator[dict[str, Any]]:
        """The documents after ``cursor`` (``last_id`` and ``last_value``, the cursor field's
        value, of the last document ingested; every document when it has no ``last_id``). Ties
        on the cursor field are read with ``$gte`` and the ones already ingested dropped here,
        so no document is skipped."""
        has_cursor = "last_id" in cursor
        if self.cursor_field == "_id":
            query = {"_id": {"$gt": cursor["last_id"]}} if has_cursor else {}
            yield from self.collection.find(query, sort=[("_id", ASCENDING)], batch_size=500)
            return
        last_value = cursor.get("last_value")
        query = {self.cursor_field: {"$gte": last_value}} if has_cursor else {}
        found = self.collection.find(
            query, sort=[(self.cursor_field, ASCENDING), ("_id", ASCENDING)], batch_size=500
        )
        for doc in found:
            if has_cursor and doc.get(self.cursor_field) == last_value:
                try:
                    if doc["_id"] <= cursor["last_id"]:
                        continue
                except TypeError:  # _ids of mixed types: compare their string forms
                    if str(doc["_id"]) <= str(cursor["last_id"]):
                        continue
            yield doc
