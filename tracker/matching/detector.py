"""Decide which master documents a text copies, and prove it with the copied passages.

1. Normalise and fingerprint the text (:mod:`tracker.fingerprints`).
2. Candidates from the index: SimHash near-duplicates (Hamming ≤ k), masters sharing ≥ 2 shingle
   anchors, masters sharing a pinyin-DNA window.
3. Align the text with each candidate (:mod:`tracker.matching.align`) to get the copied passages.
4. Report a master when the aligned evidence is at least ``min_evidence_tokens`` and either covers
   ``min_coverage`` of the master or contains one passage of ``min_passage_chars`` tokens — so a
   page that copies a few hundred characters is reported, while commentary quoting a sentence
   or two is not.

``score`` is the copied share of the shorter of the two texts (1.0 for a whole copy); ``coverage``
the share of the master found in the text.
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import asdict, dataclass, field

from tracker.config import Settings
from tracker.fingerprints.document import DocumentFingerprint, fingerprint
from tracker.index.master_index import MasterIndex
from tracker.matching.align import Alignment, align
from tracker.stores.masters import MasterStore
from tracker.text.normalize import NormalizedText, normalize

MIN_EVIDENCE_TOKENS = 60
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


class MasterTexts:
    """LRU cache of normalised master texts, fetched from MongoDB by integer id."""

    def __init__(self, store: MasterStore, size: int = 4096) -> None:
        self.store = store
        self.size = size
        self._cache: OrderedDict[int, tuple[dict, NormalizedText]] = OrderedDict()

    def get(self, ns: list[int]) -> dict[int, tuple[dict, NormalizedText]]:
        missing = [n for n in ns if n not in self._cache]
        if missing:
            for n, doc in self.store.by_ns(missing).items():
                self._cache[n] = (doc, normalize(doc["text"]))
        found = {}
        for n in ns:
            if n in self._cache:
                self._cache.move_to_end(n)
                found[n] = self._cache[n]
        while len(self._cache) > self.size:
            self._cache.popitem(last=False)
        return found

    def forget(self, n: int) -> None:
        self._cache.pop(n, None)


class Detector:
    def __init__(
        self, store: MasterStore, index: MasterIndex, settings: Settings | None = None
    ) -> None:
        self.store = store
        self.index = index
        self.settings = settings or Settings()
        self.texts = MasterTexts(store)

    def check(self, text: str) -> list[Match]:
        normalized, fp = fingerprint(text)
        return self.check_fingerprinted(normalized, fp)

    def check_fingerprinted(self, page: NormalizedText, fp: DocumentFingerprint) -> list[Match]:
        if len(page) == 0:
            return []
        candidates = self.index.candidates(fp, self.store.simhashes)
        ranked = candidates.ranked()
        matches = []
        for n, (doc, master) in self.texts.get(ranked).items():
            alignment = align(page.tokens, master.tokens, min_tokens=self.settings.min_span_chars)
            if not self._is_copy(alignment, n in candidates.near_duplicates):
                continue
            shorter = max(1, min(len(page), len(master)))
            matches.append(
                Match(
                    doc_id=doc["_id"],
                    work=doc.get("work", ""),
                    title=doc.get("title", ""),
                    score=round(min(1.0, alignment.master_tokens / shorter), 4),
                    coverage=round(alignment.coverage, 4),
                    method=candidates.methods(n),
                    spans=self._spans(alignment, page, master),
                )
            )
        matches.sort(key=lambda m: (-m.score, -m.coverage, m.doc_id))
        return matches

    def _is_copy(self, alignment: Alignment, near_duplicate: bool) -> bool:
        if alignment.master_tokens < MIN_EVIDENCE_TOKENS and not (
            near_duplicate and alignment.coverage >= 0.5
        ):
            return False
        return (
            alignment.coverage >= self.settings.min_coverage
            or alignment.longest >= self.settings.min_passage_chars
        )

    @staticmethod
    def _spans(alignment: Alignment, page: NormalizedText, master: NormalizedText) -> list[dict]:
        spans = []
        for p in alignment.passages:
            page_start, page_end = page.source_span(p.page_start, min(p.page_end, len(page)))
            master_start, master_end = master.source_span(
                p.master_start, min(p.master_end, len(master))
            )
            spans.append(
                {
                    "page_start": page_start,
                    "page_end": page_end,
                    "master_start": master_start,
                    "master_end": master_end,
                    "text": page.source[page_start:page_end][:MAX_SPAN_TEXT],
                }
            )
        return spans
