"""Inverted index of the stored pages' anchors: which pages may copy a master added today.

Pirates publish first and rights holders register the book later, so ``tracker rematch`` must
find, among every page ever stored, the few that copy a master new to the library, in time that
grows with the change rather than with the page store. Each stored page files its winnowed
shingle anchors here (Schleimer, Wilkerson and Aiken's winnowing with a window of
``PAGE_WINDOW`` shingles, see :mod:`tracker.index.anchor_index`); a changed master is looked up
with its own anchors selected the same way, whatever its length. A passage of at least
``2 × PAGE_WINDOW + GRAM`` = 101 tokens shared by a page and a master holds two disjoint
winnowing windows, whose minima both texts select: it shares two anchors. So a page is a
candidate for a master when it shares two anchors *with that master* (votes are counted per
master, not summed over the change): every page with a copied passage of 100+ characters is
one, while a page sharing one stock phrase with each of a hundred new chapters is not.
Candidates are then checked in full.

A page is filed under a page number ``n`` allocated each time its text is stored anew (by
:class:`tracker.stores.pages.PageStore`); the numbers of its older texts are never removed: they
name no stored page any more and are ignored, until ``tracker index rebuild`` drops them.
Postings are 6-byte records (32-bit page numbers). The highest page number filed is kept
beside them, so that pages whose anchors a crashed Redis lost (its append-only file is synced
every second) are found and filed again by ``tracker index verify``.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING

import numpy as np

from tracker.fingerprints.anchors import gram_hashes, winnow
from tracker.index.anchor_index import spread
from tracker.index.postings import WIDE_RECORD, HashPostings
from tracker.index.storage import RedisStorage, Storage

if TYPE_CHECKING:
    from tracker.servers.runtime import Runtime


# The long masters' window (anchor_index.SPARSE_WINDOW): ~1 anchor per 24.5 tokens.
PAGE_WINDOW = 48
MIN_SHARED = 2


def page_anchors(tokens: np.ndarray) -> np.ndarray:
    """The anchors filed for a text of these tokens (a page, or a master looked up)."""
    return spread(winnow(gram_hashes(tokens), PAGE_WINDOW))


class PageIndex:
    MAX_N = "max_n"

    def __init__(self, storage: Storage) -> None:
        self.storage = storage
        self.postings = HashPostings(storage, "pa", record=WIDE_RECORD)
        self.max_key = storage.key(self.MAX_N)

    @classmethod
    def from_runtime(cls, runtime: Runtime) -> PageIndex:
        """The page index on ``runtime``'s Redis (keys ``<prefix>pix:…``)."""
        return cls(RedisStorage(runtime.redis, runtime.settings.redis_prefix + "pix:"))

    def add(self, items: Iterable[tuple[int, np.ndarray]]) -> None:
        """File ``(page n, tokens)`` pairs."""
        items = [(n, page_anchors(tokens)) for n, tokens in items]
        if not items:
            return
        self.storage.append(self.postings.records(items))
        self.storage.maximize(self.max_key, max(n for n, _ in items))

    def max_n(self) -> int:
        """The highest page number up to which every page is filed (0: none): the highest
        filed; on a Redis Cluster, the lowest mark if a node went back behind the others (it
        restarted empty, or from an older file: its pages are filed again by
        :meth:`tracker.matching.rematch.Rematcher.verify_page_index`)."""
        (value,) = self.storage.get([self.max_key])
        marks = self._marks()
        if marks and min(marks) < max(marks):
            return min(marks)
        return int(value or 0)

    def _marks(self) -> list[int]:
        return [mark or 0 for mark in self.storage.marks() or ()]

    def lowest_mark(self) -> int:
        marks = self._marks()
        return min(marks) if marks else 0

    def mark(self, since: int) -> None:
        """On a Redis Cluster, record on every node that the pages up to the highest filed are
        filed: the marks at ``since`` or above (:meth:`lowest_mark` read before the pages
        missing were filed) are raised. Marks are raised here, when the page index is
        verified, not as a crawl stores each page: 64 more commands a page would cost more
        than filing it. A node that loses everything, or goes back past the last
        verification, is noticed (with the index in one server, losing the last second of
        writes is noticed too; a cluster node's last second is not, but a copy's anchors lie on
        every node, so most of them remain)."""
        if self.storage.marked:
            (value,) = self.storage.get([self.max_key])
            self.storage.advance_marks(int(value or 0), since)

    def candidates(self, texts: Sequence[np.ndarray]) -> dict[int, int]:
        """Pages sharing ``MIN_SHARED`` anchors with one of these token arrays (masters), with
        the most any one of them shares. The buckets of all are fetched in one round trip."""
        lookups = [self.postings.lookup(page_anchors(tokens)) for tokens in texts]
        keys = sorted({key for lookup in lookups for key in lookup.keys})
        fetched = dict(zip(keys, self.storage.get(keys), strict=True))
        found: dict[int, int] = {}
        for lookup in lookups:
            votes = self.postings.votes(lookup, [fetched[key] for key in lookup.keys])
            for page, count in votes.items():
                if count >= MIN_SHARED and count > found.get(page, 0):
                    found[page] = count
        return found

    def clear(self) -> None:
        self.storage.clear()

    def compact(self) -> None:
        self.storage.compact()
