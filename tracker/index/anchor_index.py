"""Inverted index of shingle anchors (see :mod:`tracker.fingerprints.anchors`).

Anchor hash → masters containing that shingle. Anchors are selected by hash mod *m*; a short
master (news) keeps a dense sample (m = ``DENSE_MODULUS``) and a long one (a chapter) a sparse
sample (m = ``SPARSE_MODULUS``), in separate postings, so that a short text still carries enough
anchors while a long one stays within the memory budget. A page is looked up with its anchors at
both moduli. Anchors found in more than ``stop_after`` masters (stock phrases such as
且听下回分解) carry no evidence and are ignored.
"""

from __future__ import annotations

import numpy as np

from tracker.fingerprints.anchors import gram_hashes
from tracker.index.postings import HashPostings
from tracker.index.storage import Storage

DENSE_MODULUS = 16
SPARSE_MODULUS = 64
DENSE_BELOW_TOKENS = 2000


def select(hashes: np.ndarray, modulus: int) -> np.ndarray:
    return hashes[hashes % np.uint64(modulus) == 0]


class AnchorIndex:
    def __init__(self, storage: Storage, name: str = "an", stop_after: int = 50) -> None:
        self.dense = HashPostings(storage, f"{name}d")
        self.sparse = HashPostings(storage, f"{name}s")
        self.stop_after = stop_after

    def postings_for(self, length: int) -> tuple[HashPostings, int]:
        if length < DENSE_BELOW_TOKENS:
            return self.dense, DENSE_MODULUS
        return self.sparse, SPARSE_MODULUS

    @staticmethod
    def master_anchors(tokens: np.ndarray) -> np.ndarray:
        """The anchors stored for a master (depends on its length)."""
        modulus = DENSE_MODULUS if len(tokens) < DENSE_BELOW_TOKENS else SPARSE_MODULUS
        return np.unique(select(gram_hashes(tokens), modulus))

    def records(self, doc: int, length: int, anchors: np.ndarray) -> dict[str, bytes]:
        postings, _ = self.postings_for(length)
        return postings.records(doc, anchors)

    def remove(self, doc: int, length: int, anchors: np.ndarray) -> None:
        postings, _ = self.postings_for(length)
        postings.remove(doc, anchors)

    def plan(self, page_hashes: np.ndarray) -> tuple[np.ndarray, np.ndarray, list[str]]:
        """The page's dense and sparse anchors, and the keys to fetch for them."""
        dense = np.unique(select(page_hashes, DENSE_MODULUS))
        sparse = select(dense, SPARSE_MODULUS)  # SPARSE_MODULUS is a multiple of DENSE_MODULUS
        return dense, sparse, self.dense.keys_of(dense) + self.sparse.keys_of(sparse)

    def votes(
        self, dense: np.ndarray, sparse: np.ndarray, blobs: dict[str, bytes]
    ) -> dict[int, int]:
        votes = self.dense.votes(dense, blobs, self.stop_after)
        for doc, count in self.sparse.votes(sparse, blobs, self.stop_after).items():
            votes[doc] = votes.get(doc, 0) + count
        return votes
