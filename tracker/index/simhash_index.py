"""Permuted-table index for SimHash fingerprints (Manku, Jain, Das Sarma, WWW 2007).

To find every stored 64-bit fingerprint within Hamming distance *k* of a query, split the bits
into *b* > *k* blocks. Any *k* differing bits touch at most *k* blocks, so at least *b − k* blocks
are identical: with one table per choice of *b − k* blocks (C(b, b−k) tables) keyed by those
blocks' bits, a near-duplicate shares its key with the query in at least one table. Each table
lookup returns the few candidates filed under that key; their exact distance is then checked.

``blocks=4, k=3`` gives 4 tables keyed by 16 bits; ``blocks=6, k=3`` gives 20 tables keyed by
~32 bits (fewer candidates per lookup, 5× the entries). Keys are folded into ``2^bucket_bits``
buckets per table; each record holds the document id and its whole fingerprint (12 bytes), so
the distance check needs no second lookup.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from itertools import combinations

import numpy as np

from tracker.index.storage import Storage

RECORD = np.dtype([("doc", "<u4"), ("fingerprint", "<u8")])
_GOLDEN = 0x9E3779B97F4A7C15


class SimHashIndex:
    def __init__(
        self, storage: Storage, k: int = 3, blocks: int = 4, bucket_bits: int = 12, name: str = "sh"
    ) -> None:
        if blocks <= k:
            raise ValueError("blocks must exceed k for the pigeonhole guarantee")
        self.storage = storage
        self.k = k
        self.name = name
        self.bucket_bits = bucket_bits
        edges = [round(i * 64 / blocks) for i in range(blocks + 1)]
        block_masks = [
            ((1 << (edges[i + 1] - edges[i])) - 1) << (64 - edges[i + 1]) for i in range(blocks)
        ]
        self.tables = [
            sum(block_masks[i] for i in chosen)
            for chosen in combinations(range(blocks), blocks - k)
        ]

    def keys(self, fingerprint: int) -> list[bytes]:
        """Storage keys of the buckets holding ``fingerprint``, one per table."""
        keys = []
        for t, mask in enumerate(self.tables):
            bucket = (((fingerprint & mask) * _GOLDEN) & 0xFFFFFFFFFFFFFFFF) >> (
                64 - self.bucket_bits
            )
            keys.append(self.storage.bucket_key(f"{self.name}:{t}", bucket))
        return keys

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
