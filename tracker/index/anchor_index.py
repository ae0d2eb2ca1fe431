"""Inverted index of shingle anchors (see :mod:`tracker.fingerprints.anchors`).

Anchor hash → masters containing that shingle. A page's anchors vote for the masters they occur
in; a master with ≥ 2 votes becomes a candidate for alignment. Anchors found in more than
``stop_after`` masters (stock phrases such as 且听下回分解) carry no evidence and are ignored.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable

import numpy as np

from tracker.index.storage import Storage


class AnchorIndex:
    def __init__(self, storage: Storage, name: str = "an", stop_after: int = 50) -> None:
        self.storage = storage
        self.name = name
        self.stop_after = stop_after

    def _key(self, value: int) -> str:
        return f"{self.name}:{value:x}"

    def add(self, n: int, anchors: np.ndarray) -> None:
        self.storage.add((self._key(int(v)), n) for v in np.unique(anchors))

    def remove(self, n: int, anchors: Iterable[int]) -> None:
        self.storage.remove((self._key(int(v)), n) for v in set(int(a) for a in anchors))

    def query(self, anchors: np.ndarray) -> Counter[int]:
        values = [int(v) for v in np.unique(anchors)]
        votes: Counter[int] = Counter()
        for members in self.storage.get([self._key(v) for v in values]):
            if len(members) <= self.stop_after:
                votes.update(members)
        return votes
