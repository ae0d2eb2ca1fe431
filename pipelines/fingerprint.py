"""Fingerprint a page's text: its SimHash-64 (matched against the library's near-duplicate
index and used to group mirror copies). The page's shingles are hashed by the match itself.
The extraction worker hashes the text it extracted
(:func:`tracker.reading.extract.extract_normalized`); this stage hashes the pages that come without
one (their site's boilerplate was dropped, or they were not extracted by the worker).

The SimHash of a batch of pages is computed together in a worker thread: the jieba
segmentation runs there without the GIL (on another core than the downloads), and the
hashing pays numpy's per-call cost once per batch (:func:`simhash_normalized`)."""

from __future__ import annotations

from pipelines import BatchedStage, Tally
from tracker.crawling.items import PageItem
from tracker.fingerprints.simhash import simhash_normalized
from tracker.text.normalize import normalize


class FingerprintPipeline(BatchedStage):
    stage = "fingerprint"

    def warm_up(self) -> None:
        """Nothing: the stage uses no server, and the segmenter's dictionary (~0.2 s) loads on
        the first page that needs hashing here, which most crawls never meet."""

    async def process_item(self, item: PageItem) -> PageItem:
        """A page hashed already (by its extraction worker, nearly every page) goes on at
        once, without a round trip through the stage's thread."""
        if item.get("simhash") is not None:
            return item
        return await super().process_item(item)

    def process_batch(self, items: list[PageItem]) -> list[Tally]:
        unhashed = [item for item in items if item.get("simhash") is None]
        for item in unhashed:
            if not item.get("normalized"):
                item["normalized"] = normalize(item["text"])
        simhashes = simhash_normalized([item["normalized"] for item in unhashed]).tolist()
        for item, simhash in zip(unhashed, simhashes, strict=True):
            item["simhash"] = simhash
        return [Tally(item["url"]) for item in items]
