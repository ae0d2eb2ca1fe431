"""The master library (母体库) in MongoDB: documents and their fingerprints.

``masters``: one document per master chapter or article, ``_id`` = the rights holder's id, with
a small integer ``n`` used in the Redis index (postings stay small), the text, and its
fingerprints (SimHash, DNA windows, anchors), so the Redis index can be rebuilt without
recomputing anything. One document per master, not two: SecantusDB stores a master 1.5–2x
faster that way.
"""

from __future__ import annotations

from collections.abc import Collection as Container
from collections.abc import Iterable, Iterator
from datetime import UTC, datetime

from pymongo import ASCENDING, InsertOne, ReturnDocument, UpdateOne
from pymongo.collection import Collection
from pymongo.database import Database
from pymongo.errors import BulkWriteError

from tracker.fingerprints.document import VERSION as FINGERPRINT_VERSION
from tracker.fingerprints.document import DocumentFingerprint, fingerprint_many
from tracker.model import MasterDocument

DUPLICATE_KEY = 11000


class MasterStore:
    def __init__(self, db: Database) -> None:
        self.db = db
        self.masters = db["masters"]
        self.counters = db["counters"]

    def ensure_indexes(self) -> None:
        self.masters.create_index([("n", ASCENDING)], unique=True)
        self.masters.create_index([("work", ASCENDING)])
        self.masters.create_index([("added_at", ASCENDING)])

    def allocate_ns(self, count: int) -> range:
        """Reserve ``count`` new integer ids in one atomic step."""
        if count <= 0:
            return range(0)
        doc = self.counters.find_one_and_update(
            {"_id": "master_n"},
            {"$inc": {"seq": count}},
            upsert=True,
            return_document=ReturnDocument.AFTER,
        )
        end = int(doc["seq"]) + 1
        return range(end - count, end)

    def existing(self, doc_ids: Iterable[str]) -> dict[str, tuple[int, DocumentFingerprint | None]]:
        """``doc_id → (n, stored fingerprint)`` for ids already in the library."""
        cursor = self.masters.find({"_id": {"$in": list(doc_ids)}}, _WITHOUT_TEXT)
        return {d["_id"]: (int(d["n"]), _fingerprint(d)) for d in cursor}

    def save(
        self,
        rows: list[tuple[int, MasterDocument, DocumentFingerprint]],
        new_ids: Container[str] = (),
    ) -> None:
        """Store masters and their fingerprints; ``new_ids`` are known not to be stored yet and
        are inserted (an upsert costs the server a lookup first: 2.5x slower on SecantusDB)."""
        now = datetime.now(UTC)
        masters = []
        for n, doc, fp in rows:
            fields = {
                "n": n,
                "work": doc.work,
                "title": doc.title,
                "text": doc.text,
                "source": doc.source,
                "updated_at": now,
                **fp.to_mongo(),
            }
            masters.append((doc.doc_id, fields, {"added_at": now}))
        _write(self.masters, masters, new_ids)

    def save_fingerprints(self, rows: Iterable[tuple[str, DocumentFingerprint]]) -> None:
        """Store recomputed fingerprints of masters already stored."""
        _write(self.masters, [(doc_id, fp.to_mongo(), None) for doc_id, fp in rows])

    def delete(self, doc_id: str) -> tuple[int, DocumentFingerprint] | None:
        existing = self.existing([doc_id]).get(doc_id)
        if existing is None:
            return None
        self.masters.delete_one({"_id": doc_id})
        n, fp = existing
        return n, fp  # type: ignore[return-value]

    def by_ns(self, ns: Iterable[int]) -> dict[int, dict]:
        """``n → master document`` with its text, in one indexed query."""
        cursor = self.masters.find({"n": {"$in": [int(n) for n in ns]}}, _WITHOUT_PRINTS)
        return {int(d["n"]): d for d in cursor}

    def iter_fingerprints(
        self, batch_size: int = 1000
    ) -> Iterator[tuple[int, DocumentFingerprint | None]]:
        """Every stored fingerprint by ``n``; None for one made by an older version of the
        fingerprinting code (to be recomputed from the text)."""
        for doc in self.masters.find({}, _WITHOUT_TEXT, batch_size=batch_size):
            yield int(doc["n"]), _fingerprint(doc)

    def refingerprint(self, ns: Iterable[int]) -> list[tuple[int, DocumentFingerprint]]:
        """Recompute and store the fingerprints of masters ``ns`` from their text."""
        docs = self.by_ns(ns)
        prints = fingerprint_many([doc["text"] for doc in docs.values()])
        rows = {n: (doc["_id"], fp) for (n, doc), (_, fp) in zip(docs.items(), prints, strict=True)}
        self.save_fingerprints(rows.values())
        return [(n, fp) for n, (_, fp) in rows.items()]

    def drop_legacy(self) -> None:
        """Remove what version 1 stored beside the masters: fingerprints in a collection of
        their own, alignment tokens in each master (both recomputed from the text now)."""
        self.db.drop_collection("fingerprints")
        self.masters.update_many({"tokens": {"$exists": True}}, {"$unset": {"tokens": ""}})

    def count(self) -> int:
        return self.masters.estimated_document_count()


Row = tuple[str, dict, dict | None]  # _id, fields, fields set only on insert
_PRINT_FIELDS = ("simhash", "dna", "anchors", "tokens")  # tokens: stored by version 1
_WITHOUT_PRINTS = dict.fromkeys(_PRINT_FIELDS, 0)
_WITHOUT_TEXT = {"text": 0, "tokens": 0}


def _fingerprint(doc: dict) -> DocumentFingerprint | None:
    """The fingerprint stored in a masters document; None if missing or made by an older
    version of the fingerprinting code (to be recomputed from the text)."""
    if doc.get("version") != FINGERPRINT_VERSION:
        return None
    return DocumentFingerprint.from_mongo(doc)


def _upsert(doc_id: str, fields: dict, on_insert: dict | None = None) -> UpdateOne:
    update: dict = {"$set": fields}
    if on_insert:
        update["$setOnInsert"] = on_insert
    return UpdateOne({"_id": doc_id}, update, upsert=True)


def _write(collection: Collection, rows: list[Row], new_ids: Container[str] = ()) -> None:
    """One unordered bulk write: inserts for ``new_ids``, upserts for the others. An insert
    that meets a document stored meanwhile (another process ingesting the same id) is retried
    as an upsert."""
    if not rows:
        return
    ops = [
        InsertOne({"_id": row[0], **row[1], **(row[2] or {})})
        if row[0] in new_ids
        else _upsert(*row)
        for row in rows
    ]
    try:
        collection.bulk_write(ops, ordered=False)
    except BulkWriteError as error:
        errors = error.details.get("writeErrors", [])
        if not errors or any(e.get("code") != DUPLICATE_KEY for e in errors):
            raise
        collection.bulk_write([_upsert(*rows[e["index"]]) for e in errors], ordered=False)
