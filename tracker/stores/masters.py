"""The master library (母体库) in MongoDB: documents and their fingerprints.

``masters``: one document per master chapter or article, ``_id`` = the rights holder's id, with
a small integer ``n`` used in the Redis index (postings stay small), the text, and its
fingerprints (SimHash, DNA windows, anchors), so the Redis index can be rebuilt without
recomputing anything. One document per master, not two: SecantusDB stores a master 1.5–2x
faster that way.

Every change is stamped with the *library version* it made (``changed_in``; the counter
``counters.library_version`` advances once per ingest batch or deletion) and stays *pending*
(``pending: true``, with the fingerprints it replaces) until the Redis index holds it: see
:class:`tracker.library.MasterLibrary` for how a change that was cut short is finished.
"""

from __future__ import annotations

from collections.abc import Collection as Container
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime

from pymongo import ASCENDING, InsertOne, UpdateOne
from pymongo.collection import Collection
from pymongo.database import Database
from pymongo.errors import BulkWriteError

from tracker.fingerprints.document import VERSION as FINGERPRINT_VERSION
from tracker.fingerprints.document import DocumentFingerprint, fingerprint_many
from tracker.model import MasterDocument
from tracker.stores.counters import allocate, increment

DUPLICATE_KEY = 11000


@dataclass(frozen=True)
class IndexedPrints:
    """What the index may hold for a stored master: ``n``, its current fingerprint (None if
    made by an older version of the fingerprinting code) and, while a change to it is pending,
    the fingerprints it replaced."""

    n: int
    fingerprint: DocumentFingerprint | None
    replaced: tuple[DocumentFingerprint, ...] = ()

    def all(self) -> list[DocumentFingerprint]:
        return [*self.replaced, *([self.fingerprint] if self.fingerprint is not None else [])]


