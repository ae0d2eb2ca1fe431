"""Permuted-table index for SimHash fingerprints (Manku, Jain, Das Sarma, WWW 2007).

To find every stored 64-bit fingerprint within Hamming distance *k* of a query, split the bits
into *b* > *k* blocks. Any *k* differing bits touch at most *k* blocks, so at least *b − k* blocks
are identical: with one table per choice of *b − k* blocks (C(b, b−k) tables) keyed by those
blocks' bits, a near-duplicate shares its key with the query in at least one table. Each table
lookup returns the few candidates filed under that key; their exact distance is then checked.

``blocks=4, k=3`` gives 4 tables keyed by 16 bits; ``blocks=6, k=3`` gives 20 tables keyed by
~32 bits (fewer candidates per lookup, 5× the entries). Keys are hashed into ``2^depth``
buckets per table; each record holds the document id and its whole fingerprint (12 bytes), so
the distance check needs no second lookup, and a table can be split into more buckets from its
records alone (:mod:`tracker.index.growth`).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from itertools import combinations

import numpy as np

from tracker.index.storage import Storage

RECORD = np.dtype([("doc", "<u4"), ("fingerprint", "<u8")])
_GOLDEN = 0x9E3779B97F4A7C15


class SimHashTable:
    """One permuted table: the fingerprints' bits under ``mask`` hashed into ``2^depth``
    buckets (named by the depth once it has grown past ``base``)."""

    record = RECORD

    def __init__(self, storage: Storage, name: str, mask: int, base: int, depth: int) -> None:
        self.storage, self.mask, self.base, self.depth = storage, mask, base, depth
        self.name = name if depth == base else f"{name}.{depth}"
        self.root = name

    def bucket(self, fingerprint: int) -> int:
        return (((fingerprint & self.mask) * _GOLDEN) & 0xFFFFFFFFFFFFFFFF) >> (64 - self.depth)

    def key(self, fingerprint: int) -> bytes:
        return self.storage.bucket_key(self.name, self.bucket(fingerprint))

    def bucket_keys(self, buckets: Sequence[int]) -> list[bytes]:
        return self.storage.bucket_keys(self.name, [int(b) for b in buckets])

    def at_depth(self, depth: int) -> SimHashTable:
        return SimHashTable(self.storage, self.root, self.mask, self.base, depth)

    def children(self, rows: np.ndarray, owner: np.ndarray, depth: int) -> np.ndarray:
        """The buckets at ``depth`` of records ``rows``: from their fingerprints."""
        with np.errstate(over="ignore"):
            keyed = (rows["fingerprint"] & np.uint64(self.mask)) * np.uint64(_GOLDEN)
        return (keyed >> np.uint64(64 - depth)).astype(np.int64)


class SimHashIndex:
    def __init__(
        self,
        storage: Storage,
        k: int = 3,
        blocks: int = 4,
        bucket_bits: int = 12,
        name: str = "sh",
        depth: int | None = None,
    ) -> None:
        if blocks <= k:
            raise ValueError("blocks must exceed k for the pigeonhole guarantee")
        self.storage = storage
        self.k = k
        self.name = name
        self.base = bucket_bits
        self.depth = bucket_bits if depth is None else depth
        edges = [round(i * 64 / blocks) for i in range(blocks + 1)]
        block_masks = [
            ((1 << (edges[i + 1] - edges[i])) - 1) << (64 - edges[i + 1]) for i in range(blocks)
        ]
        self.tables = [
            SimHashTable(
                storage, f"{name}:{t}", sum(block_masks[i] for i in chosen), self.base, self.depth
            )
            for t, chosen in enumerate(combinations(range(blocks), blocks - k))
        ]

    @property
    def bucket_bits(self) -> int:
        return self.depth

    def keys(self, fingerprint: int) -> list[bytes]:
        """Storage keys of the buckets holding ``fingerprint``, one per table."""
        return [table.key(fingerprint) for table in self.tables]

    def records(self, items: Iterable[tuple[int, int]]) -> dict[bytes, bytes]:
        grouped: dict[bytes, bytearray] = {}
        for doc, fingerprint in items:
            row = np.array([(doc, fingerprint)], dtype=RECORD).tobytes()
            for key in self.keys(fingerprint):
                grouped.setdefault(key, bytearray()).extend(row)
        return {k: bytes(v) for k, v in grouped.items()}

    def add(self, items: Iterable[tuple[int, int]]) -> None:
        """Index ``(doc, fingerprint)`` pairs."""
        self.storage.append(self.records(items))

    def remove(self, items: Iterable[tuple[int, int]]) -> None:
        for doc, fingerprint in items:
            self.storage.remove_doc(self.keys(fingerprint), doc, RECORD)

    def within(self, fingerprint: int, buckets: Sequence[bytes]) -> dict[int, int]:
        """``{doc: distance}`` for the records within ``k`` bits in ``buckets``, the fetched
        buckets at ``keys(fingerprint)``."""
        found: dict[int, int] = {}
        for blob in buckets:
            if not blob:
                continue
            records = np.frombuffer(blob, dtype=RECORD)
            distances = np.bitwise_count(records["fingerprint"] ^ np.uint64(fingerprint))
            for doc, distance in zip(
                records["doc"][distances <= self.k].tolist(),
                distances[distances <= self.k].tolist(),
                strict=True,
            ):
                found[doc] = min(distance, found.get(doc, 64))
        return found

    def query(self, fingerprint: int) -> dict[int, int]:
        return self.within(fingerprint, self.storage.get(self.keys(fingerprint)))
