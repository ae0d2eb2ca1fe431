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
from typing import Any

import numpy as np

from tracker.fingerprints.anchors import gram_hashes
from tracker.fingerprints.document import DocumentFingerprint
from tracker.index import growth
from tracker.index.anchor_index import DENSE_BELOW_TOKENS, AnchorIndex, spread
from tracker.index.dna_index import DnaIndex, query_windows_many
from tracker.index.dna_index import spread as dna_spread
from tracker.index.layout import ORIGINAL, IndexLayout, Tables
from tracker.index.postings import CHECK_BITS, HashPostings, Lookup, posting_budget, tally
from tracker.index.sentence_index import SentenceIndex
from tracker.index.sentence_index import spread as sentence_spread
from tracker.index.simhash_index import SimHashIndex
from tracker.index.storage import Storage

METHODS = ("simhash", "shingle", "dna")  # the signals a candidate came from, in this order
MIN_PER_POOL = 6
TOKENS_PER_CANDIDATE = 1024
LOCAL_TOKENS = 256
SENTENCE_MIN_HITS = 2  # sentence keys a master must share with a page to be a rewrite candidate


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
    TABLES = "tables"  # each table's base and depth (Tables), read with every lookup
    SIZES = "sizes"  # the records each table holds (a hash), which tell when it must split
    DROPPING = "dropping"  # tables whose buckets of an older depth are being dropped (a hash)

    def __init__(
        self,
        storage: Storage,
        simhash_k: int = 3,
        simhash_blocks: int = 4,
        layout: IndexLayout = ORIGINAL,
        tables: Tables | None = None,
    ) -> None:
        self.storage = storage
        self.simhash_k, self.simhash_blocks = simhash_k, simhash_blocks
        self.version_key = storage.key(self.VERSION)
        self.count_key = storage.key(self.COUNT)
        self.layout_key = storage.key(self.LAYOUT)
        self.tables_key = storage.key(self.TABLES)
        self.sizes_key = storage.key(self.SIZES)
        self.dropping_key = storage.key(self.DROPPING)
        self._touched: dict[str, set[int]] = {}  # buckets appended to since the last compaction
        self._appended = 0  # records appended since then
        self._tables_raw: bytes | None = None  # the stored Tables this process follows
        self.use_layout(layout, tables)

    @classmethod
    def open(cls, storage: Storage, wanted: IndexLayout = ORIGINAL) -> MasterIndex:
        """The index in ``storage``, read with the layout it was built with; ``wanted`` is the
        layout of an index never built (see :meth:`stored_layout`)."""
        index = cls(storage)
        index.follow_stored_layout(wanted)
        return index

    def use_layout(self, layout: IndexLayout, tables: Tables | None = None) -> None:
        """File and look up postings with ``layout`` and ``tables`` (by default, a new index's
        tables: the index must hold no postings filed otherwise: after :meth:`clear`, or when
        they are the stored ones)."""
        self.layout = layout
        self.tables = tables or Tables.initial(layout)
        self._touched.clear()
        base, depth = self.tables.bits["sh"]
        self.simhash = SimHashIndex(
            self.storage,
            k=self.simhash_k,
            blocks=self.simhash_blocks,
            bucket_bits=base,
            depth=depth,
        )
        self.anchors = AnchorIndex(self.storage, layout=layout, tables=self.tables)
        self.dna = DnaIndex(self.storage, layout=layout, tables=self.tables)
        self.sentences = SentenceIndex(self.storage, layout=layout, tables=self.tables)

    def follow_stored_layout(self, wanted: IndexLayout | None = None) -> None:
        """Use the stored layout and tables, should another process have rebuilt or grown the
        index since this one opened it (an index never built keeps this one's, or ``wanted``).
        Writers call it once they hold the library's write lock; lookups follow it in
        :meth:`fetch`."""
        version, layout, tables = self.storage.get(
            [self.version_key, self.layout_key, self.tables_key]
        )
        self._follow(version, layout, tables, wanted)

    def _follow(
        self, version: bytes, layout: bytes, tables: bytes, wanted: IndexLayout | None = None
    ) -> bool:
        """Use the stored layout and tables these raw values give; whether they changed."""
        stored = _stored_layout(version, layout)
        if stored is None:  # never built: this process's own choice stands
            if wanted is not None and wanted != self.layout:
                self.use_layout(wanted)
                return True
            return False
        if tables and tables == self._tables_raw and stored == self.layout:
            return False  # what this process follows already (every lookup asks)
        found = Tables.decode(tables) if tables else Tables.initial(stored, legacy=True)
        self._tables_raw = tables or None
        if stored == self.layout and found == self.tables:
            return False
        self.use_layout(stored, found)
        return True

    def stored_layout(self) -> IndexLayout | None:
        """The layout recorded with the index; :data:`ORIGINAL` for an index built before
        layouts were recorded; None for an index never built."""
        version, layout = self.storage.get([self.version_key, self.layout_key])
        return _stored_layout(version, layout)

    def stored_tables(self) -> Tables | None:
        """The tables recorded with the index (None: none recorded)."""
        (raw,) = self.storage.get([self.tables_key])
        return Tables.decode(raw) if raw else None

    def add(self, items: Iterable[tuple[int, DocumentFingerprint]]) -> None:
        items = list(items)
        if not items:
            return
        if self._tables_raw is None:  # the first write to an index: its tables are recorded
            self._record_tables()
        chunks: dict[bytes, bytes] = {}
        counts: dict[str, int] = {}
        anchors = self.anchors
        for postings, chosen in (
            (
                anchors.dense,
                [(d, spread(fp.anchors)) for d, fp in items if fp.length < DENSE_BELOW_TOKENS],
            ),
            (
                anchors.sparse,
                [(d, spread(fp.anchors)) for d, fp in items if fp.length >= DENSE_BELOW_TOKENS],
            ),
            (self.dna.postings, [(d, dna_spread(fp.dna)) for d, fp in items]),
            (
                self.sentences.postings,
                [(d, sentence_spread(fp.sentences)) for d, fp in items if len(fp.sentences)],
            ),
        ):
            found, counts[postings.name] = postings.chunks(chosen)
            chunks.update(found)
            self._touch(postings.name, postings, chosen)
        simhashes = [(doc, fp.simhash) for doc, fp in items if fp.simhash]
        chunks.update(self.simhash.records(simhashes))
        counts["sh"] = len(simhashes) * len(self.simhash.tables)
        self._touched.setdefault("sh", set()).update(
            table.bucket(h) | (t << 32)
            for _, h in simhashes
            for t, table in enumerate(self.simhash.tables)
        )
        # Each index names its own keys, so the batches of records are disjoint.
        self.storage.append(chunks)
        self.storage.add_counts(self.sizes_key, {k: v for k, v in counts.items() if v})
        self._appended += sum(counts.values())

    def _touch(self, name: str, postings: HashPostings, items: list) -> None:
        if items:
            values = np.concatenate([v for _, v in items])
            self._touched.setdefault(name, set()).update(postings._split(values)[0].tolist())

    def _record_tables(self) -> None:
        raw = self.tables.encode()
        self.storage.put({self.tables_key: raw})
        self._tables_raw = raw

    def remove(self, doc: int, fp: DocumentFingerprint) -> None:
        """Drop every record of ``doc`` filed under ``fp`` (nothing if there is none)."""
        if fp.simhash:
            self.simhash.remove([(doc, fp.simhash)])
        self.anchors.remove(doc, fp.length, fp.anchors)
        self.dna.remove(doc, fp.dna)
        self.sentences.remove(doc, fp.sentences)

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
        if self._tables_raw is None:
            self._record_tables()
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
        return self.plan_many([tokens])[0]

    def plan_many(self, pages: Sequence[np.ndarray]) -> list[Query]:
        """:meth:`plan` of a batch of pages: their DNA windows computed together, and the
        bucket keys of each table made at once (a call per table, not per page and table)."""
        if not pages:
            return []
        grams = [gram_hashes(tokens) for tokens in pages]
        windows = query_windows_many(pages)
        anchors = self.anchors.plan_many(grams)
        dna = self.dna.plan_many(windows)
        return [
            Query(g, w, dense, sparse, d)
            for g, w, (dense, sparse), d in zip(grams, windows, anchors, dna, strict=True)
        ]

    def fetch(self, queries: Sequence[Query]) -> int:
        """Fetch the anchor and DNA buckets of ``queries`` in one round trip; returns the
        library version, read in the same trip (0 for an index never built). An index rebuilt
        with another layout, or grown, since this process last looked is followed: the queries
        are planned again and fetched again (one more round trip)."""
        keys = [self.version_key, self.layout_key, self.tables_key]
        for q in queries:
            keys += q.dense.keys
            keys += q.sparse.keys
            keys += q.dna.keys
        found = self.storage.get(keys)
        if self._follow(*found[:3]):
            for q in queries:
                q.dense, q.sparse = self.anchors.plan(q.grams)
                q.dna = self.dna.plan(q.windows)
            return self.fetch(queries)
        at = 3
        for q in queries:
            size = len(q.dense.keys) + len(q.sparse.keys) + len(q.dna.keys)
            q.found, at = found[at : at + size], at + size
        return int(found[0] or 0)

    def fetch_simhash(self, queries: Sequence[Query], simhashes: Sequence[int]) -> None:
        """Fetch the SimHash buckets of ``queries`` (0: a page without one) in one round trip
        (two if the SimHash tables were split since the last fetch)."""
        keys = [self.simhash.keys(h) if h else [] for h in simhashes]
        found = self.storage.get(
            [self.version_key, self.layout_key, self.tables_key, *(k for ks in keys for k in ks)]
        )
        if self._follow(*found[:3]):
            return self.fetch_simhash(queries, simhashes)
        at = 3
        for q, h, ks in zip(queries, simhashes, keys, strict=True):
            q.simhash, q.simhash_found, at = h, found[at : at + len(ks)], at + len(ks)

    def candidates(self, query: Query) -> Candidates:
        """The votes of a fetched query, and its near-duplicates if its SimHash buckets are
        fetched too (see :meth:`near_duplicates`)."""
        dense, sparse = len(query.dense.keys), len(query.sparse.keys)
        found, stop_after = query.found, self.anchors.stop_after
        docs, at = self.anchors.dense.hits(
            query.dense, found[:dense], stop_after, posting_budget(query.dense)
        )
        return Candidates(
            long_votes=self.anchors.sparse.votes(
                query.sparse,
                found[dense : dense + sparse],
                stop_after,
                posting_budget(query.sparse),
            ),
            short_votes=tally(docs),
            short_local=local_votes(docs, query.dense.positions[at], LOCAL_TOKENS),
            dna_votes=self.dna.postings.votes(
                query.dna, found[dense + sparse :], budget=posting_budget(query.dna)
            ),
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

    def sentence_candidates(
        self,
        queries: Sequence[tuple[np.ndarray, np.ndarray]],
        least: int = SENTENCE_MIN_HITS,
        also: Sequence[set[int]] | None = None,
    ) -> list[dict[int, np.ndarray]]:
        """For each page's sentence keys and their units
        (:func:`tracker.fingerprints.sentences.query_keys`), the masters filing at least
        ``least`` of them, and those of the page's ``also`` filing one, with the page units of
        those keys (one round trip for all).

        A master naming one key of a page is chance, not a candidate (a rewritten passage
        keeps several of its sentences' keys: ``MIN_VOTES`` in :mod:`tracker.matching.rewrites`),
        and there are more of them the larger the library: a page of 1,500 characters named
        87 masters at 5,000 chapters and 596 at 50,000, of which 1.6 and 9.9 with two keys
        or more; ranking them one by one cost 14 % of the check at 50,000 (issue 40)."""
        plans = self.sentences.plan_many(queries)
        found = self.storage.get(
            [
                self.version_key,
                self.layout_key,
                self.tables_key,
                *(k for p in plans for k in p.keys),
            ]
        )
        if self._follow(*found[:3]):
            return self.sentence_candidates(queries, least, also)
        hits, at = [], 3
        for k, plan in enumerate(plans):
            buckets, at = found[at : at + len(plan.keys)], at + len(plan.keys)
            named = also[k] if also is not None else None
            hits.append(self.sentences.hits(plan, buckets, self.anchors.stop_after, least, named))
        return hits

    def compact(self) -> None:
        """Split the tables that outgrew their buckets, and rewrite the buckets appended to
        since the last compaction in the others at their exact size (a split writes every
        bucket so), the anchors' common values reduced to stop markers
        (:mod:`tracker.index.growth`). Under the library's write lock."""
        appended, self._touched = self._touched, {}
        grown = self.grow()
        sizes = {}
        for name, table in self._named_tables():
            touched = appended.get(name)
            if not touched or name in grown:
                continue
            cap = self.anchors.stop_after if name in ("and", "ans", "rw") else None
            if name == "sh":
                for t, part in enumerate(table):
                    buckets = np.array([b & 0xFFFFFFFF for b in touched if b >> 32 == t])
                    growth.compact(part, buckets)
                continue
            sizes[name] = growth.compact(table, np.fromiter(touched, np.int64), cap)
        if any(sizes.values()):
            self.storage.add_counts(self.sizes_key, {k: v for k, v in sizes.items() if v})
        self._appended = 0

    def maybe_compact(self) -> bool:
        """Compact (and grow) once the records appended since the last compaction are as many
        as the index held before them (a bulk load then rewrites each record a bounded number
        of times, and its buckets split as it goes)."""
        held = sum(self.storage.read_counts(self.sizes_key).values())
        if self._appended and self._appended * 2 >= held:
            self.compact()
            return True
        return False

    def grow(self) -> set[str]:
        """Split every table whose buckets hold more than their share of records; the tables
        split. Under the library's write lock."""
        self._drop_left()
        sizes = self.storage.read_counts(self.sizes_key)
        tables, grew = self.tables, set()
        for name, table in self._named_tables():
            base, depth = tables.bits[name]
            per_bucket = growth.split_records(name)
            records = sizes.get(name, 0) // (len(table) if name == "sh" else 1)
            most = min(growth.MAX_DEPTH, base + (16 if name == "sh" else CHECK_BITS - 1))
            wanted = growth.depth_for(records, depth, per_bucket, most)
            if wanted == depth:
                continue
            cap = self.anchors.stop_after if name in ("and", "ans", "rw") else None
            parts = table if name == "sh" else [table]
            written = sum(growth.split(p, wanted, p.at_depth(wanted), cap) for p in parts)
            tables = tables.grown(name, wanted)
            # The old buckets are dropped once readers are sent to the new ones; should this
            # process die meanwhile, the next split (or compaction) drops what it left.
            self.storage.set_default(self.dropping_key, name, depth)
            self.storage.put({self.tables_key: tables.encode()})  # readers follow from now on
            self.storage.add_counts(self.sizes_key, {name: written - sizes.get(name, 0)})
            for part in parts:
                growth.drop(part)
            self.storage.forget(self.dropping_key, [name])
            grew.add(name)
        if grew:
            self.use_layout(self.layout, tables)
            self._tables_raw = tables.encode()
        return grew

    def _drop_left(self) -> None:
        """Drop the buckets a split left behind (its writer died before dropping them)."""
        for name, depth in self.storage.read_counts(self.dropping_key).items():
            if depth != self.tables.depth(name):
                table = dict(self._named_tables())[name]
                for part in table if name == "sh" else [table]:
                    growth.drop(part.at_depth(depth))
            self.storage.forget(self.dropping_key, [name])

    def _named_tables(self) -> list[tuple[str, Any]]:
        return [
            ("and", self.anchors.dense),
            ("ans", self.anchors.sparse),
            ("dna", self.dna.postings),
            ("sh", self.simhash.tables),
            ("rw", self.sentences.postings),
        ]

    def clear(self) -> None:
        self.storage.clear()
        self._touched.clear()
        self._appended = 0
        self._tables_raw = None


def _stored_layout(version: bytes, layout: bytes) -> IndexLayout | None:
    if layout:
        return IndexLayout.decode(int(layout))
    return ORIGINAL if version else None
