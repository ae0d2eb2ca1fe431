"""Inverted index of shingle anchors (see :mod:`tracker.fingerprints.anchors`).

Anchor hash → masters containing that shingle. Anchors are winnowed shingles (Schleimer,
Wilkerson and Aiken, 2003), whose guarantee is what makes a short share findable: a passage
holding k disjoint windows of W shingles, k·W + 4 tokens, shares at least k anchors with its
source, wherever it sits. A short master (news: under ``DENSE_BELOW_TOKENS`` = 1,024 tokens,
about 1,100 characters) keeps a dense sample (``DENSE_WINDOW`` = 31: ~1 anchor per 16 tokens,
two guaranteed in any passage of 66 tokens) and a long one (a chapter) a sparse sample
(``SPARSE_WINDOW`` = 48: ~1 per 24.5 tokens, two guaranteed in 2 × 48 + 4 = 100 tokens, the
length of a reportable passage), in separate postings, so that a short text still carries
enough anchors while a long one stays within the memory budget (a web novel's chapter of 1,500
characters: 55 sparse anchors, 275 bytes of postings, where the dense sample took 415). A page
is looked up with both samples of its own, its dense anchors with where they sit (for
:func:`tracker.index.master_index.local_votes`). Anchors filed for more than ``STOP_CAP``
masters (stock phrases such as 且听下回分解) carry no evidence: they are kept as stop markers
(:mod:`tracker.index.growth`) and ignored.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import numpy as np

from tracker.fingerprints.anchors import (
    GRAM,
    gram_hashes,
    mix,
    winnow,
    winnow_many,
    winnow_two,
)
from tracker.index.layout import ORIGINAL, IndexLayout, Tables
from tracker.index.postings import HashPostings, Lookup
from tracker.index.storage import Storage

DENSE_WINDOW = 31
SPARSE_WINDOW = 48
DENSE_BELOW_TOKENS = 1024
STOP_CAP = 50  # an anchor filed for more masters is a stock phrase: a stop marker


def spread(anchors: np.ndarray) -> np.ndarray:
    """Anchors re-hashed for the postings, whose buckets are the top bits of the value: winnowed
    anchors are window *minima*, so their own top bits are mostly zero and would crowd a few
    buckets."""
    with np.errstate(over="ignore"):
        return mix(np.asarray(anchors, dtype=np.uint64) ^ np.uint64(0x2545F4914F6CDD1D))


class AnchorIndex:
    def __init__(
        self,
        storage: Storage,
        name: str = "an",
        stop_after: int = STOP_CAP,
        layout: IndexLayout = ORIGINAL,
        tables: Tables | None = None,
    ) -> None:
        tables = tables or Tables.initial(layout, legacy=True)
        self.dense, self.sparse = (
            HashPostings(storage, table, layout.record, *tables.bits[table])
            for table in (f"{name}d", f"{name}s")
        )
        self.stop_after = stop_after

    def postings_for(self, length: int) -> HashPostings:
        return self.dense if length < DENSE_BELOW_TOKENS else self.sparse

    @staticmethod
    def master_anchors(tokens: np.ndarray) -> np.ndarray:
        """The anchors stored for a master (dense or sparse, by its length)."""
        return AnchorIndex.master_anchors_many([tokens])[0]

    @staticmethod
    def _anchors(tokens: np.ndarray) -> np.ndarray:
        window = DENSE_WINDOW if len(tokens) < DENSE_BELOW_TOKENS else SPARSE_WINDOW
        return winnow(gram_hashes(tokens), window)

    @staticmethod
    def master_anchors_many(texts: Sequence[np.ndarray]) -> list[np.ndarray]:
        """:meth:`master_anchors` of several token arrays: the shingles of all of them hashed
        in one pass (those straddling two texts left out), then winnowed in one pass per
        sample (:func:`tracker.fingerprints.anchors.winnow_many`)."""
        if len(texts) == 1:
            return [AnchorIndex._anchors(texts[0])]
        if not texts:
            return []
        sizes = np.fromiter(map(len, texts), np.int64, len(texts))
        hashes = gram_hashes(np.concatenate(texts))
        starts = np.cumsum(sizes) - sizes
        grams = np.maximum(sizes - GRAM + 1, 0)  # text t's shingles: hashes[starts[t]:][:grams[t]]
        anchors: list[np.ndarray] = [hashes[:0]] * len(texts)
        for chosen, window in (
            (np.flatnonzero(sizes < DENSE_BELOW_TOKENS), DENSE_WINDOW),
            (np.flatnonzero(sizes >= DENSE_BELOW_TOKENS), SPARSE_WINDOW),
        ):
            if not len(chosen):
                continue
            pieces = [hashes[starts[t] : starts[t] + grams[t]] for t in chosen.tolist()]
            for t, found in zip(
                chosen.tolist(),
                winnow_many(np.concatenate(pieces), grams[chosen], window),
                strict=True,
            ):
                anchors[t] = found
        return anchors

    def records(self, items: Iterable[tuple[int, int, np.ndarray]]) -> dict[bytes, bytes]:
        """Records for ``(doc, length, anchors)`` triples, in the postings of their length."""
        items = list(items)
        return {
            **self.dense.records((d, spread(a)) for d, n, a in items if n < DENSE_BELOW_TOKENS),
            **self.sparse.records((d, spread(a)) for d, n, a in items if n >= DENSE_BELOW_TOKENS),
        }

    def remove(self, doc: int, length: int, anchors: np.ndarray) -> None:
        self.postings_for(length).remove(doc, spread(anchors))

    def plan(self, page_hashes: np.ndarray) -> tuple[Lookup, Lookup]:
        """Lookups of the page's dense anchors (short masters), with their positions, and of
        its sparse ones (long masters)."""
        ((dense, sparse),) = self.plan_many([page_hashes])
        return dense, sparse

    def plan_many(self, pages: Sequence[np.ndarray]) -> list[tuple[Lookup, Lookup]]:
        """:meth:`plan` of several pages' shingle hashes, their bucket keys made at once."""
        dense, positions, sparse = [], [], []
        for hashes in pages:
            few, many = winnow_two(hashes, DENSE_WINDOW, SPARSE_WINDOW)
            values, at = _with_positions(hashes, few)
            dense.append(values)
            positions.append(at)
            sparse.append(spread(many))
        return list(
            zip(
                self.dense.lookup_many(dense, positions),
                self.sparse.lookup_many(sparse),
                strict=True,
            )
        )


def _with_positions(hashes: np.ndarray, anchors: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Every occurrence in ``hashes`` of the ``anchors`` (values winnowed from them): their
    spread values and positions."""
    # ``anchors`` are sorted and few: a binary search of each hash beats np.isin's sort.
    found = np.minimum(np.searchsorted(anchors, hashes), max(len(anchors) - 1, 0))
    at = np.flatnonzero(anchors[found] == hashes) if len(anchors) else found[:0]
    return spread(hashes[at]), at
