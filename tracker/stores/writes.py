"""Bulk writes by ``_id`` that insert the documents known to be new.

The stores write most documents as upserts by ``_id`` (a page by its URL, a match by URL and
master, a day's record of a page), and most of those documents are new: a crawl meets new
pages. An upsert of an ``_id`` that is not stored costs the server a lookup and an update
where an insert costs a write; on SecantusDB 2 to 4 times the CPU (measured over bulks of 12:
a page 1.17 against 0.50 ms, a match 1.10 against 0.27). The stores read which ids exist
before they write (their hashes, their open matches), so they :func:`write` inserts for the
others. An insert that meets a document stored meanwhile (another process writing the same
id) is redone as its upsert: the result is what the upserts alone would have written.
"""

from __future__ import annotations

from collections.abc import Container, Sequence
from dataclasses import dataclass, field
from typing import Any

from pymongo import InsertOne, UpdateOne
from pymongo.collection import Collection
from pymongo.errors import BulkWriteError

DUPLICATE_KEY = 11000


@dataclass(frozen=True)
class Upsert:
    """The document ``_id``: ``fields`` set, ``on_insert`` set only when it is created,
    ``unset`` removed; ``key`` holds more fields of the filter (a shard key), stored too."""

    _id: str
    fields: dict[str, Any]
    on_insert: dict[str, Any] = field(default_factory=dict)
    unset: tuple[str, ...] = ()
    key: dict[str, Any] = field(default_factory=dict)

    def update(self) -> UpdateOne:
        update: dict[str, Any] = {"$set": self.fields}
        if self.on_insert:
            update["$setOnInsert"] = self.on_insert
        if self.unset:
            update["$unset"] = dict.fromkeys(self.unset, "")
        return UpdateOne({"_id": self._id, **self.key}, update, upsert=True)

    def document(self) -> dict[str, Any]:
        return {"_id": self._id, **self.key, **self.fields, **self.on_insert}


def write(collection: Collection, upserts: Sequence[Upsert], new_ids: Container[str]) -> int:
    """One unordered bulk write: inserts for the ids in ``new_ids``, upserts for the others.
    Returns the number of documents created."""
    if not upserts:
        return 0
    ops = [InsertOne(u.document()) if u._id in new_ids else u.update() for u in upserts]
    try:
        result = collection.bulk_write(ops, ordered=False)
    except BulkWriteError as error:
        details = error.details
        errors = details.get("writeErrors", [])
        if (
            not errors
            or details.get("writeConcernErrors")
            or any(
                e.get("code") != DUPLICATE_KEY or not isinstance(ops[e["index"]], InsertOne)
                for e in errors
            )
        ):
            raise
        again = collection.bulk_write([upserts[e["index"]].update() for e in errors], ordered=False)
        return details.get("nInserted", 0) + details.get("nUpserted", 0) + again.upserted_count
    return result.inserted_count + result.upserted_count
