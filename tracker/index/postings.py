"""Inverted index from uniformly distributed 64-bit hashes to the documents containing them.

A hash *h* is split into a bucket (its top ``bucket_bits`` bits, 16 by default, which name the
storage key) and a 16-bit check (the next 16 bits), stored in the bucket beside the document id
as one 5-byte record. A lookup fetches the query's buckets and keeps the records whose check
equals the query's: the effective key is 32 bits or more, so a chance collision between two
different hashes has probability ~2⁻³² per record examined. Document ids are 24-bit (16.7 M
documents) in the default record, 32-bit in :data:`WIDE_RECORD` (6 bytes, for the far more
numerous crawled pages, and for a master library past 16.7 M: :mod:`tracker.index.layout`).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np

from tracker.index.storage import Storage, doc_ids

BUCKET_BITS = 16
KEY_TABLE_MAX_BITS = 20  # above, bucket keys are cached in a dict (a table of 2^24 is 134 MB)
RECORD = np.dtype([("check", "<u2"), ("doc_lo", "<u2"), ("doc_hi", "u1")])
WIDE_RECORD = np.dtype([("check", "<u2"), ("doc", "<u4")])
MAX_DOC = (1 << 24) - 1


class HashPostings:
    def __init__(
        self,
        storage: Storage,
        name: str,
        record: np.dtype = RECORD,
        bucket_bits: int = BUCKET_BITS,
    ) -> None:
        self.storage = storage
        self.name = name
        self.record = record
        self.bucket_bits = bucket_bits
        self.max_doc = (1 << 32) - 1 if "doc" in record.names else MAX_DOC
        self._key_table: np.ndarray | None = None
        self._key_made = np.zeros(0, dtype=bool)
        self._key_cache: dict[int, bytes] = {}

    def _keys(self, buckets: np.ndarray) -> list[bytes]:
        # A page looks up hundreds of buckets: making their keys each time cost more than the
        # votes they hold. Each bucket's key is made the first time it is looked up, kept in
        # a table of the 2^16 (~5 MB when full) and picked with one gather; making all of them
        # up front cost a one-text `tracker check` 0.1-0.3 s.
        if self.bucket_bits > KEY_TABLE_MAX_BITS:
            cache, make = self._key_cache, self.storage.bucket_key
            return [
                cache.get(b) or cache.setdefault(b, make(self.name, b))
                for b in np.asarray(buckets).tolist()
            ]
        if self._key_table is None:
            self._key_table = np.empty(1 << self.bucket_bits, dtype=object)
            self._key_made = np.zeros(1 << self.bucket_bits, dtype=bool)
        buckets = np.asarray(buckets, dtype=np.int64)
        missing = np.unique(buckets[~self._key_made[buckets]])
        if len(missing):
            self._key_table[missing] = [self.storage.bucket_key(self.name, b) for b in missing]
            self._key_made[missing] = True
        return self._key_table[buckets].tolist()

    def _split(self, values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        values = np.asarray(values, dtype=np.uint64)
        buckets = (values >> np.uint64(64 - self.bucket_bits)).astype(np.int64)
        checks = ((values >> np.uint64(64 - self.bucket_bits - 16)) & np.uint64(0xFFFF)).astype(
            np.uint16
        )
        return buckets, checks

    def records(self, items: Iterable[tuple[int, np.ndarray]]) -> dict[bytes, bytes]:
        """The records to append for ``(doc, values)`` pairs, grouped by storage key: built for
        the whole batch with vector operations, then cut into one chunk per bucket."""
        items = [(doc, np.asarray(values, dtype=np.uint64)) for doc, values in items]
        for doc, _ in items:
            if not 0 < doc <= self.max_doc:
                raise ValueError(f"document id {doc} out of range")
        if not items:
            return {}
        values = np.concatenate([v for _, v in items])
        docs = np.repeat([doc for doc, _ in items], [len(v) for _, v in items]).astype(np.int64)
        order = np.lexsort((docs, values))  # a value twice in one document is stored once
        values, docs = values[order], docs[order]
        first = np.ones(len(values), dtype=bool)
        first[1:] = (values[1:] != values[:-1]) | (docs[1:] != docs[:-1])
        values, docs = values[first], docs[first]
        buckets, checks = self._split(values)  # sorted by value, so by bucket
        rows = np.zeros(len(values), dtype=self.record)
        rows["check"] = checks
        if "doc" in self.record.names:
            rows["doc"] = docs
        else:
            rows["doc_lo"], rows["doc_hi"] = docs & 0xFFFF, docs >> 16
        blob = rows.tobytes()
        size = self.record.itemsize
        starts = np.flatnonzero(np.r_[True, buckets[1:] != buckets[:-1]])
        ends = np.r_[starts[1:], len(buckets)] * size
        return {
            key: blob[start:end]
            for key, start, end in zip(
                self._keys(buckets[starts]),
                (starts * size).tolist(),
                ends.tolist(),
                strict=True,
            )
        }

    def keys_of(self, values: np.ndarray) -> list[bytes]:
        """Storage keys of the buckets holding ``values`` (distinct, in bucket order)."""
        return self.lookup(values).keys

    def lookup(self, values: np.ndarray, positions: np.ndarray | None = None) -> Lookup:
        """Plan a query: the distinct values as bucket+check keys, and the buckets to fetch;
        with ``positions`` (where each value occurs in the text), where each first occurs."""
        values = np.asarray(values, dtype=np.uint64)
        if positions is None:
            distinct, first = np.unique(values), None
        else:
            distinct, at = np.unique(values, return_index=True)
            first = np.asarray(positions)[at]
        buckets, checks = self._split(distinct)
        fetched = np.unique(buckets)
        return Lookup(
            wanted=(buckets << 16) | checks.astype(np.int64),
            buckets=fetched,
            keys=self._keys(fetched),
            positions=first,
        )

    def remove(self, doc: int, values: np.ndarray) -> None:
        self.storage.remove_doc(self.keys_of(values), doc, self.record)

    def votes(
        self, lookup: Lookup, found: Sequence[bytes], stop_after: int | None = None
    ) -> dict[int, int]:
        """Documents sharing the query's distinct values, with how many each shares.

        ``found`` are the buckets at ``lookup.keys``, in order. Values found in more than
        ``stop_after`` documents are stock phrases and are not counted.
        """
        return tally(self.hits(lookup, found, stop_after)[0])

    def hits(
        self, lookup: Lookup, found: Sequence[bytes], stop_after: int | None = None
    ) -> tuple[np.ndarray, np.ndarray]:
        """Every (document, query value) pair the postings hold, as two arrays: the documents
        and the values' indexes in ``lookup.wanted`` (see :meth:`votes`)."""
        sizes = np.fromiter(map(len, found), np.int64, len(found))
        if not sizes.any():
            return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
        # One buffer, one view: concatenating many small structured arrays is slow.
        records = np.frombuffer(b"".join(found), dtype=self.record)
        owner = np.repeat(lookup.buckets.astype(np.int64), sizes // self.record.itemsize)
        keys = (owner << 16) | records["check"].astype(np.int64)
        # ``wanted`` is sorted (np.unique): a binary search beats np.isin, which sorts both.
        at = np.minimum(np.searchsorted(lookup.wanted, keys), len(lookup.wanted) - 1)
        hit = lookup.wanted[at] == keys
        keys, at, docs = keys[hit], at[hit], doc_ids(records[hit])
        if stop_after is not None and len(keys):
            common, counts = np.unique(keys, return_counts=True)
            kept = ~np.isin(keys, common[counts > stop_after])
            docs, at = docs[kept], at[kept]
        return docs, at


def tally(docs: np.ndarray) -> dict[int, int]:
    """``{document: occurrences}`` of an array of document ids."""
    ids, counts = np.unique(docs, return_counts=True)
    return dict(zip(ids.tolist(), counts.tolist(), strict=True))


@dataclass(frozen=True)
class Lookup:
    wanted: np.ndarray  # bucket << 16 | check of each distinct query value
    buckets: np.ndarray  # distinct buckets to fetch
    keys: list[bytes]  # their storage keys
    positions: np.ndarray | None = None  # where each wanted value first occurs in the text
