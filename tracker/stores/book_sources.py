"""Imported book sources (see :mod:`tracker.booksources`) in MongoDB.

``book_sources``: one document per source (``_id`` its name, as Legado keys them too, with the
host added when two sites share a name), holding the ``host`` (a
:func:`~tracker.model.site_key`), ``url``, ``runnable`` and ``why_not`` (why it cannot be run:
``needs script: …``, a missing rule), the source's JSON as imported (``raw``, kept for runnable
sources only), ``imported_at`` and ``file`` (where it came from); and, from its runs,
``last_run`` with what the last one did (works searched, books found, chapters read, copies).
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from pymongo.database import Database


class BookSourceStore:
    def __init__(self, db: Database) -> None:
        self.sources = db["book_sources"]

    def save(
        self, summary: dict[str, Any], raw: dict[str, Any] | None, file: str, now: datetime
    ) -> str:
        """Store one imported source (``summary``: name, url, host, runnable, why_not); a
        source of the same name on another host is kept under ``name @ host``. Its key."""
        key = summary["name"]
        stored = self.sources.find_one({"_id": key}, {"host": 1})
        if stored is not None and stored.get("host") != summary["host"]:
            key = f"{summary['name']} @ {summary['host']}"
        fields = {**summary, "raw": raw if summary["runnable"] else None}
        fields.update(imported_at=now, file=file)
        self.sources.update_one({"_id": key}, {"$set": fields}, upsert=True)
        return key

    def runnable(self) -> list[dict[str, Any]]:
        """The sources that can be run, by name."""
        return sorted(self.sources.find({"runnable": True}), key=lambda doc: doc["_id"])

    def all(self) -> list[dict[str, Any]]:
        """Every imported source (without its JSON), by name."""
        return sorted(self.sources.find({}, {"raw": 0}), key=lambda doc: doc["_id"])

    def ran(self, key: str, result: dict[str, Any], now: datetime) -> None:
        self.sources.update_one({"_id": key}, {"$set": {"last_run": {**result, "at": now}}})
