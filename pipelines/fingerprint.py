"""Fingerprint a page's text: its SimHash-64 (matched against the library's near-duplicate
index and used to group mirror copies). The page's shingles are hashed by the match itself.

The SimHash of a batch of pages is computed together in a worker thread: the jieba
segmentation runs there without the GIL (on another core than the downloads), and the
hashing pays numpy's per-call cost once per batch (:func:`simhash_texts`)."""

from __future__ import annotations

from scrapy.crawler import Crawler

from pipelines import close_batcher, stage_batcher
from tracker.fingerprints.simhash import simhash_texts
from tracker.items import PageItem
from tracker.text.normalize import normalize


class FingerprintPipeline:
    def __init__(self, crawler: Crawler) -> None:
        self.crawler = crawler
        self.batcher = stage_batcher(crawler, self._fingerprint_batch, "fingerprint")

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> FingerprintPipeline:
        return cls(crawler)

    async def close_spider(self) -> None:
        await close_batcher(self.crawler, self.batcher, "fingerprint")

    async def process_item(self, item: PageItem) -> PageItem:
        item["simhash"] = await self.batcher.submit(item)
        return item

    @staticmethod
    def _fingerprint_batch(items: list[PageItem]) -> list[int]:
        for item in items:
            if not item.get("normalized"):
                item["normalized"] = normalize(item["text"])
        return simhash_texts([item["normalized"].chars for item in items]).tolist()
