"""Decide which master documents a text copies, and prove it with the copied passages.

1. Normalise and fingerprint the text (:mod:`tracker.fingerprints`).
2. Candidates from the index, for a whole batch of texts in one round trip: SimHash
   near-duplicates (Hamming ≤ k), masters sharing shingle anchors, masters sharing pinyin-DNA
   windows (:mod:`tracker.index.master_index`).
3. Align the text with each candidate (:mod:`tracker.matching.align`) to get the copied passages.
4. Report a master when the aligned evidence is at least ``MIN_EVIDENCE_TOKENS`` and it
   contains one passage of ``min_passage_chars`` tokens, or covers half the master (passages of
   any length, as when sentences are shuffled or typos cut them short), or covers
   ``min_coverage`` of it with ``MIN_PARTIAL_EVIDENCE_TOKENS`` tokens of evidence — so a page
   that copies a few hundred characters is reported, while commentary quoting a sentence or
   two, or a news item sharing a few formulaic sentences with a short master, is not. The
   partial-copy rule counts only the evidence no other master explains as well
   (:mod:`tracker.matching.shared`): the formulas a news library repeats in many articles match
   all of them and prove no copy of one.

5. Rewritten copies (:mod:`tracker.matching.rewrites`): a page up to ``LONG_PAGE_TOKENS``
   that its verbatim copies cover less than ``COVERED_PAGE`` of has its sentences aligned
   with the masters its sentence keys name, reported with ``method`` ``"rewrite"``.

A page longer than ``LONG_PAGE_TOKENS`` (a whole book on one page) goes through steps 2–3 in
segments, a batch at a time (:mod:`tracker.matching.segments`): each segment ranks its own
candidates, so there is no cap on how many masters one page may be found to copy, and memory
does not grow with the page beyond its normalised text. Step 4 then decides on each master's
passages from all segments, merged in page offsets (:func:`tracker.matching.align.merge`).

``score`` is the copied share of the shorter of the two texts (1.0 for a whole copy); ``coverage``
the share of the master found in the text.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import asdict, dataclass, field, replace
from functools import cached_property

import numpy as np

from tracker.batching import batches
from tracker.config import Settings
from tracker.fingerprints.anchors import gram_hashes
from tracker.fingerprints.simhash import segment_lines, simhash_segmented
from tracker.index.master_index import METHODS, Candidates, MasterIndex
from tracker.matching.align import Alignment, Passage, Shingles, align, merge
from tracker.matching.rewrites import find_rewrites
from tracker.matching.segments import LONG_PAGE_TOKENS, chapter_starts, segments
from tracker.matching.shared import own_shares
from tracker.stores.masters import MasterStore
from tracker.text.normalize import NormalizedText, normalize

MIN_EVIDENCE_TOKENS = 80
MIN_LONGEST_FOR_COVERAGE = 60
MIN_PARTIAL_EVIDENCE_TOKENS = 200
MOST_OF_THE_MASTER = 0.5
MAX_SPAN_TEXT = 2000
MASK64 = (1 << 64) - 1
SEGMENT_BATCH = 32  # segments of a long page looked up together (one round trip)
COVERED_PAGE = 0.9  # a page its verbatim copies cover this much is not checked for rewrites

Progress = Callable[[int, int], None]  # (characters checked, characters in all)


@dataclass
class Match:
    doc_id: str
    work: str
    title: str
    score: float
    coverage: float
    method: str
    spans: list[dict] = field(default_factory=list)

    def to_dict(self) -> dict:
        return asdict(self)


class _LRU(OrderedDict):
    def __init__(self, size: int) -> None:
        super().__init__()
        self.size = size

    def put(self, key: int, value: object) -> None:
        self[key] = value
        self.move_to_end(key)
        while len(self) > self.size:
            self.popitem(last=False)


@dataclass(frozen=True)
class CachedMaster:
    meta: dict  # the masters document without its text
    text: NormalizedText
    # what other detectors derive from it once, while cached (its sentences: rewrites.py)
    derived: dict = field(default_factory=dict, compare=False, repr=False)

    @cached_property
    def shingles(self) -> Shingles:
        """Of the tokens, for the verbatim alignment: made on first use (a master loaded for
        the rewrite stage alone never reads them)."""
        return Shingles.of(gram_hashes(self.text.tokens))


class MasterCache:
    """Masters by ``n``, normalised once (tokens for alignment, offsets for the evidence)."""

    def __init__(self, store: MasterStore, size: int = 512) -> None:
        self.store = store
        self._masters = _LRU(size)  # ~65 KB per 3,000-character chapter

    def missing(self, docs: Iterable[int]) -> list[int]:
        """The masters of ``docs`` not cached (to be loaded, e.g. ahead, with :meth:`load`)."""
        return [d for d in docs if d not in self._masters]

    def load(self, docs: Sequence[int], shingled: bool = True) -> dict[int, CachedMaster]:
        """The masters ``docs`` that exist, fetched with one query and normalised, not cached
        (:meth:`get` caches them): thread-safe, so it may run beside the caller's work.
        ``shingled``: their shingles made now too (else on first use)."""
        found = {}
        for doc, master in self.store.by_ns(docs).items():
            found[doc] = CachedMaster(master, normalize(master.pop("text", "")))
            if shingled:
                _ = found[doc].shingles
        return found

    def get(
        self,
        docs: Sequence[int],
        loaded: dict[int, CachedMaster] | None = None,
        shingled: bool = True,
    ) -> dict[int, CachedMaster]:
        """The masters ``docs`` that exist: cached, in ``loaded`` (from :meth:`load`), or else
        loaded now (``shingled``: see :meth:`load`)."""
        found = {d: self._masters[d] for d in docs if d in self._masters}
        loaded = {d: master for d, master in (loaded or {}).items() if d not in found}
        missing = [d for d in docs if d not in found and d not in loaded]
        if missing:
            loaded.update(self.load(missing, shingled))
        found.update(loaded)
        # Cached afterwards, the ones asked for last: caching a master must not evict another
        # one this call returns.
        for doc, master in found.items():
            self._masters.put(doc, master)
        return found

    def unit_sketches(self, docs: Sequence[int]) -> dict[int, dict]:
        """``doc → {"version", "unit_sketch"}`` of the masters ``docs`` that exist: from the
        cached ones, the others read without their texts (one query)."""
        found = {d: self._masters[d].meta for d in docs if d in self._masters}
        missing = [d for d in docs if d not in found]
        if missing:
            found.update(self.store.unit_sketches(missing))
        return found

    def clear(self) -> None:
        self._masters.clear()


class Detector:
    def __init__(
        self, store: MasterStore, index: MasterIndex, settings: Settings | None = None
    ) -> None:
        self.store = store
        self.index = index
        self.settings = settings or Settings()
        self.masters = MasterCache(store)
        self._io_pool: ThreadPoolExecutor | None = None  # round trips run in the background
        self._segmenter_pool: ThreadPoolExecutor | None = None  # jieba, on another core
        # The library version the last check ran against (read with its lookups): pages record
        # it; cached masters are dropped when it moves (masters added, replaced or deleted).
        self.version: int | None = None
        self._checking = threading.RLock()  # one check at a time: the caches are shared

    def _io(self) -> ThreadPoolExecutor:
        if self._io_pool is None:
            # Two: a long page's next batch is fetched while this one's masters load.
            self._io_pool = ThreadPoolExecutor(2, thread_name_prefix="detector-io")
        return self._io_pool

    def _segmenter(self) -> ThreadPoolExecutor:
        if self._segmenter_pool is None:
            self._segmenter_pool = ThreadPoolExecutor(1, thread_name_prefix="detector-jieba")
        return self._segmenter_pool

    def check(self, text: str, progress: Progress | None = None) -> list[Match]:
        return self._check([normalize(text)], progress=progress)[0]

    def check_many(
        self, texts: Sequence[str], progress: Progress | None = None
    ) -> list[list[Match]]:
        return self._check([normalize(text) for text in texts], progress=progress)

    def check_normalized(
        self, page: NormalizedText, simhash: int, progress: Progress | None = None
    ) -> list[Match]:
        """Check a page already normalised, with its SimHash (as the crawl pipelines have them).
        A long page is checked in segments (see :meth:`_check_long`), its SimHash unused."""
        return self.check_normalized_many([page], [simhash], progress)[0]

    def check_normalized_many(
        self,
        pages: Sequence[NormalizedText],
        simhashes: Sequence[int],
        progress: Progress | None = None,
        rewrites: bool = True,
    ) -> list[list[Match]]:
        """:meth:`check_normalized` of a batch of pages, looked up in one round trip.
        ``rewrites=False`` leaves the rewrite stage out (a warm-up that should not load its
        lexicon, which a crawl of verbatim copies never needs)."""
        return self._check(list(pages), list(simhashes), progress, rewrites)

    def _check(
        self,
        pages: list[NormalizedText],
        simhashes: list[int] | None = None,
        progress: Progress | None = None,
        rewrites: bool = True,
    ) -> list[list[Match]]:
        """Pages up to ``LONG_PAGE_TOKENS`` are checked together in one batch, longer ones one
        at a time in segments; ``progress`` is told of the long ones. Threads calling the
        same detector take turns."""
        with self._checking:
            return self._check_locked(pages, simhashes, progress, rewrites)

    def _check_locked(
        self,
        pages: list[NormalizedText],
        simhashes: list[int] | None,
        progress: Progress | None,
        rewrites: bool = True,
    ) -> list[list[Match]]:
        results: list[list[Match]] = [[] for _ in pages]
        short = [i for i, page in enumerate(pages) if 0 < len(page) <= LONG_PAGE_TOKENS]
        if short:
            texts = [pages[i] for i in short]
            # jieba words, for the SimHash and the rewrite stage's sentences: cut on another
            # core meanwhile when the SimHash needs them; with the SimHashes given (a crawl's
            # pages), only for the pages the rewrite stage reads (none on a page its verbatim
            # copies cover: on a pirate site, nearly every page)
            words: Future[list[list[str]]] | None = None
            if simhashes is None:
                words = self._segmenter().submit(segment_lines, texts)
                hashes: Sequence[int] | Callable[[], Sequence[int]] = self._simhashes(texts, words)
            else:
                hashes = [simhashes[i] for i in short]
            lookup = self._lookup([page.tokens for page in texts], hashes)
            found = self._align(lookup)
            copied: list[set[int]] = []  # the masters each page copies verbatim
            covered: list[float] = []  # the share of each page they cover
            inside: list[np.ndarray | None] = []  # the folded characters they cover
            for i, aligned in zip(short, found, strict=True):
                own = own_shares(
                    {a.doc: a.alignment for a in aligned},
                    versions_by_simhash({a.doc: a.master.meta for a in aligned}),
                )
                reported = [
                    a
                    for a in aligned
                    if self.is_copy(a.alignment, a.near_duplicate, own.get(a.doc, 1.0))
                ]
                copied.append({a.doc for a in reported})
                covered.append(_covered(pages[i], reported))
                inside.append(_covered_chars(pages[i], reported) if reported else None)
                results[i] = [
                    self._match(
                        a.alignment,
                        pages[i],
                        a.master.meta,
                        len(a.master.text),
                        a.method,
                        _master_span(a.master.text),
                    )
                    for a in reported
                ]
            # A page its verbatim copies cover leaves no room for a rewritten one.
            rest = [k for k, share in enumerate(covered) if share < COVERED_PAGE]
            if rewrites and self.settings.rewrite_detection and rest:
                if words is not None:
                    cut_all = words.result()
                    cut = [cut_all[k] for k in rest]
                else:
                    cut = segment_lines([texts[k] for k in rest])
                rewritten = find_rewrites(
                    self.index,
                    self.masters,
                    [texts[k] for k in rest],
                    cut,
                    [copied[k] for k in rest],
                    [inside[k] for k in rest],
                    # an anchor: the second signal of one sentence key (tracker.matching.rewrites)
                    [set(lookup.candidates[k].anchor_votes) - copied[k] for k in rest],
                )
                for k, matches in zip(rest, rewritten, strict=True):
                    results[short[k]].extend(matches)
        for i, page in enumerate(pages):
            if len(page) > LONG_PAGE_TOKENS:
                results[i] = self._check_long(page, progress)
        for matches in results:
            matches.sort(key=lambda m: (-m.score, -m.coverage, m.doc_id))
        return results

    @staticmethod
    def _simhashes(
        texts: list[NormalizedText], words: Future[list[list[str]]]
    ) -> Callable[[], Sequence[int]]:
        """The SimHash of ``texts``, to be summed when called: their jieba ``words`` are cut
        meanwhile on another core."""
        return lambda: simhash_segmented([t.chars for t in texts], words.result()).tolist()

    def _check_long(self, page: NormalizedText, progress: Progress | None) -> list[Match]:
        """A long page checked in segments (:mod:`tracker.matching.segments`), a batch of
        ``SEGMENT_BATCH`` at a time: the passages each master has in the segments are moved to
        page offsets and merged into one alignment, which decides whether it is copied. Only
        the batch in hand and the passages found so far are held, so memory does not grow with
        the page beyond its normalised text."""
        ranges = segments(len(page), chapter_starts(page))
        groups = list(batches(ranges, SEGMENT_BATCH))
        found: dict[int, _Evidence] = {}

        def lookup(batch: list[tuple[int, int]], elsewhere: Iterable[int] = ()) -> _Lookup:
            tokens = [page.tokens[start:end] for start, end in batch]
            return self._lookup(tokens, [0] * len(batch), True, elsewhere)

        if progress is not None:
            progress(0, len(page.source))
        ahead = lookup(groups[0])
        for k, batch in enumerate(groups):
            # The next batch is looked up, and its masters loaded in the background, before
            # this one is aligned.
            current = ahead
            if k + 1 < len(groups):
                ahead = lookup(groups[k + 1], current.loaded)
            for (start, _), items in zip(batch, self._align(current), strict=True):
                for a in items:
                    if not a.alignment.passages:
                        continue
                    evidence = found.get(a.doc)
                    if evidence is None:
                        evidence = found[a.doc] = _Evidence(a.master.meta, len(a.master.text))
                    evidence.add(a, start)
            if progress is not None:
                last = k + 1 == len(groups)
                done = len(page.source) if last else int(page.token_end[batch[-1][1] - 1])
                progress(done, len(page.source))
        merged = {
            doc: merge(evidence.passages, evidence.length, len(page))
            for doc, evidence in found.items()
        }
        own = own_shares(merged, versions_by_simhash({doc: e.meta for doc, e in found.items()}))
        matches = []
        for doc, evidence in found.items():
            alignment = merged[doc]
            if self.is_copy(alignment, evidence.near_duplicate, own.get(doc, 1.0)):
                method = "+".join(m for m in METHODS if m in evidence.methods)
                meta, length = evidence.meta, evidence.length
                matches.append(
                    self._match(alignment, page, meta, length, method, evidence.master_span)
                )
        return matches

    def _lookup(
        self,
        pages: list[np.ndarray],
        simhashes: Sequence[int] | Callable[[], Sequence[int]],
        long_page: bool | None = None,
        loading_elsewhere: Iterable[int] = (),
    ) -> _Lookup:
        """Look up each page (token array) in the index and start loading the masters its
        candidates name, but those in ``loading_elsewhere``: :meth:`_align` aligns them.
        ``simhashes`` (0: none) may be a callable computing them; ``long_page``: rank the
        candidates as those of a long page's segments (:meth:`Candidates.ranked`).

        Work overlaps the round trips it does not depend on. The pages are segmented into
        jieba words (the costliest step; rjieba runs without the GIL, so on another core) while
        their lookups are planned; the anchor and DNA buckets are fetched while the pages'
        shingles are sorted and their SimHash summed; the masters the votes name are loaded
        from MongoDB and normalised while the SimHash buckets are fetched."""
        queries = self.index.plan_many(pages)
        io = self._io()
        pending = io.submit(self.index.fetch, queries)
        page_shingles = [Shingles.of(q.grams) for q in queries]
        if callable(simhashes):
            simhashes = simhashes()
        version = pending.result()
        if version != self.version:
            self.masters.clear()
            self.version = version
        candidates = [self.index.candidates(q) for q in queries]
        voted = {
            d
            for c, tokens in zip(candidates, pages, strict=True)
            for d in c.ranked(len(tokens), long_page)
        }
        elsewhere = set(loading_elsewhere)
        missing = [d for d in self.masters.missing(sorted(voted)) if d not in elsewhere]
        loading = io.submit(self.masters.load, missing) if missing else None
        self.index.fetch_simhash(queries, list(simhashes))
        ranked = []
        for query, found, tokens in zip(queries, candidates, pages, strict=True):
            found.near_duplicates = self.index.near_duplicates(query)
            ranked.append(found.ranked(len(tokens), long_page))
        return _Lookup(pages, page_shingles, candidates, ranked, loading, missing)

    def _align(self, lookup: _Lookup) -> list[list[_Aligned]]:
        """Align each page of ``lookup`` with its candidates."""
        # Near-duplicates the votes did not name (rare) are loaded by ``get`` itself.
        masters = self.masters.get(
            sorted({d for docs in lookup.ranked for d in docs}),
            lookup.loading.result() if lookup.loading is not None else None,
        )
        results: list[list[_Aligned]] = [[] for _ in lookup.pages]
        for k, tokens in enumerate(lookup.pages):
            candidates = lookup.candidates[k]
            for doc in lookup.ranked[k]:
                if doc not in masters:
                    continue  # deleted since it was indexed
                master = masters[doc]
                alignment = align(
                    tokens,
                    master.text.tokens,
                    min_tokens=self.settings.min_span_chars,
                    page_shingles=lookup.shingles[k],
                    master_shingles=master.shingles,
                )
                results[k].append(
                    _Aligned(
                        doc,
                        master,
                        alignment,
                        candidates.methods(doc),
                        doc in candidates.near_duplicates,
                    )
                )
        return results

    @staticmethod
    def _match(
        alignment: Alignment,
        page: NormalizedText,
        meta: dict,
        length: int,
        method: str,
        master_span: Callable[[int, int], tuple[int, int]] | None,
    ) -> Match:
        """``meta``: the master's document without its text; ``length``: its tokens."""
        shorter = max(1, min(len(page), length))
        return Match(
            doc_id=meta["_id"],
            work=meta.get("work", ""),
            title=meta.get("title", ""),
            score=round(min(1.0, alignment.master_tokens / shorter), 4),
            coverage=round(alignment.coverage, 4),
            method=method,
            spans=Detector._spans(alignment, page, master_span),
        )

    def is_copy(self, alignment: Alignment, near_duplicate: bool, own: float = 1.0) -> bool:
        """``own``: the share of the passages' page tokens no other master aligned with the
        page explains too (:func:`tracker.matching.shared.own_shares`); the partial-copy rule
        counts only that share, so formulas a library repeats are no evidence of a copy."""
        if alignment.master_tokens < MIN_EVIDENCE_TOKENS and not (
            near_duplicate and alignment.coverage >= 0.5
        ):
            return False
        if alignment.longest >= self.settings.min_passage_chars:
            return True  # one long copied passage
        if alignment.coverage >= MOST_OF_THE_MASTER:
            return True  # a disguised copy: passages cut short by edits, but most of the master
        # A partial copy: a share of the master, with enough evidence of its own that it cannot
        # be a few quoted sentences, or formulas shared with other masters.
        return (
            alignment.coverage * own >= self.settings.min_coverage
            and alignment.master_tokens * own >= MIN_PARTIAL_EVIDENCE_TOKENS
            and alignment.longest >= MIN_LONGEST_FOR_COVERAGE
        )

    @staticmethod
    def _spans(
        alignment: Alignment,
        page: NormalizedText,
        master_span: Callable[[int, int], tuple[int, int]] | None,
    ) -> list[dict]:
        spans = []
        for p in alignment.passages:
            page_start, page_end = page.source_span(p.page_start, min(p.page_end, len(page)))
            span = {
                "page_start": page_start,
                "page_end": page_end,
                "master_start": None,
                "master_end": None,
                "text": page.source[page_start:page_end][:MAX_SPAN_TEXT],
            }
            if master_span is not None:
                span["master_start"], span["master_end"] = master_span(p.master_start, p.master_end)
            spans.append(span)
        return spans


