"""Re-keying masters: ``tracker index migrate-ids`` (:mod:`tracker.matching.migrate_ids`).

Books were once stored as ``WORK/0001``, ``WORK/0002``… by a chapter's position in its file;
they are now ``WORK/KEY`` (:func:`tracker.text.chapters.chapter_key`). A master's id is its
``_id``, which MongoDB cannot change: a re-keyed master is copied under its new id (the same
``n``, text and fingerprints, so the Redis index, which names masters by ``n``, needs no
change), the records that name it are rewritten, and the old one is removed.

``id_migrations`` holds the plan, one document per master (``_id`` the old id, ``new``,
``state`` ``planned`` then ``done``), written before anything moves: a run cut short is
finished from it by the next, and a run over a migrated library plans nothing. It stays as the
record of what was renamed.

What names masters and is rewritten: ``matches`` (their ``_id`` is ``URL`` NUL ``doc id``: a
match is copied under its new ``_id``), ``pages.matched_doc_ids``, ``page_days.doc_ids``,
``alerts.doc_id``, ``takedowns.doc_ids``, ``discovery_queries.doc_id``. Evidence bundles,
captures and notices already made are records of what was sent or sealed, and keep the ids
they were made with.
"""

from __future__ import annotations

from collections.abc import Iterator

from pymongo import ASCENDING
from pymongo.database import Database

from tracker.batching import ID_BATCH, batches

PLANNED, DONE = "planned", "done"
#: The records that name masters in a list: collection, field.
_LISTS = (("pages", "matched_doc_ids"), ("page_days", "doc_ids"), ("takedowns", "doc_ids"))
#: The records that name one master: collection, field.
_SINGLES = (("alerts", "doc_id"), ("discovery_queries", "doc_id"))


class IdMigrationStore:
    def __init__(self, db: Database) -> None:
        self.db = db
        self.masters = db["masters"]
        self.plan = db["id_migrations"]

    def books(self) -> Iterator[dict]:
        """``_id``, ``n``, ``work``, ``title``, ``source`` of every master, by work then ``n``."""
        fields = {"n": 1, "work": 1, "title": 1, "source": 1}
        return self.masters.find({}, fields).sort([("work", ASCENDING), ("n", ASCENDING)])

    def taken(self, doc_ids: list[str]) -> dict[str, int]:
        """``id → n`` of the masters stored under these ids."""
        found = {}
        for chunk in batches(doc_ids, ID_BATCH):
            for doc in self.masters.find({"_id": {"$in": chunk}}, {"n": 1}):
                found[str(doc["_id"])] = int(doc["n"])
        return found

    def add_plan(self, renames: list[tuple[str, str]]) -> None:
        for chunk in batches(renames, ID_BATCH):
            self.plan.insert_many(
                [{"_id": old, "new": new, "state": PLANNED} for old, new in chunk]
            )

    def planned(self) -> list[tuple[str, str]]:
        return [(d["_id"], d["new"]) for d in self.plan.find({"state": PLANNED})]

    def done_count(self) -> int:
        return self.plan.count_documents({"state": DONE})

    def rename(self, renames: list[tuple[str, str]]) -> None:
        """Carry out these planned renames (each step may be run again: a copy already made is
        not made twice, a record already rewritten is not found again)."""
        mapping = dict(renames)
        olds = list(mapping)
        copies = []
        taken = self.taken(list(mapping.values()))
        for doc in self.masters.find({"_id": {"$in": olds}}):
            new = mapping[doc["_id"]]
            if new not in taken:
                copies.append({**doc, "_id": new})
        if copies:
            self.masters.insert_many(copies)
        self._rename_matches(mapping)
        for name, field in _LISTS:
            collection = self.db[name]
            for doc in collection.find({field: {"$in": olds}}, {field: 1}):
                renamed = [mapping.get(str(d), d) for d in doc.get(field) or ()]
                collection.update_one({"_id": doc["_id"]}, {"$set": {field: renamed}})
        for name, field in _SINGLES:
            collection = self.db[name]
            for old, new in mapping.items():
                collection.update_many({field: old}, {"$set": {field: new}})
        self.masters.delete_many({"_id": {"$in": olds}})
        self.plan.update_many({"_id": {"$in": olds}}, {"$set": {"state": DONE}})

    def _rename_matches(self, mapping: dict[str, str]) -> None:
        matches = self.db["matches"]
        for doc in list(matches.find({"doc_id": {"$in": list(mapping)}})):
            new = mapping[doc["doc_id"]]
            new_id = f"{doc['url']}\x00{new}"
            if matches.find_one({"_id": new_id}, {"_id": 1}) is None:
                matches.insert_one({**doc, "_id": new_id, "doc_id": new})
            matches.delete_one({"_id": doc["_id"]})
