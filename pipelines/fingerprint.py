"""Fingerprint a page's text: SimHash-64, pinyin-DNA windows and shingle anchors."""

from __future__ import annotations

from scrapy import Spider

from tracker.fingerprints.document import fingerprint
from tracker.items import PageItem


class FingerprintPipeline:
    def process_item(self, item: PageItem, spider: Spider | None = None) -> PageItem:
        normalized, fp = fingerprint(item.get("normalized") or item["text"])
        item["normalized"] = normalized
        item["fingerprint"] = fp
        return item
