"""Inverted index of shingle anchors (see :mod:`tracker.fingerprints.anchors`).

Anchor hash → masters containing that shingle. A short master (news) keeps a dense sample (hash
mod ``DENSE_MODULUS``) and a long one (a chapter) a sparse, winnowed sample (window
``SPARSE_WINDOW``: ~1 anchor per 48 tokens; any copied passage of ≥ 2 × ``SPARSE_WINDOW`` + 4 =
194 tokens is guaranteed to share two, as it holds two disjoint windows whose minima both
texts select), in separate postings, so that a short text still carries
enough anchors while a long one stays within the memory budget. A page is looked up with both
samples of its own. Anchors found in more than ``stop_after`` masters (stock phrases such as
且听下回分解) carry no evidence and are ignored.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import numpy as np

from tracker.fingerprints.anchors import GRAM, gram_hashes, mix, mod_sample, winnow
from tracker.fingerprints.batches import owners, split
from tracker.index.postings import HashPostings, Lookup
from tracker.index.storage import Storage

DENSE_MODULUS = 16
SPARSE_WINDOW = 95
DENSE_BELOW_TOKENS = 2000


def spread(anchors: np.ndarray) -> np.ndarray:
    """Anchors re-hashed for the postings, whose buckets are the top bits of the value: winnowed
    anchors are window *minima*, so their own top bits are mostly zero and would crowd a few
    buckets."""
    with np.errstate(over="ignore"):
        return mix(np.asarray(anchors, dtype=np.uint64) ^ np.uint64(0x2545F4914F6CDD1D))


class AnchorIndex:
    def __init__(self, storage: Storage, name: str = "an", stop_after: int = 50) -> None:
        self.dense = HashPostings(storage, f"{name}d")
        self.sparse = HashPostings(storage, f"{name}s")
        self.stop_after = stop_after

    def postings_for(self, length: int) -> HashPostings:
        return self.dense if length < DENSE_BELOW_TOKENS else self.sparse

    @staticmethod
    def master_anchors(tokens: np.ndarray) -> np.ndarray:
        """The anchors stored for a master (dense or sparse, by its length)."""
        return AnchorIndex.master_anchors_many([tokens])[0]

    @staticmethod
    def _anchors(tokens: np.ndarray) -> np.ndarray:
        if len(tokens) < DENSE_BELOW_TOKENS:
            return np.unique(mod_sample(gram_hashes(tokens), DENSE_MODULUS))
        return winnow(gram_hashes(tokens), SPARSE_WINDOW)

    @staticmethod
    def master_anchors_many(texts: Sequence[np.ndarray]) -> list[np.ndarray]:
        """:meth:`master_anchors` of several token arrays: the shingles of all of them hashed
        in one pass (those straddling two texts left out), the dense samples deduplicated with
        one sort; only the winnowing of long texts goes text by text."""
        if len(texts) == 1:
            return [AnchorIndex._anchors(texts[0])]
        if not texts:
            return []
        sizes = np.fromiter(map(len, texts), np.int64, len(texts))
        hashes = gram_hashes(np.concatenate(texts) if len(texts) != 1 else texts[0])
        starts = np.cumsum(sizes) - sizes
        grams = np.maximum(sizes - GRAM + 1, 0)  # text t's shingles: hashes[starts[t]:][:grams[t]]
        dense = sizes < DENSE_BELOW_TOKENS
        owner = owners(np.where(dense, grams, 0))
        pieces = [hashes[s : s + g] for s, g in zip(starts[dense], grams[dense], strict=True)]
        sampled = np.concatenate(pieces) if pieces else hashes[:0]
        keep = sampled % np.uint64(DENSE_MODULUS) == 0
        sampled, owner = sampled[keep], owner[keep]
        order = np.lexsort((sampled, owner))
        sampled, owner = sampled[order], owner[order]
        first = np.ones(len(sampled), dtype=bool)
        first[1:] = (sampled[1:] != sampled[:-1]) | (owner[1:] != owner[:-1])
        sampled, owner = sampled[first], owner[first]
        anchors = split(sampled, np.bincount(owner, minlength=len(texts)))
        for t in np.flatnonzero(~dense).tolist():
            anchors[t] = winnow(hashes[starts[t] : starts[t] + grams[t]], SPARSE_WINDOW)
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
        """Lookups of the page's dense anchors (short masters) and sparse ones (long masters)."""
        return (
            self.dense.lookup(spread(mod_sample(page_hashes, DENSE_MODULUS))),
            self.sparse.lookup(spread(winnow(page_hashes, SPARSE_WINDOW))),
        )
