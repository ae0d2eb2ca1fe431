"""The master library (母体库) in MongoDB: documents and their fingerprints.

``masters``: one document per master chapter or article, ``_id`` = the rights holder's id, with
a small integer ``n`` used in the Redis index (postings stay small). ``fingerprints``: the same
``_id`` with the SimHash, DNA windows and anchors, so the Redis index can be rebuilt without
recomputing anything.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime

import numpy as np
from bson import Binary
from pymongo import ASCENDING, ReturnDocument, UpdateOne
from pymongo.database import Database

from tracker.fingerprints.document import VERSION as FINGERPRINT_VERSION
from tracker.fingerprints.document import DocumentFingerprint, fingerprint


@dataclass(frozen=True)
class MasterDocument:
    doc_id: str
    work: str
    title: str
    text: str
    source: str = ""


class MasterStore:
    def __init__(self, db: Database) -> None:
        self.db = db
        self.masters = db["masters"]
        self.fingerprints = db["fingerprints"]
        self.counters = db["counters"]

    def ensure_indexes(self) -> None:
        self.masters.create_index([("n", ASCENDING)], unique=True)
        self.masters.create_index([("work", ASCENDING)])
        self.masters.create_index([("added_at", ASCENDING)])
        self.fingerprints.create_index([("n", ASCENDING)], unique=True)

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
        ids = list(doc_ids)
        found = {d["_id"]: int(d["n"]) for d in self.masters.find({"_id": {"$in": ids}}, {"n": 1})}
        prints = {
            d["_id"]: DocumentFingerprint.from_mongo(d)
            for d in self.fingerprints.find({"_id": {"$in": list(found)}})
        }
        return {doc_id: (n, prints.get(doc_id)) for doc_id, n in found.items()}

    def save(self, rows: list[tuple[int, MasterDocument, DocumentFingerprint]]) -> None:
        now = datetime.now(UTC)
        master_ops, print_ops = [], []
        for n, doc, fp in rows:
            master_ops.append(
                UpdateOne(
                    {"_id": doc.doc_id},
                    {
                        "$set": {
                            "n": n,
                            "work": doc.work,
                            "title": doc.title,
                            "text": doc.text,
                            "source": doc.source,
                            "length": fp.length,
                            "tokens": Binary(fp.tokens.astype("<u2").tobytes()),
                            "updated_at": now,
                        },
                        "$setOnInsert": {"added_at": now},
                    },
                    upsert=True,
                )
            )
            print_ops.append(
                UpdateOne({"_id": doc.doc_id}, {"$set": {"n": n, **fp.to_mongo()}}, upsert=True)
            )
        if master_ops:
            self.masters.bulk_write(master_ops, ordered=False)
            self.fingerprints.bulk_write(print_ops, ordered=False)

    def delete(self, doc_id: str) -> tuple[int, DocumentFingerprint] | None:
        existing = self.existing([doc_id]).get(doc_id)
        if existing is None:
            return None
        self.masters.delete_one({"_id": doc_id})
        self.fingerprints.delete_one({"_id": doc_id})
        n, fp = existing
        return n, fp  # type: ignore[return-value]

    def by_ns(self, ns: Iterable[int]) -> dict[int, dict]:
        """``n → master document`` with its text (no tokens)."""
        cursor = self.masters.find({"n": {"$in": [int(n) for n in ns]}}, {"tokens": 0})
        return {int(d["n"]): d for d in cursor}

    def tokens_by_ns(self, ns: Iterable[int]) -> dict[int, tuple[dict, np.ndarray]]:
        """``n → (master document, pinyin tokens)`` for alignment, in one indexed query (the
        text comes along: evidence offsets need it for the masters that match)."""
        cursor = self.masters.find({"n": {"$in": [int(n) for n in ns]}})
        return {int(d["n"]): (d, np.frombuffer(d.pop("tokens", b""), dtype="<u2")) for d in cursor}

    def iter_fingerprints(
        self, batch_size: int = 1000
    ) -> Iterator[tuple[int, DocumentFingerprint | None]]:
        """Every stored fingerprint by ``n``; None for one made by an older version of the
        fingerprinting code (to be recomputed from the text)."""
        for doc in self.fingerprints.find({}, batch_size=batch_size):
            current = doc.get("version") == FINGERPRINT_VERSION
            yield int(doc["n"]), DocumentFingerprint.from_mongo(doc) if current else None

    def refingerprint(self, ns: Iterable[int]) -> list[tuple[int, DocumentFingerprint]]:
        """Recompute and store the fingerprints (and alignment tokens) of masters ``ns``."""
        rows = []
        for n, doc in self.by_ns(ns).items():
            fp = fingerprint(doc["text"])[1]
            master = MasterDocument(
                doc["_id"],
                doc.get("work", ""),
                doc.get("title", ""),
                doc["text"],
                doc.get("source", ""),
            )
            rows.append((n, master, fp))
        self.save(rows)
        return [(n, fp) for n, _, fp in rows]

    def count(self) -> int:
        return self.masters.estimated_document_count()
