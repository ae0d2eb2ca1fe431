"""Exact-value index of pinyin-DNA window numbers: window value → masters having that window.

Masters store their windows at the design's 50 % overlap; a page is looked up with windows
taken at a finer step, so that some page window starts within a few letters of each master
window and, the letter distribution of a large window barely changing over a few letters,
quantises to the same number.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import numpy as np

from tracker.fingerprints.anchors import mix
from tracker.fingerprints.pinyin_dna import dna_windows, dna_windows_many
from tracker.index.layout import ORIGINAL, IndexLayout, Tables
from tracker.index.postings import HashPostings, Lookup
from tracker.index.storage import Storage

MASTER_WINDOW = 320
MASTER_OVERLAP = 0.5
QUERY_OVERLAP = 0.875


def spread(values: np.ndarray) -> np.ndarray:
    """40-bit DNA values hashed to uniform 64-bit keys for the postings."""
    with np.errstate(over="ignore"):
        return mix(np.asarray(values, dtype=np.uint64) + np.uint64(0x5DEECE66D))


def master_windows_many(texts: Sequence[np.ndarray]) -> list[np.ndarray]:
    return dna_windows_many(texts, window=MASTER_WINDOW, overlap=MASTER_OVERLAP)


def query_windows(tokens: np.ndarray) -> np.ndarray:
    return dna_windows(tokens, window=MASTER_WINDOW, overlap=QUERY_OVERLAP)


def query_windows_many(texts: Sequence[np.ndarray]) -> list[np.ndarray]:
    """:func:`query_windows` of several token arrays, computed together."""
    return dna_windows_many(texts, window=MASTER_WINDOW, overlap=QUERY_OVERLAP)


class DnaIndex:
    def __init__(
        self,
        storage: Storage,
        name: str = "dna",
        layout: IndexLayout = ORIGINAL,
        tables: Tables | None = None,
    ) -> None:
        tables = tables or Tables.initial(layout, legacy=True)
        self.postings = HashPostings(storage, name, layout.record, *tables.bits[name])

    def records(self, items: Iterable[tuple[int, np.ndarray]]) -> dict[bytes, bytes]:
        return self.postings.records((doc, spread(windows)) for doc, windows in items)

    def remove(self, doc: int, windows: np.ndarray) -> None:
        self.postings.remove(doc, spread(windows))

    def plan(self, windows: np.ndarray) -> Lookup:
        return self.postings.lookup(spread(windows))

    def plan_many(self, pages: Sequence[np.ndarray]) -> list[Lookup]:
        return self.postings.lookup_many([spread(windows) for windows in pages])

    def votes(self, lookup: Lookup, found: Sequence[bytes]) -> dict[int, int]:
        return self.postings.votes(lookup, found)