VERSION_MAX_DISTANCE = 10  # of 64 bits; unrelated texts differ in ~32, chance ≤ 10 ≈ 1e-8


def versions_by_simhash(metas: dict[int, dict]) -> Callable[[int, int], bool]:
    """Whether two masters are versions of one text (registered twice, two editions): their
    SimHashes (``meta["simhash"]``) differ in at most ``VERSION_MAX_DISTANCE`` bits."""
    hashes = {doc: meta.get("simhash") for doc, meta in metas.items()}

    def versions(a: int, b: int) -> bool:
        x, y = hashes.get(a), hashes.get(b)
        return (
            x is not None
            and y is not None
            and ((x ^ y) & MASK64).bit_count() <= (VERSION_MAX_DISTANCE)
        )

    return versions


def _covered(page: NormalizedText, aligned: Sequence[_Aligned]) -> float:
    """The share of the page's tokens inside the passages of these alignments."""
    if not len(page):
        return 1.0
    inside = np.zeros(len(page) + 1, dtype=np.int32)
    for a in aligned:
        for p in a.alignment.passages:
            inside[min(p.page_start, len(page))] += 1
            inside[min(p.page_end, len(page))] -= 1
    return float((np.cumsum(inside)[: len(page)] > 0).mean())


def _covered_chars(page: NormalizedText, aligned: Sequence[_Aligned]) -> np.ndarray:
    """Which of the page's folded characters lie inside the passages of these alignments."""
    inside = np.zeros(len(page.source) + 1, dtype=np.int32)
    for a in aligned:
        for p in a.alignment.passages:
            if p.page_end > p.page_start:
                start, end = page.source_span(p.page_start, min(p.page_end, len(page)))
                inside[start] += 1
                inside[end] -= 1
    return (np.cumsum(inside)[page.char_pos] > 0) if len(page.chars) else inside[:0] > 0


