"""The index of the whole master library: SimHash tables, shingle anchors and DNA windows.

A lookup is planned for a batch of pages first, so every bucket any of them needs is fetched
in one round trip (one ``MGET`` on Redis), then resolved page by page. The anchor and DNA
buckets (:meth:`MasterIndex.fetch`) need only the page's tokens, the SimHash buckets
(:meth:`MasterIndex.fetch_simhash`) its fingerprint: so the first round trip can run while
the SimHash, the costliest part of a page's fingerprints, is computed.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

import numpy as np

from tracker.fingerprints.anchors import gram_hashes
from tracker.fingerprints.document import DocumentFingerprint
from tracker.index.anchor_index import DENSE_BELOW_TOKENS, AnchorIndex, spread
from tracker.index.dna_index import DnaIndex, query_windows
from tracker.index.layout import ORIGINAL, IndexLayout
from tracker.index.postings import Lookup, tally
from tracker.index.simhash_index import SimHashIndex
from tracker.index.storage import Storage

METHODS = ("simhash", "shingle", "dna")  # the signals a candidate came from, in this order
MIN_PER_POOL = 6
TOKENS_PER_CANDIDATE = 1024
LOCAL_TOKENS = 256


def local_votes(docs: np.ndarray, positions: np.ndarray, window: int) -> dict[int, int]:
    """For each document, the most of its hits within ``window`` tokens of one another on the
    page (``positions``: where each hit's anchor sits). A copied passage's anchors sit
    together; a text sharing stock phrases with a master has its hits spread over the page."""
    if not len(docs):
        return {}
    keys = np.sort((docs.astype(np.int64) << 32) | positions.astype(np.int64))
    reach = np.searchsorted(keys, keys + window, side="right") - np.arange(len(keys))
    doc = keys >> 32
    starts = np.flatnonzero(np.r_[True, doc[1:] != doc[:-1]])
    best = np.maximum.reduceat(reach, starts)
    return dict(zip(doc[starts].tolist(), best.tolist(), strict=True))


@dataclass
class Query:
    """What a page needs from the index, and the buckets fetched for it; ``grams`` are reused
    for alignment."""

    grams: np.ndarray
    windows: np.ndarray  # the page's DNA windows
    dense: Lookup
    sparse: Lookup
    dna: Lookup
    found: list[bytes] = field(default_factory=list)  # the buckets at ``keys``, once fetched
    simhash: int = 0
    simhash_found: list[bytes] = field(default_factory=list)  # its SimHash buckets

    @property
    def keys(self) -> list[bytes]:
        """Storage keys of the anchor and DNA buckets."""
        return self.dense.keys + self.sparse.keys + self.dna.keys


@dataclass
class Candidates:
    long_votes: dict[int, int]  # shared sparse anchors (long masters: chapters)
    short_votes: dict[int, int]  # shared dense anchors (short masters: news)
    dna_votes: dict[int, int]
    near_duplicates: dict[int, int] = field(default_factory=dict)  # doc -> Hamming distance
    # Per short master, the most of its dense anchors within LOCAL_TOKENS of one another.
    short_local: dict[int, int] | None = None

    @property
    def anchor_votes(self) -> dict[int, int]:
        return {**self.short_votes, **self.long_votes}

    def ranked(
        self,
        tokens: int = 0,
        long_page: bool | None = None,
        per_pool: int | None = None,
        relative: float = 0.1,
    ) -> list[int]:
        """Candidates worth aligning for a text of ``tokens`` tokens: near-duplicates, then
        the best of each pool of votes.

        Long and short masters are ranked apart: a page of news-like filler shares formulaic
        phrases with many short news masters, and their votes must not crowd out the anchors
        of one copied chapter passage. One anchor is chance, not evidence, where a copy holds
        more: a long master needs two sparse anchors (any copied passage of 100 tokens shares
        two, see :mod:`tracker.index.anchor_index`), and on a ``long_page`` (by default: a
        text as long as the longest short master) a short one needs two dense anchors. Of the
        10,789 candidates aligned for the benchmark's 2,700 cases at 100k masters with a floor
        of one sparse anchor, the 5,589 with a single one and no other signal gave no match.

        Within a pool, masters are ranked by their votes, short ones by their *local* votes
        (:func:`local_votes`): a news page shares a few anchors with each of a hundred news
        masters, as many as a reposted 150-character lead shares with its source, but the
        lead's sit together. Masters with under ``relative`` of the best one's are noise, and
        at most ``per_pool`` are kept: 6, or one per ``TOKENS_PER_CANDIDATE`` tokens of a
        longer text (long pages are looked up in segments, each ranking its own candidates).
        """
        if long_page is None:
            long_page = tokens >= DENSE_BELOW_TOKENS
        if per_pool is None:
            per_pool = max(MIN_PER_POOL, -(-tokens // TOKENS_PER_CANDIDATE))
        chosen = dict.fromkeys(sorted(self.near_duplicates, key=self.near_duplicates.get))
        short_floor = 2 if long_page else 1
        local = self.short_local
        for votes, rank, least in (
            (self.long_votes, self.long_votes, 2),
            (self.short_votes, self.short_votes if local is None else local, short_floor),
            (self.dna_votes, self.dna_votes, 1),
        ):
            eligible = [d for d in votes if votes[d] >= least]
            ordered = sorted(eligible, key=lambda d: (-rank[d], -votes[d], d))[:per_pool]
            if ordered:
                floor = relative * rank[ordered[0]]
                chosen.update(dict.fromkeys(d for d in ordered if rank[d] >= floor))
        return list(chosen)

    def methods(self, doc: int) -> str:
        tables = (self.near_duplicates, self.anchor_votes, self.dna_votes)
        found = [name for name, table in zip(METHODS, tables, strict=True) if doc in table]
        return "+".join(found) or "shingle"


class MasterIndex:
    # The library version (see :mod:`tracker.matching.library`) and master count the index holds,
    # set together after every change. The version is fetched with every lookup: processes that
    # cache masters (long crawls) see a master replaced or deleted since they cached it, and pages
    # record the version they were matched against.
    VERSION = "version"
    COUNT = "count"
    LAYOUT = "layout"  # the IndexLayout the postings were filed with (see tracker.index.layout)

    def __init__(
        self,
        storage: Storage,
        simhash_k: int = 3,
        simhash_blocks: int = 4,
        layout: IndexLayout = ORIGINAL,
    ) -> None:
        self.storage = storage
        self.simhash_k, self.simhash_blocks = simhash_k, simhash_blocks
        self.version_key = storage.key(self.VERSION)
        self.count_key = storage.key(self.COUNT)
        self.layout_key = storage.key(self.LAYOUT)
        self.use_layout(layout)

    @classmethod
    def open(cls, storage: Storage, wanted: IndexLayout = ORIGINAL) -> MasterIndex:
        """The index in ``storage``, read with the layout it was built with; ``wanted`` is the
        layout of an index never built (see :meth:`stored_layout`)."""
        index = cls(storage)
        layout = index.stored_layout() or wanted
        if layout != index.layout:
            index.use_layout(layout)
        return index

    def use_layout(self, layout: IndexLayout) -> None:
        """File and look up postings with ``layout`` (the index must hold none filed with
        another: after :meth:`clear`, or when it is the stored one)."""
        self.layout = layout
        self.simhash = SimHashIndex(
            self.storage,
            k=self.simhash_k,
            blocks=self.simhash_blocks,
            bucket_bits=layout.simhash_bucket_bits,
        )
        self.anchors = AnchorIndex(self.storage, layout=layout)
        self.dna = DnaIndex(self.storage, layout=layout)

    def follow_stored_layout(self) -> None:
        """Use the stored layout, should another process have rebuilt the index with another
        since this one opened it (an index never built keeps this one's). Writers call it once
        they hold the library's write lock; lookups follow it in :meth:`fetch`."""
        stored = self.stored_layout()
        if stored is not None and stored != self.layout:
            self.use_layout(stored)

    def stored_layout(self) -> IndexLayout | None:
        """The layout recorded with the index; :data:`ORIGINAL` for an index built before
        layouts were recorded; None for an index never built."""
        version, layout = self.storage.get([self.version_key, self.layout_key])
        if layout:
            return IndexLayout.decode(int(layout))
        return ORIGINAL if version else None

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

    def remove(self, doc: int, fp: DocumentFingerprint) -> None:
        """Drop every record of ``doc`` filed under ``fp`` (nothing if there is none)."""
        if fp.simhash:
            self.simhash.remove([(doc, fp.simhash)])
        self.anchors.remove(doc, fp.length, fp.anchors)
        self.dna.remove(doc, fp.dna)

    def state(self) -> tuple[int | None, int | None]:
        """``(library version, master count)`` the index holds; None where never set (an
        index never built, or lost)."""
        version, count = self.storage.get([self.version_key, self.count_key])
        return (int(version) if version else None, int(count) if count else None)

    def set_state(self, version: int, count: int) -> None:
        """Record that the index holds library version ``version`` (``count`` masters). On a
        storage spread over servers, each server's mark is raised first (from the version
        the index held before: a server behind it keeps its mark, see :meth:`lagging`)."""
        if self.storage.marked:
            self.storage.advance_marks(version, self.state()[0])
        layout = self.layout.encode()
        self.storage.set_values(
            {self.version_key: version, self.count_key: count, self.layout_key: layout}
        )

    def lagging(self, version: int) -> int:
        """How many marks of a storage spread over servers are below library version
        ``version``: groups of buckets on a server that lost writes the state kept (a Redis
        Cluster node restarted empty, or a replica that lagged promoted); 0 elsewhere."""
        marks = self.storage.marks()
        return sum(1 for mark in marks or () if mark is None or mark < version)

    def plan(self, tokens: np.ndarray) -> Query:
        """What a page of these tokens needs from the index."""
        grams, windows = gram_hashes(tokens), query_windows(tokens)
        dense, sparse = self.anchors.plan(grams)
        return Query(grams, windows, dense, sparse, self.dna.plan(windows))

    def fetch(self, queries: Sequence[Query]) -> int:
        """Fetch the anchor and DNA buckets of ``queries`` in one round trip; returns the
        library version, read in the same trip (0 for an index never built). An index rebuilt
        with another layout since this process opened it is followed: the queries are planned
        again and fetched again (one more round trip, once)."""
        found = self.storage.get(
            [self.version_key, self.layout_key, *(k for q in queries for k in q.keys)]
        )
        if found[1] and (stored := IndexLayout.decode(int(found[1]))) != self.layout:
            self.use_layout(stored)
            for q in queries:
                q.dense, q.sparse = self.anchors.plan(q.grams)
                q.dna = self.dna.plan(q.windows)
            return self.fetch(queries)
        at = 2
        for q in queries:
            size = len(q.dense.keys) + len(q.sparse.keys) + len(q.dna.keys)
            q.found, at = found[at : at + size], at + size
        return int(found[0] or 0)

    def fetch_simhash(self, queries: Sequence[Query], simhashes: Sequence[int]) -> None:
        """Fetch the SimHash buckets of ``queries`` (0: a page without one) in one round trip."""
        keys = [self.simhash.keys(h) if h else [] for h in simhashes]
        found = self.storage.get([k for ks in keys for k in ks])
        at = 0
        for q, h, ks in zip(queries, simhashes, keys, strict=True):
            q.simhash, q.simhash_found, at = h, found[at : at + len(ks)], at + len(ks)

    def candidates(self, query: Query) -> Candidates:
        """The votes of a fetched query, and its near-duplicates if its SimHash buckets are
        fetched too (see :meth:`near_duplicates`)."""
        dense, sparse = len(query.dense.keys), len(query.sparse.keys)
        found, stop_after = query.found, self.anchors.stop_after
        docs, at = self.anchors.dense.hits(query.dense, found[:dense], stop_after)
        return Candidates(
            long_votes=self.anchors.sparse.votes(
                query.sparse, found[dense : dense + sparse], stop_after
            ),
            short_votes=tally(docs),
            short_local=local_votes(docs, query.dense.positions[at], LOCAL_TOKENS),
            dna_votes=self.dna.votes(query.dna, found[dense + sparse :]),
            near_duplicates=self.near_duplicates(query),
        )

    def near_duplicates(self, query: Query) -> dict[int, int]:
        """``{doc: Hamming distance}`` of the masters within k bits of the query's SimHash."""
        return self.simhash.within(query.simhash, query.simhash_found) if query.simhash else {}

    def lookup(self, tokens: np.ndarray, simhash: int = 0) -> Candidates:
        """The candidates of one page (two round trips)."""
        query = self.plan(tokens)
        self.fetch([query])
        self.fetch_simhash([query], [simhash])
        return self.candidates(query)

    def anchor_holders(self, texts: Sequence[np.ndarray]) -> list[dict[int, int]]:
        """For each token array, the masters holding one of its shingles as an anchor, with
        how many: every shingle is looked up, not a winnowed sample, so a short text (a
        sentence) is checked whole; one round trip for all. A master holding a passage of
        the text holds some of its shingles as anchors (about one shingle in 16 of a news
        master, one in 24.5 of a chapter)."""
        self.follow_stored_layout()
        plans = []
        for tokens in texts:
            values = spread(gram_hashes(tokens))
            plans.append((self.anchors.dense.lookup(values), self.anchors.sparse.lookup(values)))
        found = self.storage.get([k for dense, sparse in plans for k in dense.keys + sparse.keys])
        holders, at = [], 0
        for dense, sparse in plans:
            docs = []
            for postings, lookup in ((self.anchors.dense, dense), (self.anchors.sparse, sparse)):
                buckets, at = found[at : at + len(lookup.keys)], at + len(lookup.keys)
                docs.append(postings.hits(lookup, buckets)[0])
            holders.append(tally(np.concatenate(docs)))
        return holders

    def compact(self) -> None:
        """Release the room appends left in the buckets (after a bulk load)."""
        self.storage.compact()

    def clear(self) -> None:
        self.storage.clear()
