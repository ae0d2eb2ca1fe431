"""The index of the whole master library: SimHash tables, shingle anchors and DNA windows.

A lookup is planned for a batch of pages first, so every bucket any of them needs is fetched
in one round trip (one ``MGET`` on Redis), then resolved page by page.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

import numpy as np

from tracker.fingerprints.anchors import gram_hashes
from tracker.fingerprints.document import DocumentFingerprint
from tracker.index.anchor_index import AnchorIndex
from tracker.index.dna_index import DnaIndex, query_windows
from tracker.index.postings import Lookup, fetch
from tracker.index.simhash_index import SimHashIndex
from tracker.index.storage import Storage


@dataclass
class Query:
    """What a page needs from the index; ``grams`` are reused for alignment."""

    simhash: int
    grams: np.ndarray
    dense: Lookup
    sparse: Lookup
    dna: Lookup
    keys: list[str] = field(default_factory=list)


@dataclass
class Candidates:
    near_duplicates: dict[int, int]  # doc -> Hamming distance
    long_votes: dict[int, int]  # shared sparse anchors (long masters: chapters)
    short_votes: dict[int, int]  # shared dense anchors (short masters: news)
    dna_votes: dict[int, int]

    @property
    def anchor_votes(self) -> dict[int, int]:
        return {**self.short_votes, **self.long_votes}

    def ranked(
        self, per_pool: int = 6, relative: float = 0.1, long_page: bool = False
    ) -> list[int]:
        """Candidates worth aligning: near-duplicates, then the best of each pool of votes.

        Long and short masters are ranked apart: a page of news-like filler shares formulaic
        phrases with many short news masters, and their votes must not crowd out the anchors
        of one copied chapter passage. Within a pool, masters with under ``relative`` of the
        best one's votes are stock-phrase noise. One anchor is chance, not evidence, where a
        copy holds more: a long master needs two sparse anchors (any copied passage of 194
        tokens shares two, see :mod:`tracker.index.anchor_index`), and on a ``long_page`` (as
        long as the longest short master) a short one needs two dense anchors (a passage of
        ``MIN_EVIDENCE_TOKENS`` = 80 tokens holds 5 on average). Of the 10,789 candidates
        aligned for the benchmark's 2,700 cases at 100k masters with a floor of one sparse
        anchor, the 5,589 with a single one and no other signal gave no match.
        """
        chosen = dict.fromkeys(sorted(self.near_duplicates, key=self.near_duplicates.get))
        short_floor = 2 if long_page else 1
        for votes, least in (
            (self.long_votes, 2),
            (self.short_votes, short_floor),
            (self.dna_votes, 1),
        ):
            ordered = sorted(votes, key=lambda d: (-votes[d], d))[:per_pool]
            if ordered:
                floor = max(least, relative * votes[ordered[0]])
                chosen.update(dict.fromkeys(d for d in ordered if votes[d] >= floor))
        return list(chosen)

    def methods(self, doc: int) -> str:
        found = [
            name
            for name, table in (
                ("simhash", self.near_duplicates),
                ("shingle", self.anchor_votes),
                ("dna", self.dna_votes),
            )
            if doc in table
        ]
        return "+".join(found) or "shingle"


class MasterIndex:
    # A counter moved by every change, fetched with each lookup: processes that cache masters
    # (long crawls) see a master replaced or deleted since they cached it.
    CHANGES = "changes"

    def __init__(self, storage: Storage, simhash_k: int = 3, simhash_blocks: int = 4) -> None:
        self.storage = storage
        self.simhash = SimHashIndex(storage, k=simhash_k, blocks=simhash_blocks)
        self.anchors = AnchorIndex(storage)
        self.dna = DnaIndex(storage)

    def add(self, items: Iterable[tuple[int, DocumentFingerprint]]) -> None:
        items = list(items)
        # Each index names its own keys, so the batches of records are disjoint.
        self.storage.append(
            {
                **self.simhash.records((doc, fp.simhash) for doc, fp in items if fp.simhash),
                **self.anchors.records((doc, fp.length, fp.anchors) for doc, fp in items),
                **self.dna.records((doc, fp.dna) for doc, fp in items),
            }
        )
        self.storage.incr(self.CHANGES)

    def remove(self, doc: int, fp: DocumentFingerprint) -> None:
        if fp.simhash:
            self.simhash.remove([(doc, fp.simhash)])
        self.anchors.remove(doc, fp.length, fp.anchors)
        self.dna.remove(doc, fp.dna)
        self.storage.incr(self.CHANGES)

    def plan(self, tokens: np.ndarray, simhash: int = 0) -> Query:
        """What a page of these tokens needs; the SimHash may be given later (``with_simhash``)
        so the buckets of anchors and DNA windows can be fetched while it is computed."""
        grams = gram_hashes(tokens)
        dense, sparse = self.anchors.plan(grams)
        dna = self.dna.plan(query_windows(tokens))
        query = Query(0, grams, dense, sparse, dna, dense.keys + sparse.keys + dna.keys)
        return self.with_simhash(query, simhash)

    def with_simhash(self, query: Query, simhash: int) -> Query:
        if simhash:
            query.simhash = simhash
            query.keys = self.simhash.keys(simhash) + query.keys
        return query

    def fetch(self, keys: Sequence[str]) -> dict[str, bytes]:
        return fetch(self.storage, keys)

    def candidates_many(
        self, queries: Sequence[Query], blobs: dict[str, bytes] | None = None
    ) -> list[Candidates]:
        """Candidates of each query, from ``blobs`` (the buckets of all their keys, fetched
        here when not given)."""
        if blobs is None:
            blobs = fetch(self.storage, [key for q in queries for key in q.keys])
        return [
            Candidates(
                near_duplicates=self.simhash.within(q.simhash, blobs) if q.simhash else {},
                long_votes=self.anchors.sparse.votes(q.sparse, blobs, self.anchors.stop_after),
                short_votes=self.anchors.dense.votes(q.dense, blobs, self.anchors.stop_after),
                dna_votes=self.dna.votes(q.dna, blobs),
            )
            for q in queries
        ]

    def compact(self) -> None:
        """Release the room appends left in the buckets (after a bulk load)."""
        self.storage.compact()

    def clear(self) -> None:
        self.storage.clear()
