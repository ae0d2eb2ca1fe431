"""Store the page (upsert by URL), its matches and its page-index anchors.

Order, so that a failure at any step leaves a page that the next crawl or ``tracker rematch``
processes again rather than one that looks done: a new text gets a new page number and its
anchors in the page index (:mod:`tracker.index.page_index`) first, then the matches (upserted,
the page's others closed), and the page document last, with its match state.
"""

from __future__ import annotations

from datetime import UTC, datetime

from scrapy import Spider
from scrapy.crawler import Crawler

from pipelines import SERVER_ERRORS, count_failure
from tracker.context import tracker_context
from tracker.fingerprints.document import to_signed
from tracker.items import PageItem
from tracker.stores.pages import PageRecord


class StorePipeline:
    def __init__(self, crawler: Crawler) -> None:
        self.crawler = crawler
        self.stats = crawler.stats

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> StorePipeline:
        return cls(crawler)

    def process_item(self, item: PageItem, spider: Spider | None = None) -> PageItem:
        context = tracker_context(self.crawler)
        url, now = item["url"], datetime.now(UTC)
        matches = item.get("matches")
        record = PageRecord(
            url=url,
            text=item["text"],
            title=item.get("title") or "",
            extractor=item.get("extractor") or "",
            status=item.get("status", 200),
            simhash=to_signed(item["simhash"]) if item.get("simhash") is not None else None,
            extra={
                "encoding": item.get("encoding"),
                "chapter_title": item.get("chapter_title") or "",
                "metadata": item.get("metadata") or {},
                "truncated": bool(item.get("truncated")),
            },
            matched=[m["doc_id"] for m in matches] if matches is not None else None,
            library_version=item.get("library_version") or 0,
        )
        new_matches = 0
        stored = item.get("stored") or {}
        if stored.get("content_hash") != item.get("content_hash") or not stored.get("n"):
            # A new text (or one never filed): a new page number, its anchors filed; not for
            # a page that could not be matched (0: rematch files it when it matches it).
            record.n = 0
            if record.matched is not None:
                try:
                    record.n = context.call(context.pages.allocate_n, "page number")
                    tokens = item["normalized"].tokens
                    context.call(lambda: context.page_index.add([(record.n, tokens)]), "page index")
                except SERVER_ERRORS as exc:  # not in the page index: let rematch redo it all
                    count_failure(self.stats, exc, url, "filing the page's anchors", "unmatched")
                    record.n, record.matched = 0, None
        try:
            if record.matched is not None:
                new_matches, closed = context.call(
                    lambda: context.matches.record(url, matches, now), "storing matches"
                )
                self.stats.inc_value("tracker/matches_closed", closed)
            changed = context.call(lambda: context.pages.save(record, now), "storing the page")
        except SERVER_ERRORS as exc:  # the store is away: count it, keep crawling
            count_failure(self.stats, exc, url, "storing", "unstored")
            return item
        self.stats.inc_value("tracker/pages_stored")
        if not changed:
            self.stats.inc_value("tracker/pages_unchanged_rematched")
        if new_matches:
            self.stats.inc_value("tracker/matches_new", new_matches)
        return item
