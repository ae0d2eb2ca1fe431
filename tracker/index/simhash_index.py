"""Permuted-table index for SimHash fingerprints (Manku, Jain, Das Sarma, WWW 2007).

To find every stored 64-bit fingerprint within Hamming distance *k* of a query, split the bits
into *b* > *k* blocks. Any *k* differing bits touch at most *k* blocks, so at least *b − k* blocks
are identical: with one table per choice of *b − k* blocks (C(b, b−k) tables) keyed by those
blocks' bits, a near-duplicate shares its key with the query in at least one table. Each table
lookup returns the few candidates with that key; their exact distance is then checked.

``blocks=4, k=3`` gives 4 tables keyed by 16 bits; ``blocks=6, k=3`` gives 20 tables keyed by
~32 bits (fewer candidates per lookup, 5× the entries). Members are stored as ``n``, the
master's integer id; the fingerprint itself is kept beside the index by the caller.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from itertools import combinations

from tracker.fingerprints.simhash import hamming
from tracker.index.storage import Storage


class SimHashIndex:
    def __init__(self, storage: Storage, k: int = 3, blocks: int = 4, name: str = "sh") -> None:
        if blocks <= k:
            raise ValueError("blocks must exceed k for the pigeonhole guarantee")
        self.storage = storage
        self.k = k
        self.name = name
        edges = [round(i * 64 / blocks) for i in range(blocks + 1)]
        self._masks = [
            ((1 << (edges[i + 1] - edges[i])) - 1) << (64 - edges[i + 1]) for i in range(blocks)
        ]
        self.tables = [
            sum(self._masks[i] for i in chosen)
            for chosen in combinations(range(blocks), blocks - k)
        ]

    def keys(self, fingerprint: int) -> list[str]:
        return [f"{self.name}:{t}:{fingerprint & mask:x}" for t, mask in enumerate(self.tables)]

    def add(self, items: Iterable[tuple[int, int]]) -> None:
        """Index ``(n, fingerprint)`` pairs."""
        self.storage.add((key, n) for n, fp in items for key in self.keys(fp))

    def remove(self, items: Iterable[tuple[int, int]]) -> None:
        self.storage.remove((key, n) for n, fp in items for key in self.keys(fp))

    def candidates(self, fingerprint: int) -> set[int]:
        found: set[int] = set()
        for members in self.storage.get(self.keys(fingerprint)):
            found |= members
        return found

    def query(
        self, fingerprint: int, fingerprint_of: Callable[[set[int]], dict[int, int]]
    ) -> dict[int, int]:
        """``{n: distance}`` of indexed fingerprints within ``k`` bits of ``fingerprint``.

        ``fingerprint_of`` maps candidate ids to their stored fingerprints (one batched fetch).
        """
        candidates = self.candidates(fingerprint)
        if not candidates:
            return {}
        stored = fingerprint_of(candidates)
        distances = {n: hamming(fp, fingerprint) for n, fp in stored.items()}
        return {n: d for n, d in distances.items() if d <= self.k}
