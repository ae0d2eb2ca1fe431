"""Fingerprint a page's text: its SimHash-64 (matched against the library's near-duplicate
index and used to group mirror copies). The page's shingles are hashed by the match itself."""

from __future__ import annotations

from scrapy import Spider

from tracker.fingerprints.document import text_simhash
from tracker.items import PageItem
from tracker.text.normalize import normalize


class FingerprintPipeline:
    def process_item(self, item: PageItem, spider: Spider | None = None) -> PageItem:
        normalized = item.get("normalized") or normalize(item["text"])
        item["normalized"] = normalized
        item["simhash"] = text_simhash(normalized)
        return item
