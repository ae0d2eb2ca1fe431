"""Exact-value index of pinyin-DNA window numbers: window value → masters having that window."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable

import numpy as np

from tracker.index.storage import Storage


class DnaIndex:
    def __init__(self, storage: Storage, name: str = "dna") -> None:
        self.storage = storage
        self.name = name

    def _key(self, value: int) -> str:
        return f"{self.name}:{value:x}"

    def add(self, n: int, windows: np.ndarray) -> None:
        self.storage.add((self._key(int(v)), n) for v in np.unique(windows))

    def remove(self, n: int, windows: Iterable[int]) -> None:
        self.storage.remove((self._key(int(v)), n) for v in set(windows))

    def query(self, windows: np.ndarray) -> Counter[int]:
        """Number of the query's distinct windows found in each master."""
        values = [int(v) for v in np.unique(windows)]
        votes: Counter[int] = Counter()
        for members in self.storage.get([self._key(v) for v in values]):
            votes.update(members)
        return votes
