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
   two, or a news item sharing a few formulaic sentences with a short master, is not.

``score`` is the copied share of the shorter of the two texts (1.0 for a whole copy); ``coverage``
the share of the master found in the text.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field

from tracker.config import Settings
from tracker.fingerprints.anchors import gram_hashes
from tracker.fingerprints.simhash import segment, simhash_segmented
from tracker.index.anchor_index import DENSE_BELOW_TOKENS
from tracker.index.master_index import Candidates, MasterIndex
from tracker.matching.align import Alignment, Shingles, align
from tracker.stores.masters import MasterStore
from tracker.text.normalize import NormalizedText, normalize

MIN_EVIDENCE_TOKENS = 80
MIN_LONGEST_FOR_COVERAGE = 60
MIN_PARTIAL_EVIDENCE_TOKENS = 200
MOST_OF_THE_MASTER = 0.5
MAX_SPAN_TEXT = 2000


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
    shingles: Shingles  # of the tokens, for alignment


class MasterCache:
    """Masters by ``n``, normalised once (tokens for alignment, offsets for the evidence)."""

    def __init__(self, store: MasterStore, size: int = 512) -> None:
        self.store = store
        self._masters = _LRU(size)  # ~65 KB per 3,000-character chapter

    def missing(self, docs: Iterable[int]) -> list[int]:
        """The masters of ``docs`` not cached (to be loaded, e.g. ahead, with ``store.by_ns``)."""
        return [d for d in docs if d not in self._masters]

    def get(
        self, docs: Sequence[int], loaded: dict[int, dict] | None = None
    ) -> dict[int, CachedMaster]:
        """The masters ``docs`` that exist: cached, in ``loaded`` (documents of
        ``store.by_ns``), or else fetched with one query."""
        found = {d: self._masters[d] for d in docs if d in self._masters}
        loaded = {d: master for d, master in (loaded or {}).items() if d not in found}
        missing = [d for d in docs if d not in found and d not in loaded]
        if missing:
            loaded.update(self.store.by_ns(missing))
        for doc, master in loaded.items():
            text = normalize(master.pop("text", ""))
            found[doc] = CachedMaster(master, text, Shingles.of(gram_hashes(text.tokens)))
        # Cached afterwards, the ones asked for last: caching a master must not evict another
        # one this call returns.
        for doc, master in found.items():
            self._masters.put(doc, master)
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

    def _io(self) -> ThreadPoolExecutor:
        if self._io_pool is None:
            self._io_pool = ThreadPoolExecutor(1, thread_name_prefix="detector-io")
        return self._io_pool

    def _segmenter(self) -> ThreadPoolExecutor:
        if self._segmenter_pool is None:
            self._segmenter_pool = ThreadPoolExecutor(1, thread_name_prefix="detector-jieba")
        return self._segmenter_pool

    def check(self, text: str) -> list[Match]:
        return self.check_many([text])[0]

    def check_many(self, texts: Sequence[str]) -> list[list[Match]]:
        return self._check([normalize(text) for text in texts])

    def check_normalized(self, page: NormalizedText, simhash: int) -> list[Match]:
        """Check a page already normalised, with its SimHash (as the crawl pipelines have them)."""
        return self._check([page], [simhash])[0]

    def _check(
        self, pages: list[NormalizedText], simhashes: list[int] | None = None
    ) -> list[list[Match]]:
        """Work overlaps the round trips it does not depend on. The pages are segmented into
        jieba words (the costliest step; rjieba runs without the GIL, so on another core) while
        their lookups are planned; the anchor and DNA buckets are fetched while the pages'
        shingles are sorted and their SimHash summed; the masters the votes name are loaded
        from MongoDB while the SimHash buckets are fetched."""
        live = [i for i, page in enumerate(pages) if len(page)]
        folded = [page.chars for page in pages]
        words = self._segmenter().submit(segment, folded) if simhashes is None else None
        queries = [self.index.plan(pages[i].tokens) for i in live]
        io = self._io()
        pending = io.submit(self.index.fetch, queries)
        page_shingles = [Shingles.of(q.grams) for q in queries]
        if words is not None:
            simhashes = simhash_segmented(folded, words.result()).tolist()
        version = pending.result()
        if version != self.version:
            self.masters.clear()
            self.version = version
        candidates = [self.index.candidates(q) for q in queries]
        long = [len(pages[i]) >= DENSE_BELOW_TOKENS for i in live]
        voted = {d for c, lp in zip(candidates, long, strict=True) for d in c.ranked(long_page=lp)}
        missing = self.masters.missing(sorted(voted))
        loading = io.submit(self.store.by_ns, missing) if missing else None
        self.index.fetch_simhash(queries, [simhashes[i] for i in live])
        ranked = []
        for query, found, long_page in zip(queries, candidates, long, strict=True):
            found.near_duplicates = self.index.near_duplicates(query)
            ranked.append(found.ranked(long_page=long_page))
        # Near-duplicates the votes did not name (rare) are loaded by ``get`` itself.
        masters = self.masters.get(
            sorted({d for docs in ranked for d in docs}),
            loading.result() if loading is not None else None,
        )
        results: list[list[Match]] = [[] for _ in pages]
        for k, i in enumerate(live):
            for doc in ranked[k]:
                if doc not in masters:
                    continue  # deleted since it was indexed
                master = masters[doc]
                alignment = align(
                    pages[i].tokens,
                    master.text.tokens,
                    min_tokens=self.settings.min_span_chars,
                    page_shingles=page_shingles[k],
                    master_shingles=master.shingles,
                )
                if self._is_copy(alignment, doc in candidates[k].near_duplicates):
                    results[i].append(self._match(alignment, pages[i], master, candidates[k], doc))
        for matches in results:
            matches.sort(key=lambda m: (-m.score, -m.coverage, m.doc_id))
        return results

    def _match(
        self,
        alignment: Alignment,
        page: NormalizedText,
        master: CachedMaster,
        candidates: Candidates,
        doc: int,
    ) -> Match:
        shorter = max(1, min(len(page), len(master.text)))
        return Match(
            doc_id=master.meta["_id"],
            work=master.meta.get("work", ""),
            title=master.meta.get("title", ""),
            score=round(min(1.0, alignment.master_tokens / shorter), 4),
            coverage=round(alignment.coverage, 4),
            method=candidates.methods(doc),
            spans=self._spans(alignment, page, master.text),
        )

    def _is_copy(self, alignment: Alignment, near_duplicate: bool) -> bool:
        if alignment.master_tokens < MIN_EVIDENCE_TOKENS and not (
            near_duplicate and alignment.coverage >= 0.5
        ):
            return False
        if alignment.longest >= self.settings.min_passage_chars:
            return True  # one long copied passage
        if alignment.coverage >= MOST_OF_THE_MASTER:
            return True  # a disguised copy: passages cut short by edits, but most of the master
        # A partial copy: a share of the master, with enough evidence that it cannot be a few
        # quoted sentences or stock phrases shared with a short news item.
        return (
            alignment.coverage >= self.settings.min_coverage
            and alignment.master_tokens >= MIN_PARTIAL_EVIDENCE_TOKENS
            and alignment.longest >= MIN_LONGEST_FOR_COVERAGE
        )

    @staticmethod
    def _spans(
        alignment: Alignment, page: NormalizedText, master: NormalizedText | None
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
            if master is not None and len(master):
                span["master_start"], span["master_end"] = master.source_span(
                    min(p.master_start, len(master) - 1), min(p.master_end, len(master))
                )
            spans.append(span)
        return spans
