"""How the index's tables grow: bucket splits, the stop set, compaction.

A lookup reads whole buckets, so the records it reads per bucket must not grow with the
library (``deploy/CAPACITY.md``): a table whose buckets hold more than their share of records
on average (:func:`split_records`) is *split*, each bucket into two, by the next bit of its
hashes, until they hold fewer. Splits are done from the records alone (a postings record keeps
bits of its hash beyond the bucket, see :mod:`tracker.index.postings`; a SimHash record keeps
its whole fingerprint), under the library's write lock, into keys named by the new depth; the
new depth is then recorded with the index (readers follow it at their next fetch, which reads it
with the buckets in one ``MGET``) and the old keys are removed. A table grows by doubling, so
the work of all its splits is at most twice its final size.

*Compaction* rewrites the buckets a bulk load appended to at their exact size (``APPEND``
over-allocates) and applies the **stop rule** to the anchor tables: a value filed for more than
``cap`` documents keeps one stop marker (a record of document :data:`~tracker.index.postings.STOP`)
instead of its postings, so lookups no longer read them. A marker stays when documents are
deleted (the value was common); ``tracker index rebuild`` recounts.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Protocol

import numpy as np

from tracker.index.postings import CHECK_BITS, STOP, set_docs
from tracker.index.storage import Storage, doc_ids

SPLIT_RECORDS = 128  # a postings table splits when its buckets hold more on average
SPLIT_SIMHASH_RECORDS = 64  # 12-byte records: a SimHash bucket of 64 is ~770 bytes
# The sentence keys' table (``rw``) splits at a quarter of that: a page looks up three times
# as many of its buckets as of the anchors' (~180 against ~60), so they were half the bytes a
# check reads at a million chapters (58 records a bucket, against 28 at 100,000; issue 40).
SENTENCE_SPLIT_SHARE = 0.25
MAX_DEPTH = 24  # 16.7M buckets a table
CHUNK = 4096  # buckets read and written per round trip


class Table(Protocol):
    """What growth needs of a table (:class:`~tracker.index.postings.HashPostings`, a SimHash
    table)."""

    storage: Storage
    name: str
    record: np.dtype
    depth: int

    def bucket_keys(self, buckets: Sequence[int]) -> list[bytes]: ...

    def children(self, rows: np.ndarray, owner: np.ndarray, depth: int) -> np.ndarray: ...


def rewrite(
    table: Table,
    blobs: Sequence[bytes],
    buckets: np.ndarray,
    depth: int | None = None,
    cap: int | None = None,
) -> tuple[np.ndarray, list[bytes], int]:
    """The buckets ``buckets`` (their contents ``blobs``) rewritten at ``depth`` (default: the
    table's), with the stop rule for ``cap``: the new buckets' numbers (sorted), their
    contents, and how many records they hold."""
    record = table.record
    sizes = np.fromiter(map(len, blobs), np.int64, len(blobs)) // record.itemsize
    rows = np.frombuffer(b"".join(blobs), dtype=record)
    owner = np.repeat(np.asarray(buckets, dtype=np.int64), sizes)
    if cap is not None and len(rows):
        rows, owner = _stop_common(rows, owner, cap)
    depth = table.depth if depth is None else depth
    if depth != table.depth:
        owner = table.children(rows, owner, depth)
    order = np.argsort(owner, kind="stable")  # a bucket's records keep their order
    rows, owner = rows[order], owner[order]
    starts = np.flatnonzero(np.r_[True, owner[1:] != owner[:-1]]) if len(owner) else owner[:0]
    ends = np.r_[starts[1:], len(owner)]
    blob, size = rows.tobytes(), record.itemsize
    return (
        owner[starts],
        [blob[a * size : b * size] for a, b in zip(starts.tolist(), ends.tolist(), strict=True)],
        len(rows),
    )


def _stop_common(rows: np.ndarray, owner: np.ndarray, cap: int) -> tuple[np.ndarray, np.ndarray]:
    """Each value (bucket and check) with a stop marker, or more than ``cap`` postings, reduced
    to one stop marker."""
    keys = (owner << CHECK_BITS) | rows["check"].astype(np.int64)
    marked = doc_ids(rows) == STOP
    values, counts = np.unique(keys[~marked], return_counts=True)
    stopped = np.union1d(values[counts > cap], keys[marked])
    if not len(stopped):
        return rows, owner
    kept = ~np.isin(keys, stopped)
    markers = np.zeros(len(stopped), dtype=rows.dtype)
    markers["check"] = stopped & 0xFFFF
    set_docs(markers, np.zeros(len(stopped), dtype=np.int64))
    return (
        np.concatenate([markers, rows[kept]]),
        np.concatenate([stopped >> CHECK_BITS, owner[kept]]),
    )


def compact(table: Table, buckets: np.ndarray, cap: int | None = None) -> int:
    """Rewrite ``buckets`` of ``table`` at their exact size, with the stop rule for ``cap``;
    returns the change in the table's records (markers replacing postings)."""
    change = 0
    for chunk in _chunks(np.unique(buckets)):
        keys = table.bucket_keys(chunk)
        blobs = table.storage.get(keys)
        before = sum(map(len, blobs)) // table.record.itemsize
        numbers, contents, after = rewrite(table, blobs, chunk, cap=cap)
        written = dict(zip(table.bucket_keys(numbers), contents, strict=True))
        table.storage.put({key: written.get(key, b"") for key in keys})
        change += after - before
    return change


def split(table: Table, depth: int, new_keys: Table, cap: int | None = None) -> int:
    """Copy every bucket of ``table`` into ``new_keys`` (the same table at ``depth``), with the
    stop rule for ``cap``; returns the records written. The old buckets are left for the
    caller to remove once readers are sent to the new ones (:func:`drop`)."""
    total = 0
    for chunk in _chunks(np.arange(1 << table.depth, dtype=np.int64)):
        blobs = table.storage.get(table.bucket_keys(chunk))
        numbers, contents, written = rewrite(table, blobs, chunk, depth, cap)
        if len(numbers):
            table.storage.put(dict(zip(new_keys.bucket_keys(numbers), contents, strict=True)))
        total += written
    return total


def drop(table: Table) -> None:
    """Remove every bucket of ``table`` (a depth it has grown out of)."""
    for chunk in _chunks(np.arange(1 << table.depth, dtype=np.int64)):
        table.storage.delete(table.bucket_keys(chunk))


def split_records(name: str) -> float:
    """The records a bucket of the table ``name`` holds on average before the table splits."""
    if name == "sh":
        return SPLIT_SIMHASH_RECORDS
    return SPLIT_RECORDS * (SENTENCE_SPLIT_SHARE if name == "rw" else 1)


def depth_for(records: int, depth: int, per_bucket: float, most: int) -> int:
    """The depth at which ``records`` fill buckets with at most ``per_bucket`` on average
    (never below ``depth``, never above ``most``)."""
    while depth < most and records > per_bucket * (1 << depth):
        depth += 1
    return depth


def _chunks(buckets: np.ndarray) -> Iterator[np.ndarray]:
    for start in range(0, len(buckets), CHUNK):
        yield buckets[start : start + CHUNK]