class MasterStore:
    def __init__(self, db: Database) -> None:
        self.db = db
        self.masters = db["masters"]
        self.counters = db["counters"]

    def ensure_indexes(self) -> None:
        self.masters.create_index([("n", ASCENDING)], unique=True)
        self.masters.create_index([("work", ASCENDING)])
        self.masters.create_index([("added_at", ASCENDING)])
        self.masters.create_index([("changed_in", ASCENDING)])
        self.masters.create_index([("pending", ASCENDING)])

    def allocate_ns(self, count: int) -> range:
        """Reserve ``count`` new integer ids in one atomic step."""
        return allocate(self.counters, "master_n", count)

    def next_version(self) -> int:
        """Advance the library version (every ingest batch and every deletion does)."""
        return increment(self.counters, LIBRARY_VERSION)

    def version(self) -> int:
        doc = self.counters.find_one({"_id": LIBRARY_VERSION})
        return int(doc["seq"]) if doc else 0

    def existing(self, doc_ids: Iterable[str]) -> dict[str, IndexedPrints]:
        """What the index may hold for each of these ids already in the library."""
        cursor = self.masters.find({"_id": {"$in": list(doc_ids)}}, _WITHOUT_TEXT)
        return {d["_id"]: _indexed_prints(d) for d in cursor}

    def save(
        self,
        rows: list[tuple[int, MasterDocument, DocumentFingerprint, list[DocumentFingerprint]]],
        new_ids: Container[str],
        version: int,
    ) -> None:
        """Store masters and their fingerprints as changes of library ``version``, *pending*
        until :meth:`settle`: each with the fingerprints it replaces, which the index may still
        hold. ``new_ids`` are known not to be stored yet and are inserted (an upsert costs the
        server a lookup first: 2.5x slower on SecantusDB)."""
        now = datetime.now(UTC)
        masters = []
        for n, doc, fp, replaced in rows:
            fields = {
                "n": n,
                "work": doc.work,
                "title": doc.title,
                "text": doc.text,
                "source": doc.source,
                "updated_at": now,
                "changed_in": version,
                "pending": True,
                "replaced": [old.to_mongo() for old in replaced],
                **fp.to_mongo(),
            }
            masters.append((doc.doc_id, fields, {"added_at": now}))
        _write(self.masters, masters, new_ids)

    def mark_deleted(self, doc_id: str, version: int) -> IndexedPrints | None:
        """Mark a master for deletion (pending until its index entries are gone)."""
        doc = self.masters.find_one_and_update(
            {"_id": doc_id},
            {"$set": {"deleted": True, "pending": True, "changed_in": version}},
            projection=_WITHOUT_TEXT,
        )
        return _indexed_prints(doc) if doc else None

    def settle(self, doc_ids: Iterable[str], version: int | None = None) -> None:
        """The index now holds exactly these masters' current fingerprints: end their pending
        state (only that of ``version``'s change, if given: a later change stays pending), and
        remove those that were marked deleted."""
        query: dict = {"_id": {"$in": list(doc_ids)}, "pending": True}
        if version is not None:
            query["changed_in"] = version
        self.masters.delete_many({**query, "deleted": True})
        self.masters.update_many(query, {"$unset": {"pending": "", "replaced": ""}})

    def pending(self) -> list[dict]:
        """Masters whose change may be only partly in the index (a writer died): ``_id``,
        ``changed_in``, ``deleted`` and :class:`IndexedPrints` under ``prints``."""
        cursor = self.masters.find({"pending": True}, _WITHOUT_TEXT)
        return [
            {
                "_id": d["_id"],
                "changed_in": int(d.get("changed_in") or 0),
                "deleted": bool(d.get("deleted")),
                "prints": _indexed_prints(d),
            }
            for d in cursor
        ]

    def has_pending(self) -> bool:
        found = self.masters.find({"pending": True}, {"_id": 1}, limit=1)
        return next(iter(found), None) is not None

    def save_fingerprints(self, rows: Iterable[tuple[str, DocumentFingerprint]]) -> None:
        """Store recomputed fingerprints of masters already stored."""
        _write(self.masters, [(doc_id, fp.to_mongo(), None) for doc_id, fp in rows])

    def by_ns(self, ns: Iterable[int]) -> dict[int, dict]:
        """``n → master document`` with its text, in one indexed query (masters being
        deleted left out)."""
        cursor = self.masters.find({"n": {"$in": [int(n) for n in ns]}}, _WITHOUT_PRINTS)
        return {int(d["n"]): d for d in cursor if not d.get("deleted")}

    def changed_since(self, version: int) -> Iterator[dict]:
        """``_id``, ``n``, ``work``, ``title``, ``text``, ``changed_in`` of the masters added or
        replaced after library ``version``, read as they are used."""
        cursor = self.masters.find(
            {"changed_in": {"$gt": version}},
            {"text": 1, "n": 1, "work": 1, "title": 1, "changed_in": 1, "deleted": 1},
            batch_size=500,
        )
        return (d for d in cursor if not d.get("deleted"))

    def iter_fingerprints(
        self, batch_size: int = 1000
    ) -> Iterator[tuple[int, DocumentFingerprint | None]]:
        """Every stored fingerprint by ``n`` (masters being deleted left out); None for one
        made by an older version of the fingerprinting code (to be recomputed from the
        text)."""
        for doc in self.masters.find({}, _WITHOUT_TEXT, batch_size=batch_size):
            if not doc.get("deleted"):
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


LIBRARY_VERSION = "library_version"
Row = tuple[str, dict, dict | None]  # _id, fields, fields set only on insert
_PRINT_FIELDS = ("simhash", "dna", "anchors", "tokens", "replaced")  # tokens: by version 1
_WITHOUT_PRINTS = dict.fromkeys(_PRINT_FIELDS, 0)
_WITHOUT_TEXT = {"text": 0, "tokens": 0}


def _fingerprint(doc: dict) -> DocumentFingerprint | None:
    """The fingerprint stored in a masters document; None if missing or made by an older
    version of the fingerprinting code (to be recomputed from the text)."""
    if doc.get("version") != FINGERPRINT_VERSION:
        return None
    return DocumentFingerprint.from_mongo(doc)


def _indexed_prints(doc: dict) -> IndexedPrints:
    replaced = [_fingerprint(old) for old in doc.get("replaced") or ()]
    return IndexedPrints(
        int(doc["n"]), _fingerprint(doc), tuple(fp for fp in replaced if fp is not None)
    )


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
