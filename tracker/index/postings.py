"""Inverted index from uniformly distributed 64-bit hashes to the documents containing them.

A hash *h* is filed in a bucket, its top ``depth`` bits, which names the storage key, with a
16-bit check (bits ``base`` to ``base + 16`` of *h*) beside the document id, as one 5-byte
record. A lookup fetches the query's buckets and keeps the records whose check equals the
query's: the effective key is ``base + 16`` bits (32 by default), so a chance collision between
two different hashes has probability ~2^(depth − base − 16) per record examined. Document ids
are 24-bit (16.7 M documents) in the default record, 32-bit in :data:`WIDE_RECORD` (6 bytes,
for the far more numerous crawled pages, and for a master library past 16.7 M:
:mod:`tracker.index.layout`).

**Buckets that grow with the table.** A table is created with ``depth = base`` and *split*
when its buckets fill up (:mod:`tracker.index.growth`): every bucket becomes two, by the next
bit of its hashes, which the check holds (bit ``depth − base`` of it, counted from its top), so
a split needs nothing but the records themselves. The records a lookup reads per bucket stay
about the same however large the table grows, and a small table has few keys, each holding
enough records to be worth its key (a Redis key costs ~80 bytes beside its value).

**The stop set and the posting budget.** A value filed for more than a cap of documents (a
stock phrase: 且听下回分解, a news agency's formula) carries no evidence of a copy; its postings
are replaced by one *stop marker* in its bucket (a record whose document is 0, see
:func:`tracker.index.growth.rewrite`), so a lookup neither reads nor counts them; values over
the cap not yet compacted are dropped at lookup time (``stop_after``). The lookup then counts
the query's values *rarest first* and stops at a budget of postings: MOSS ignores passages
found in more than N documents (Schleimer et al. 2003), Elasticsearch's more-like-this query
drops terms above ``max_doc_freq``, and the SCANOSS engine reads a file's rarest fingerprints
first and stops after a candidate budget; together they keep the work of a check flat as the
library grows.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np

from tracker.fingerprints.anchors import distinct, runs
from tracker.index.storage import Storage, doc_ids

BUCKET_BITS = 16
CHECK_BITS = 16
KEY_TABLE_MAX_BITS = 20  # above, bucket keys are cached in a dict (a table of 2^24 is 134 MB)
RECORD = np.dtype([("check", "<u2"), ("doc_lo", "<u2"), ("doc_hi", "u1")])
WIDE_RECORD = np.dtype([("check", "<u2"), ("doc", "<u4")])
MAX_DOC = (1 << 24) - 1
STOP = 0  # the document of a stop marker: the value's postings were dropped (see above)
# Postings a lookup counts at most, rarest values first: a query's own values are read whole
# while they are rare (a page of 1,500 characters has ~100 values, most filed once or twice).
BUDGET_PER_VALUE = 16
MIN_BUDGET = 1024


class HashPostings:
    def __init__(
        self,
        storage: Storage,
        name: str,
        record: np.dtype = RECORD,
        bucket_bits: int = BUCKET_BITS,
        depth: int | None = None,
    ) -> None:
        self.storage = storage
        self.name = name
        self.record = record
        self.base = bucket_bits  # where the check starts in a hash
        self.depth = bucket_bits if depth is None else depth  # the bucket bits, after splits
        if not self.base <= self.depth < self.base + CHECK_BITS:
            raise ValueError(f"table {name}: depth {self.depth} beyond its base {self.base}")
        # Keys name the depth once the table has split: a bucket of one depth is never read
        # as one of another (old readers follow the new depth, see MasterIndex.fetch).
        self.table = name if self.depth == self.base else f"{name}.{self.depth}"
        self.max_doc = (1 << 32) - 1 if "doc" in record.names else MAX_DOC
        self._key_table: np.ndarray | None = None
        self._key_made = np.zeros(0, dtype=bool)
        self._key_cache: dict[int, bytes] = {}

    @property
    def bucket_bits(self) -> int:
        return self.depth

    def bucket_keys(self, buckets: Iterable[int]) -> list[bytes]:
        """Storage keys of the buckets numbered ``buckets``."""
        return self._keys(np.fromiter(buckets, np.int64))

    def _keys(self, buckets: np.ndarray) -> list[bytes]:
        # A page looks up hundreds of buckets: making their keys each time cost more than the
        # votes they hold. Each bucket's key is made the first time it is looked up, kept in
        # a table of the 2^16 (~5 MB when full) and picked with one gather; making all of them
        # up front cost a one-text `tracker check` 0.1-0.3 s.
        if self.depth > KEY_TABLE_MAX_BITS:
            cache = self._key_cache
            wanted = np.asarray(buckets).tolist()
            new = [b for b in dict.fromkeys(wanted) if b not in cache]
            cache.update(zip(new, self.storage.bucket_keys(self.table, new), strict=True))
            return [cache[b] for b in wanted]
        if self._key_table is None:
            self._key_table = np.empty(1 << self.depth, dtype=object)
            self._key_made = np.zeros(1 << self.depth, dtype=bool)
        buckets = np.asarray(buckets, dtype=np.int64)
        missing = np.unique(buckets[~self._key_made[buckets]])
        if len(missing):
            self._key_table[missing] = self.storage.bucket_keys(self.table, missing.tolist())
            self._key_made[missing] = True
        return self._key_table[buckets].tolist()

    def at_depth(self, depth: int) -> HashPostings:
        """This table with its buckets at ``depth`` (see :mod:`tracker.index.growth`)."""
        return HashPostings(self.storage, self.name, self.record, self.base, depth)

    def children(self, rows: np.ndarray, owner: np.ndarray, depth: int) -> np.ndarray:
        """The buckets at ``depth`` of records ``rows`` of buckets ``owner`` (at this table's
        depth): the next bits of their hashes, which the check holds."""
        grown = depth - self.depth
        shift = CHECK_BITS - (depth - self.base)
        bits = (rows["check"].astype(np.int64) >> shift) & ((1 << grown) - 1)
        return (owner << grown) | bits

    def _split(self, values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        values = np.asarray(values, dtype=np.uint64)
        buckets = (values >> np.uint64(64 - self.depth)).astype(np.int64)
        checks = ((values >> np.uint64(64 - self.base - CHECK_BITS)) & np.uint64(0xFFFF)).astype(
            np.uint16
        )
        return buckets, checks

    def records(self, items: Iterable[tuple[int, np.ndarray]]) -> dict[bytes, bytes]:
        """The records to append for ``(doc, values)`` pairs, grouped by storage key: built for
        the whole batch with vector operations, then cut into one chunk per bucket."""
        return self.chunks(items)[0]

    def chunks(self, items: Iterable[tuple[int, np.ndarray]]) -> tuple[dict[bytes, bytes], int]:
        """:meth:`records`, and how many records they hold."""
        items = [(doc, np.asarray(values, dtype=np.uint64)) for doc, values in items]
        for doc, _ in items:
            if not 0 < doc <= self.max_doc:
                raise ValueError(f"document id {doc} out of range")
        if not items:
            return {}, 0
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
        set_docs(rows, docs)
        blob = rows.tobytes()
        size = self.record.itemsize
        starts = np.flatnonzero(np.r_[True, buckets[1:] != buckets[:-1]])
        ends = np.r_[starts[1:], len(buckets)] * size
        chunks = {
            key: blob[start:end]
            for key, start, end in zip(
                self._keys(buckets[starts]),
                (starts * size).tolist(),
                ends.tolist(),
                strict=True,
            )
        }
        return chunks, len(rows)

    def keys_of(self, values: np.ndarray) -> list[bytes]:
        """Storage keys of the buckets holding ``values`` (distinct, in bucket order)."""
        return self.lookup(values).keys

    def lookup(self, values: np.ndarray, positions: np.ndarray | None = None) -> Lookup:
        """Plan a query: the distinct values as bucket+check keys, and the buckets to fetch;
        with ``positions`` (where each value occurs in the text), where each first occurs."""
        return self.lookup_many([values], None if positions is None else [positions])[0]

    def lookup_many(
        self, values: Sequence[np.ndarray], positions: Sequence[np.ndarray] | None = None
    ) -> list[Lookup]:
        """:meth:`lookup` of several queries: the keys of all their buckets made at once."""
        planned = []
        for k, page in enumerate(values):
            page = np.asarray(page, dtype=np.uint64)
            if positions is None:
                unique, first = distinct(page), None
            else:
                unique, at = np.unique(page, return_index=True)
                first = np.asarray(positions[k])[at]
            buckets, checks = self._split(unique)  # sorted by value, so by bucket
            planned.append((buckets, checks, buckets[runs(buckets)], first))
        fetched = [f for _, _, f, _ in planned]
        keys = self._keys(np.concatenate(fetched)) if planned else []
        ends = np.cumsum([len(f) for f in fetched]).tolist()
        return [
            Lookup(
                wanted=(buckets << CHECK_BITS) | checks.astype(np.int64),
                buckets=found,
                keys=keys[end - len(found) : end],
                positions=first,
            )
            for (buckets, checks, found, first), end in zip(planned, ends, strict=True)
        ]

    def remove(self, doc: int, values: np.ndarray) -> None:
        self.storage.remove_doc(self.keys_of(values), doc, self.record)

    def votes(
        self,
        lookup: Lookup,
        found: Sequence[bytes],
        stop_after: int | None = None,
        budget: int | None = None,
    ) -> dict[int, int]:
        """Documents sharing the query's distinct values, with how many each shares.

        ``found`` are the buckets at ``lookup.keys``, in order. Values behind a stop marker,
        or found in more than ``stop_after`` documents, are stock phrases and are not counted;
        see :meth:`hits` for ``budget``.
        """
        return tally(self.hits(lookup, found, stop_after, budget)[0])

    def hits(
        self,
        lookup: Lookup,
        found: Sequence[bytes],
        stop_after: int | None = None,
        budget: int | None = None,
    ) -> tuple[np.ndarray, np.ndarray]:
        """Every (document, query value) pair the postings hold, as two arrays: the documents
        and the values' indexes in ``lookup.wanted`` (see :meth:`votes`). With ``budget``, the
        values are counted rarest first until their postings would exceed it (by default
        ``BUDGET_PER_VALUE`` a value of the query, at least ``MIN_BUDGET``)."""
        sizes = np.fromiter(map(len, found), np.int64, len(found))
        if not sizes.any():
            return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
        # One buffer, one view: concatenating many small structured arrays is slow.
        records = np.frombuffer(b"".join(found), dtype=self.record)
        counts = sizes // self.record.itemsize
        if len(lookup.buckets) == len(lookup.wanted):
            # one value a bucket (nearly always: the buckets outnumber a query's values), the
            # k-th bucket's the k-th: a record is a hit when its check is that value's
            at = np.repeat(np.arange(len(counts)), counts)
            wanted_checks = (lookup.wanted & ((1 << CHECK_BITS) - 1)).astype(np.uint16)
            hit = records["check"] == wanted_checks[at]
        else:
            owner = np.repeat(lookup.buckets.astype(np.int64), counts)
            keys = (owner << CHECK_BITS) | records["check"].astype(np.int64)
            # ``wanted`` is sorted (np.unique): a binary search beats np.isin, which sorts both.
            at = np.minimum(np.searchsorted(lookup.wanted, keys), len(lookup.wanted) - 1)
            hit = lookup.wanted[at] == keys
        at, docs = at[hit], doc_ids(records[hit])
        if not len(at):
            return docs, at
        df = np.bincount(at, minlength=len(lookup.wanted))
        dropped = np.zeros(len(lookup.wanted), dtype=bool)
        dropped[at[docs == STOP]] = True  # stop markers
        if stop_after is not None:
            dropped |= df > stop_after
        if budget is not None and df[~dropped].sum() > budget:
            counted = np.flatnonzero(~dropped & (df > 0))
            rarest = counted[np.argsort(df[counted], kind="stable")]
            dropped[rarest[np.cumsum(df[rarest]) > budget]] = True
        if dropped.any():
            kept = ~dropped[at]
            docs, at = docs[kept], at[kept]
        return docs, at


def posting_budget(lookup: Lookup) -> int:
    """The postings a lookup of the master index counts at most: ``BUDGET_PER_VALUE`` a value of
    the query, at least ``MIN_BUDGET``."""
    return max(MIN_BUDGET, BUDGET_PER_VALUE * len(lookup.wanted))


def set_docs(rows: np.ndarray, docs: np.ndarray) -> None:
    """Store document ids in the ``doc`` field of records (3 bytes in 5-byte records)."""
    if "doc" in rows.dtype.names:
        rows["doc"] = docs
    else:
        rows["doc_lo"], rows["doc_hi"] = docs & 0xFFFF, docs >> 16


def tally(docs: np.ndarray) -> dict[int, int]:
    """``{document: occurrences}`` of an array of document ids."""
    ordered = np.sort(docs)
    starts = np.flatnonzero(runs(ordered))
    ends = np.empty_like(starts)
    ends[:-1], ends[-1:] = starts[1:], len(ordered)
    return dict(zip(ordered[starts].tolist(), (ends - starts).tolist(), strict=True))


@dataclass(frozen=True)
class Lookup:
    wanted: np.ndarray  # bucket << 16 | check of each distinct query value
    buckets: np.ndarray  # distinct buckets to fetch
    keys: list[bytes]  # their storage keys
    positions: np.ndarray | None = None  # where each wanted value first occurs in the text
