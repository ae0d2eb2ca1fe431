"""Inverted index of sentence keys (:mod:`tracker.fingerprints.sentences`): key → masters
with a sentence whose two rarest canonical words make it. The candidates of a rewritten copy:
its sentences keep their rare words whatever else the rewriter changed.

Filed like the anchors (:class:`tracker.index.postings.HashPostings`, 5-byte records), with
the same stop set (a key filed for more than ``STOP_CAP`` masters is a stock pair) and posting
budget (rarest keys first), so a lookup reads about the same records however large the
library grows.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from tracker.fingerprints.anchors import mix
from tracker.index.layout import ORIGINAL, IndexLayout, Tables
from tracker.index.postings import HashPostings, Lookup, posting_budget
from tracker.index.storage import Storage

NAME = "rw"


def spread(keys: np.ndarray) -> np.ndarray:
    """Keys re-hashed for the postings (a salt of their own: no bucket shared with anchors)."""
    with np.errstate(over="ignore"):
        return mix(np.asarray(keys, dtype=np.uint64) ^ np.uint64(0x6A09E667F3BCC908))


class SentenceIndex:
    def __init__(
        self, storage: Storage, layout: IndexLayout = ORIGINAL, tables: Tables | None = None
    ) -> None:
        tables = tables or Tables.initial(layout)
        self.postings = HashPostings(storage, NAME, layout.record, *tables.bits[NAME])

    def remove(self, doc: int, keys: np.ndarray) -> None:
        if len(keys):
            self.postings.remove(doc, spread(keys))

    def plan(self, keys: np.ndarray, units: np.ndarray) -> Lookup:
        """A lookup of a page's keys, with the unit each comes from."""
        return self.plan_many([(keys, units)])[0]

    def plan_many(self, queries: Sequence[tuple[np.ndarray, np.ndarray]]) -> list[Lookup]:
        """:meth:`plan` of several pages' keys, their bucket keys made at once."""
        return self.postings.lookup_many(
            [spread(keys) for keys, _ in queries], [units for _, units in queries]
        )

    def hits(
        self,
        lookup: Lookup,
        found: Sequence[bytes],
        stop_after: int,
        least: int = 1,
        also: set[int] | None = None,
    ) -> dict[int, np.ndarray]:
        """The masters holding ``least`` of the keys or more, and those ``also`` named holding
        one, with the page units of the keys they hold. (At 50,000 chapters a page names ~600
        masters, ~10 of them twice: the others are dropped before their units are
        gathered.)"""
        docs, at = self.postings.hits(lookup, found, stop_after, posting_budget(lookup))
        if not len(docs):
            return {}
        units = lookup.positions[at] if lookup.positions is not None else at
        order = np.argsort(docs, kind="stable")
        docs, units = docs[order], units[order]
        starts = np.flatnonzero(np.r_[True, docs[1:] != docs[:-1]])
        ends = np.r_[starts[1:], len(docs)]
        kept = ends - starts >= least
        if also:
            # a binary search in the few named: np.isin sorts both sides
            named = np.sort(np.fromiter(also, np.int64, len(also)))
            heads = docs[starts]
            kept |= named[np.minimum(np.searchsorted(named, heads), len(named) - 1)] == heads
        return {
            int(docs[a]): np.sort(units[a:b])
            for a, b in zip(starts[kept].tolist(), ends[kept].tolist(), strict=True)
        }
