"""What ``tracker demo`` left in a database (``demo``: one document), so that a later demo tells
a library holding only the demo's data from one holding the user's own.

The demo now always keeps to a database of its own (:mod:`tracker.cli.demo`); earlier
versions wrote into the tracker's own database on a fresh install, and ``tracker demo
--clear`` reads this mark to remove what they left there, only while it holds nothing else.
The mark names the sample's master ids, the base URLs of the local sites it crawled and the
library version its ingest made. A database holds only the
demo's data while it has the mark, every master is one of those ids, every page is under one of
those URLs and the library version is that one (an ingest that changes a master, a deletion or
a crawl of the user's advances one of them: masters ingested again as they are stored leave the
version as it was); a database without the mark is the demo's to use only when it holds no
master and no page.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from datetime import UTC, datetime
from enum import Enum

from pymongo.database import Database

from tracker.stores.masters import MasterStore

MARK = "demo"
#: The collections of the record the demo fills (the library, its journal, log and counters, the
#: pages, their matches and days, mirror groups, runs and stored reports), emptied when a demo
#: starts again on a library that holds only its data. Never the console's users or the
#: scheduler's jobs and ledger.
RECORD = (
    "masters",
    "library_journal",
    "library_changes",
    "counters",
    "pages",
    "matches",
    "page_days",
    "clusters",
    "cluster_members",
    "crawl_runs",
    "rematch_runs",
    "rematch_mark",
    "reports",
)


class Holds(Enum):
    NOTHING = "nothing"  # no master, no page: a fresh install
    DEMO = "demo"  # only what a demo left
    DATA = "data"  # the user's own data (perhaps beside a demo's)


class DemoStore:
    def __init__(self, db: Database) -> None:
        self.db = db
        self.marks = db[MARK]

    def holds(self) -> Holds:
        """What the database holds (a few reads, each stopping at its first document)."""
        masters, pages = self.db["masters"], self.db["pages"]
        mark = self.marks.find_one({"_id": MARK})
        if mark is None:
            empty = masters.find_one({}, {"_id": 1}) is None
            return Holds.NOTHING if empty and pages.find_one({}, {"_id": 1}) is None else Holds.DATA
        if masters.find_one({"_id": {"$nin": list(mark.get("masters", []))}}, {"_id": 1}):
            return Holds.DATA
        sites = "|".join(re.escape(url) for url in mark.get("sites", []))
        others = {"_id": {"$not": re.compile(f"^(?:{sites})")}} if sites else {}
        if pages.find_one(others, {"_id": 1}) is not None:
            return Holds.DATA
        version = mark.get("version")
        if version is not None and MasterStore(self.db).version() != version:
            return Holds.DATA
        return Holds.DEMO

    def mark(self, masters: Iterable[str], version: int | None = None) -> None:
        """Record the demo's master ids (before its ingest: a demo cut short is still known)
        and, once ingested, the library version it made."""
        self.marks.update_one(
            {"_id": MARK},
            {"$set": {"masters": sorted(masters), "version": version, "at": datetime.now(UTC)}},
            upsert=True,
        )

    def marked_masters(self) -> list[str]:
        """The master ids the demo's mark names."""
        mark = self.marks.find_one({"_id": MARK}, {"masters": 1}) or {}
        return [str(doc_id) for doc_id in mark.get("masters", [])]

    def add_site(self, base_url: str) -> None:
        """Record a local site the demo is about to crawl (its pages are the demo's)."""
        self.marks.update_one({"_id": MARK}, {"$addToSet": {"sites": base_url}}, upsert=True)

    def clear(self) -> None:
        """Empty the record and the mark, keeping every collection's indexes (a database that
        holds only the demo's data: small). The Redis side is the caller's."""
        for name in (*RECORD, MARK):
            self.db[name].delete_many({})