def _master_span(text: NormalizedText) -> Callable[[int, int], tuple[int, int]] | None:
    """Source offsets in a master of its tokens ``[start, end)``."""
    if not len(text):
        return None
    return lambda start, end: text.source_span(min(start, len(text) - 1), min(end, len(text)))


@dataclass(frozen=True)
class _Lookup:
    """A batch of pages looked up in the index, the masters they name loading meanwhile."""

    pages: list[np.ndarray]
    shingles: list[Shingles]
    candidates: list[Candidates]
    ranked: list[list[int]]  # the candidates to align, per page
    loading: Future[dict[int, CachedMaster]] | None
    loaded: list[int]  # the masters ``loading`` brings


@dataclass(frozen=True)
class _Aligned:
    """A candidate master aligned with a page, or with a segment of one."""

    doc: int
    master: CachedMaster
    alignment: Alignment
    method: str
    near_duplicate: bool


@dataclass
class _Evidence:
    """What the segments of a long page found of one master: its passages in page offsets,
    with the master's source offsets of their ends, so the master itself need not be kept."""

    meta: dict
    length: int  # the master's tokens
    passages: list[Passage] = field(default_factory=list)
    starts: dict[int, int] = field(default_factory=dict)  # master token -> source offset
    ends: dict[int, int] = field(default_factory=dict)
    methods: set[str] = field(default_factory=set)
    near_duplicate: bool = False

    def add(self, aligned: _Aligned, offset: int) -> None:
        """The passages of ``aligned``, found in a segment starting at token ``offset``."""
        span = _master_span(aligned.master.text)
        for p in aligned.alignment.passages:
            self.passages.append(
                replace(p, page_start=p.page_start + offset, page_end=p.page_end + offset)
            )
            if span is not None:
                self.starts[p.master_start], self.ends[p.master_end] = span(
                    p.master_start, p.master_end
                )
        self.methods.update(aligned.method.split("+"))
        self.near_duplicate |= aligned.near_duplicate

    def master_span(self, start: int, end: int) -> tuple[int, int]:
        return self.starts[start], self.ends[end]
