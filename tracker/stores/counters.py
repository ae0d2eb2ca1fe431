"""Counters in MongoDB (``counters``: ``{_id: name, seq}``): the library version, master and
page numbers, cluster ids. One atomic ``$inc`` each, so processes never hand out a number
twice."""

from __future__ import annotations

from pymongo import ReturnDocument
from pymongo.collection import Collection


def increment(counters: Collection, name: str, by: int = 1) -> int:
    """Add ``by`` to the counter ``name`` (created at 0); returns its new value."""
    doc = counters.find_one_and_update(
        {"_id": name}, {"$inc": {"seq": by}}, upsert=True, return_document=ReturnDocument.AFTER
    )
    return int(doc["seq"])


def allocate(counters: Collection, name: str, count: int) -> range:
    """Reserve ``count`` new numbers of counter ``name`` in one step."""
    if count <= 0:
        return range(0)
    end = increment(counters, name, count) + 1
    return range(end - count, end)
