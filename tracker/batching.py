"""The project's one way of cutting a stream of items into batches (bulk writes, ``$in``
queries, index lookups, pipelined fingerprinting)."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from itertools import islice
from typing import TypeVar

T = TypeVar("T")


def batches(items: Iterable[T], size: int) -> Iterator[list[T]]:
    """``items`` in lists of ``size`` (the last one shorter), read as they are used."""
    iterator = iter(items)
    while batch := list(islice(iterator, size)):
        yield batch
