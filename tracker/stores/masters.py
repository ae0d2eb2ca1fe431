"""The master library (母体库) in MongoDB: documents and their fingerprints.

``masters``: one document per master chapter or article, ``_id`` = the rights holder's id, with
a small integer ``n`` used in the Redis index (postings stay small), the text, and its
fingerprints (SimHash, DNA windows, anchors), so the Redis index can be rebuilt without
recomputing anything. One document per master, not two: SecantusDB stores a master 1.5–2x
faster that way.

Every change is stamped with the *library version* it made (``changed_in``; the counter
``counters.library_version`` advances once per ingest batch or deletion) and written in the
journal (``library_journal``: one document per change in progress, with the ids it touches and
the fingerprints they replace, which the index may still hold) until the Redis index holds it:
see :class:`tracker.matching.library.MasterLibrary` for how a change that was cut short is finished.
One journal document per batch, not a mark on each master: clearing 200 marks cost 200
commits, 3.6 ms a master on SecantusDB, more than storing it.

Which masters each version added or replaced is also logged, one small document per batch
(``library_changes``: ``{_id: version, ids}``), so ``tracker rematch`` reads the masters changed
since a version by ``_id`` equalities rather than a range over ``masters`` (a range reads the
whole collection on SecantusDB, 5 GB at a million chapters), and ``masters`` needs no index on
``changed_in`` (each index costs SecantusDB ~0.07 ms a master stored). The log is kept, as
an oplog is: ~20 bytes a master.
"""

from __future__ import annotations

import hashlib
from collections import Counter, defaultdict
from collections.abc import Collection as Container
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from pymongo import ASCENDING, ReturnDocument
from pymongo.database import Database

from tracker.batching import ID_BATCH, batches
from tracker.fingerprints.document import VERSION as FINGERPRINT_VERSION
from tracker.fingerprints.document import DocumentFingerprint, fingerprint_many
from tracker.model import MasterDocument
from tracker.stores.counters import allocate, increment
from tracker.stores.writes import Upsert, write


@dataclass(frozen=True)
class IndexedPrints:
    """What the index may hold for a stored master: ``n``, its current fingerprint (None if
    made by an older version of the fingerprinting code) and, while a change to it is journaled,
    the fingerprints it replaced; with the library version that stored it, its source and the
    digest of what it holds (:func:`digest`)."""

    n: int
    fingerprint: DocumentFingerprint | None
    replaced: tuple[DocumentFingerprint, ...] = ()
    changed_in: int = 0
    source: str = ""
    digest: str = ""
    title: str = ""

    def all(self) -> list[DocumentFingerprint]:
        return [*self.replaced, *([self.fingerprint] if self.fingerprint is not None else [])]

    def same(self, doc: MasterDocument) -> bool:
        """Whether ``doc`` is what is stored, fingerprinted by this version of the code."""
        return self.fingerprint is not None and self.digest == digest(doc)


def digest(doc: MasterDocument) -> str:
    """A digest of a master's work, title and text: an ingest leaves a master with the same
    digest as it is (its source, a file name and line, may move)."""
    data = "\x00".join((doc.work, doc.title, doc.text)).encode("utf-8", "surrogatepass")
    return hashlib.blake2b(data, digest_size=16).hexdigest()


@dataclass(frozen=True)
class MasterEntry:
    """A stored master as the library's listing shows it (no text, no fingerprints)."""

    doc_id: str
    work: str
    title: str
    length: int  # characters after normalisation
    added_at: datetime | None
    updated_at: datetime | None


