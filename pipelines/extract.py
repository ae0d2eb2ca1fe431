"""Extract the body text of a page (trafilatura, with a fallback) and drop pages without text."""

from __future__ import annotations

from scrapy import Spider
from scrapy.crawler import Crawler
from scrapy.exceptions import DropItem

from tracker.extract import extract
from tracker.items import PageItem
from tracker.text.normalize import normalize


class ExtractPipeline:
    def __init__(self, crawler: Crawler) -> None:
        self.stats = crawler.stats
        self.min_chars = crawler.settings.getint("TRACKER_MIN_TEXT_CHARS", 80)

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> ExtractPipeline:
        return cls(crawler)

    def process_item(self, item: PageItem, spider: Spider | None = None) -> PageItem:
        extracted = extract(item["html"], item["url"])
        normalized = normalize(extracted.text)
        self.stats.inc_value(f"tracker/extractor/{extracted.extractor}")
        if len(normalized) < self.min_chars:
            self.stats.inc_value("tracker/pages_without_text")
            raise DropItem(f"no body text ({len(normalized)} characters): {item['url']}")
        item["text"] = extracted.text
        item["title"] = extracted.title
        item["extractor"] = extracted.extractor
        item["normalized"] = normalized
        return item
