"""Store the page (upsert by URL) and its matches in MongoDB."""

from __future__ import annotations

import logging

from pymongo.errors import PyMongoError
from scrapy import Spider
from scrapy.crawler import Crawler

from tracker.context import tracker_context
from tracker.fingerprints.document import to_signed
from tracker.items import PageItem
from tracker.stores.pages import PageRecord

log = logging.getLogger(__name__)


class StorePipeline:
    def __init__(self, crawler: Crawler) -> None:
        self.crawler = crawler
        self.stats = crawler.stats

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> StorePipeline:
        return cls(crawler)

    def process_item(self, item: PageItem, spider: Spider | None = None) -> PageItem:
        context = tracker_context(self.crawler)
        matches = item.get("matches") or []
        record = PageRecord(
            url=item["url"],
            text=item["text"],
            title=item.get("title") or "",
            extractor=item.get("extractor") or "",
            status=item.get("status", 200),
            simhash=to_signed(item["simhash"]) if item.get("simhash") is not None else None,
            extra={
                "matched_doc_ids": [m["doc_id"] for m in matches],
                "encoding": item.get("encoding"),
                "chapter_title": item.get("chapter_title") or "",
                "metadata": item.get("metadata") or {},
                "truncated": bool(item.get("truncated")),
            },
        )
        try:
            changed = context.pages.save(record)
            new_matches = context.matches.record(item["url"], matches)
        except PyMongoError as exc:  # the store is away: count it, keep crawling
            log.error("could not store %s: %s", item["url"], exc)
            self.stats.inc_value("tracker/errors/store")
            return item
        self.stats.inc_value("tracker/pages_stored")
        if not changed:
            self.stats.inc_value("tracker/pages_unchanged")
        if new_matches:
            self.stats.inc_value("tracker/matches_new", new_matches)
        return item