class MasterStore:
    def __init__(self, db: Database) -> None:
        self.db = db
        self.masters = db["masters"]
        self.counters = db["counters"]
        self.journal = db["library_journal"]
        self.changes = db["library_changes"]

    def allocate_ns(self, count: int) -> range:
        """Reserve ``count`` new integer ids in one atomic step."""
        return allocate(self.counters, "master_n", count)

    def next_version(self) -> int:
        """Advance the library version (every ingest batch and every deletion does)."""
        return increment(self.counters, LIBRARY_VERSION)

    def version(self) -> int:
        doc = self.counters.find_one({"_id": LIBRARY_VERSION}, {"seq": 1})
        return int(doc.get("seq", 0)) if doc else 0  # an empty library may have a count only

    def existing(self, doc_ids: Iterable[str]) -> dict[str, IndexedPrints]:
        """What the index may hold for each of these ids already in the library (read in
        lists of ``ID_BATCH``: SecantusDB answers a long ``$in`` that finds its documents in
        more than linear time)."""
        found = {}
        for chunk in batches(list(doc_ids), ID_BATCH):
            for d in self.masters.find({"_id": {"$in": chunk}}, _WITHOUT_TEXT):
                found[d["_id"]] = _indexed_prints(d)
        return found

    def save(
        self,
        rows: list[tuple[int, MasterDocument, DocumentFingerprint]],
        new_ids: Container[str],
        version: int,
    ) -> None:
        """Store masters and their fingerprints as changes of library ``version`` (journaled
        first with :meth:`begin`). ``new_ids`` are known not to be stored yet and are inserted
        (an upsert costs the server a lookup first: 2.5x slower on SecantusDB)."""
        # Imported where used: its patterns take ~7 ms to compile, which a check never needs.
        from tracker.text.chapters import document_kind

        now = datetime.now(UTC)
        masters = []
        for n, doc, fp in rows:
            fields = {
                "n": n,
                "work": doc.work,
                "title": doc.title,
                "text": doc.text,
                "source": doc.source,
                "kind": document_kind(doc.text),
                "updated_at": now,
                "changed_in": version,
                "digest": digest(doc),
                **fp.to_mongo(),
            }
            masters.append(Upsert(doc.doc_id, fields, {"added_at": now}))
        write(self.masters, masters, new_ids)

    def begin(self, version: int, changes: list[tuple[str, IndexedPrints]], deleted: bool) -> None:
        """Journal change ``version`` before it is made: each master's id, number and the
        fingerprints the index may hold for it before the change."""
        self.journal.insert_one(
            {
                "_id": version,
                "version": version,
                "deleted": deleted,
                "changes": [
                    {"id": doc_id, "n": prints.n, "prints": [fp.to_mongo() for fp in prints.all()]}
                    for doc_id, prints in changes
                ],
            }
        )

    def end(self, version: int) -> None:
        """Change ``version`` is in MongoDB and the index: out of the journal."""
        self.journal.delete_one({"_id": version})

    def log_change(self, version: int, doc_ids: list[str]) -> None:
        """Log that library ``version`` adds or replaces ``doc_ids`` (with its journal entry,
        before the masters are stored: a change finished from the journal is logged too)."""
        self.counters.update_one(
            {"_id": CHANGES_FROM}, {"$setOnInsert": {"seq": version}}, upsert=True
        )
        self.changes.replace_one({"_id": version}, {"ids": doc_ids}, upsert=True)

    def open_changes(self) -> list[dict]:
        """Changes a writer began and did not end, oldest first: ``version``, ``deleted`` and
        ``changes``, a list of ``(doc id, IndexedPrints)`` whose ``replaced`` are the journaled
        fingerprints and whose ``fingerprint`` is the master's stored one (None if it is not
        stored)."""
        found = []
        for entry in sorted(self.journal.find(_ANY_CHANGE), key=lambda doc: doc["_id"]):
            ids = [change["id"] for change in entry["changes"]]
            stored = self.existing(ids)
            changes = []
            for change in entry["changes"]:
                journaled = tuple(
                    fp for fp in map(_fingerprint, change["prints"]) if fp is not None
                )
                current = stored.get(change["id"])
                fingerprint = current.fingerprint if current is not None else None
                changes.append((change["id"], IndexedPrints(change["n"], fingerprint, journaled)))
            found.append(
                {"version": entry["_id"], "deleted": bool(entry.get("deleted")), "changes": changes}
            )
        return found

    def has_open_changes(self) -> bool:
        return self.journal.find_one(_ANY_CHANGE, {"_id": 1}) is not None

    def clear_journal(self) -> None:
        self.journal.delete_many({})

    def works(self, works: Iterable[str]) -> dict[str, tuple[int, str]]:
        """Per work of ``works`` in the library: how many masters it has, and what they are
        (``chapter`` or ``article``: the kind most of them were stored with; for a work stored
        before kinds were, the kind of one of its masters' text). Through the ``work`` index."""
        from tracker.text.chapters import document_kind

        sizes: Counter[str] = Counter()
        kinds: dict[str, Counter[str]] = defaultdict(Counter)
        for chunk in batches(sorted(set(works)), ID_BATCH):
            for doc in self.masters.find({"work": {"$in": chunk}}, {"work": 1, "kind": 1}):
                sizes[doc["work"]] += 1
                kinds[doc["work"]][doc.get("kind") or ""] += 1
        found = {}
        for work, size in sizes.items():
            stored = [kind for kind, _ in kinds[work].most_common() if kind]
            if stored:
                found[work] = (size, stored[0])
                continue
            doc = self.masters.find_one({"work": work}, {"text": 1}) or {}
            found[work] = (size, document_kind(str(doc.get("text") or "")))
        return found

    def delete(self, doc_ids: list[str]) -> None:
        """Remove these masters (journaled first with :meth:`begin`)."""
        self.masters.delete_many({"_id": {"$in": doc_ids}})

    def save_fingerprints(self, rows: Iterable[tuple[str, DocumentFingerprint]]) -> None:
        """Store recomputed fingerprints of masters already stored."""
        write(self.masters, [Upsert(doc_id, fp.to_mongo()) for doc_id, fp in rows], ())

    def by_ns(self, ns: Iterable[int]) -> dict[int, dict]:
        """``n → master document`` with its text, SimHash (signed, as stored) and word cuts, by
        the index on ``n`` (not the fingerprints only the index needs), in lists of
        ``ID_BATCH``: SecantusDB matches each document it finds against the whole ``$in``, so
        a check's batch of candidates (80-100) cost it 0.14 ms a document in one query and
        0.12 in lists of 50 (256 in one: 0.35)."""
        return self._by_ns(ns, _WITHOUT_PRINTS)

    def unit_sketches(self, ns: Iterable[int]) -> dict[int, dict]:
        """``n → {"version", "unit_sketch"}`` of the masters numbered ``ns`` that exist, by the
        index on ``n`` without their texts (:mod:`tracker.fingerprints.unit_sketch`), in lists
        of ``ID_BATCH`` (as :meth:`by_ns`)."""
        return self._by_ns(ns, _UNIT_SKETCH)

    def _by_ns(self, ns: Iterable[int], projection: dict) -> dict[int, dict]:
        found = {}
        for chunk in batches([int(n) for n in ns], ID_BATCH):
            for d in self.masters.find({"n": {"$in": chunk}}, projection):
                found[int(d["n"])] = d
        return found

    def texts(self, doc_ids: Iterable[str]) -> dict[str, dict[str, Any]]:
        """``doc_id → {"_id", "text", "title", "work", "source"}`` of the masters among
        ``doc_ids`` still in the library (ids read in lists of ``ID_BATCH``)."""
        found: dict[str, dict[str, Any]] = {}
        for chunk in batches(sorted(set(doc_ids)), ID_BATCH):
            for doc in self.masters.find({"_id": {"$in": chunk}}, _TEXT_AND_TITLE):
                found[str(doc["_id"])] = doc
        return found

    def works_of(self, ns: Iterable[int]) -> dict[int, str]:
        """``n → work`` of the masters numbered ``ns`` (index ``n``), without their texts."""
        found = {}
        for chunk in batches(sorted({int(n) for n in ns}), ID_BATCH):
            for doc in self.masters.find({"n": {"$in": chunk}}, {"n": 1, "work": 1}):
                found[int(doc["n"])] = str(doc.get("work", ""))
        return found

    def listing(self, work: str | None = None) -> Iterator[MasterEntry]:
        """Every master, or those of ``work`` in the order ingested (its ``work`` index)."""
        if work is None:
            found = self.masters.find(_LISTED, _ENTRY)
        else:
            found = self.masters.find({**_LISTED, "work": work}, _ENTRY).sort("n", ASCENDING)
        for doc in found:
            yield MasterEntry(
                str(doc["_id"]),
                str(doc.get("work", "")),
                str(doc.get("title", "")),
                int(doc.get("length", 0) or 0),
                doc.get("added_at"),
                doc.get("updated_at"),
            )

    def changed_since(self, version: int) -> Iterator[dict]:
        """``_id``, ``n``, ``work``, ``title``, ``text``, ``changed_in`` of the masters added or
        replaced after library ``version``, read as they are used: from the log of changes
        when it covers them, else (a library stored before the log was kept) by a range on
        ``changed_in``. A master changed again since is read once, as it is now."""
        logged = self.counters.find_one({"_id": CHANGES_FROM}, {"seq": 1})
        if logged is None or int(logged["seq"]) > version + 1:
            yield from self.masters.find(
                {"changed_in": {"$gt": version}}, _CHANGED_FIELDS, batch_size=500
            )
            return
        seen: set[str] = set()
        versions = range(version + 1, self.version() + 1)
        for chunk in batches(versions, ID_BATCH):
            entries = sorted(self.changes.find({"_id": {"$in": list(chunk)}}), key=_version)
            for entry in entries:
                ids = [doc_id for doc_id in entry["ids"] if doc_id not in seen]
                seen.update(ids)
                for part in batches(ids, ID_BATCH):
                    yield from self.masters.find({"_id": {"$in": part}}, _CHANGED_FIELDS)

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
        """How many masters the library holds, as recorded with its version: one small read.
        (Counting the collection is a scan of every master on SecantusDB, 0.8 s at 100,000,
        which every ingest batch and every command that opens the library would pay.) True
        whenever no change is journaled; a library from before the record is counted."""
        doc = self.counters.find_one({"_id": LIBRARY_VERSION}, {"masters": 1})
        return int(doc["masters"]) if doc and "masters" in doc else self.count_stored()

    def count_stored(self) -> int:
        """The masters in the collection, counted (a scan on SecantusDB)."""
        return self.masters.estimated_document_count()

    def recount(self) -> int:
        """Count the masters and record the count (under the write lock, no change open)."""
        count = self.count_stored()
        self.counters.update_one(
            {"_id": LIBRARY_VERSION}, {"$set": {"masters": count}}, upsert=True
        )
        return count

    def counted(self, added: int) -> int:
        """Record that a change (journaled, its masters stored or deleted) added ``added``
        masters (negative: removed); returns the new count."""
        doc = self.counters.find_one_and_update(
            {"_id": LIBRARY_VERSION, "masters": {"$exists": True}},
            {"$inc": {"masters": added}},
            return_document=ReturnDocument.AFTER,
        )
        return int(doc["masters"]) if doc else self.recount()


