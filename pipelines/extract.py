"""Extract the body text of a page (site selector, trafilatura, fallback); drop textless pages."""

from __future__ import annotations

import logging

from scrapy import Spider
from scrapy.crawler import Crawler
from scrapy.exceptions import DropItem

from tracker.extract import ExtractionRules, extract
from tracker.items import PageItem
from tracker.text.normalize import normalize

log = logging.getLogger(__name__)


class ExtractPipeline:
    def __init__(self, crawler: Crawler) -> None:
        self.stats = crawler.stats
        self.min_chars = crawler.settings.getint("TRACKER_MIN_TEXT_CHARS", 80)

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> ExtractPipeline:
        return cls(crawler)

    def process_item(self, item: PageItem, spider: Spider | None = None) -> PageItem:
        rules = ExtractionRules.from_dict(item.get("rules"))
        try:
            extracted = extract(item["html"], item["url"], rules)
        except Exception as exc:  # hostile markup must not stop the crawl
            log.warning("extraction failed for %s: %r", item["url"], exc)
            self.stats.inc_value("tracker/errors/extract")
            raise DropItem(f"extraction failed: {item['url']}") from exc
        if rules and (rules.css or rules.xpath) and extracted.extractor not in ("css", "xpath"):
            self.stats.inc_value("tracker/extract/selector_missed")
        normalized = normalize(extracted.text)
        self.stats.inc_value(f"tracker/extractor/{extracted.extractor}")
        if len(normalized) < self.min_chars:
            self.stats.inc_value("tracker/pages_without_text")
            raise DropItem(f"no body text ({len(normalized)} characters): {item['url']}")
        self.stats.inc_value("tracker/pages_extracted")
        item["text"] = extracted.text
        item["title"] = extracted.title
        item["chapter_title"] = extracted.chapter_title
        item["metadata"] = extracted.metadata
        item["extractor"] = extracted.extractor
        item["normalized"] = normalized
        return item
