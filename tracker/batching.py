"""The project's one way of cutting a stream of items into batches (bulk writes, ``$in``
queries, index lookups, pipelined fingerprinting)."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from itertools import islice
from typing import TypeVar

T = TypeVar("T")

#: Ids per ``{"_id": {"$in": [...]}}`` read. SecantusDB answers an ``$in`` of n ids in more than
#: linear time: 0.15-0.18 ms a document in lists of 50, 0.3 at 100, 1.4-1.9 at 1,000 (pages and
#: matches, 100,000 stored); a real MongoDB is as fast either way.
ID_BATCH = 50


def batches(items: Iterable[T], size: int) -> Iterator[list[T]]:
    """``items`` in lists of ``size`` (the last one shorter), read as they are used."""
    iterator = iter(items)
    while batch := list(islice(iterator, size)):
        yield batch