LIBRARY_VERSION = "library_version"
CHANGES_FROM = "library_changes_from"  # the first library version in library_changes
_CHANGED_FIELDS = {"text": 1, "n": 1, "work": 1, "title": 1, "changed_in": 1}
_WITHOUT_PRINTS = dict.fromkeys(("dna", "anchors", "sentences", "tokens"), 0)
_WITHOUT_TEXT = {"text": 0, "tokens": 0}
_UNIT_SKETCH = {"_id": 0, "n": 1, "version": 1, "unit_sketch": 1}
_TEXT_AND_TITLE = {"text": 1, "title": 1, "work": 1, "source": 1}
_ENTRY = {"work": 1, "title": 1, "length": 1, "added_at": 1, "updated_at": 1}
_LISTED = {"deleted": {"$ne": True}}
# Every journaled change (versions start at 1), read through the index on its version: an
# empty filter, or a range on _id, is a collection scan on SecantusDB.
_ANY_CHANGE = {"version": {"$gt": 0}}


def _fingerprint(doc: dict) -> DocumentFingerprint | None:
    """The fingerprint stored in a masters document; None if missing or made by an older
    version of the fingerprinting code (to be recomputed from the text)."""
    if doc.get("version") != FINGERPRINT_VERSION:
        return None
    return DocumentFingerprint.from_mongo(doc)


def _version(entry: dict) -> int:
    return int(entry["_id"])


def _indexed_prints(doc: dict) -> IndexedPrints:
    return IndexedPrints(
        int(doc["n"]),
        _fingerprint(doc),
        changed_in=int(doc.get("changed_in") or 0),
        source=str(doc.get("source") or ""),
        digest=str(doc.get("digest") or ""),
        title=str(doc.get("title") or ""),
    )
