"""Drop a site's own boilerplate — short lines repeated across many of its pages — from the text
that is fingerprinted and matched (the stored text and every offset stay as they were). Each
page counts once, and lines of master text are never dropped (see
:mod:`tracker.text.site_boilerplate`)."""

from __future__ import annotations

from scrapy import Spider
from scrapy.crawler import Crawler

from pipelines import SERVER_ERRORS, count_failure
from tracker.context import tracker_context
from tracker.items import PageItem
from tracker.model import site_of
from tracker.text.normalize import normalize
from tracker.text.site_boilerplate import MasterText, SiteBoilerplate


class SiteBoilerplatePipeline:
    def __init__(self, crawler: Crawler) -> None:
        self.crawler = crawler
        self.stats = crawler.stats
        self.min_pages = crawler.settings.getint("TRACKER_BOILERPLATE_MIN_PAGES", 5)
        self._boilerplate: SiteBoilerplate | None = None

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> SiteBoilerplatePipeline:
        return cls(crawler)

    def process_item(self, item: PageItem, spider: Spider | None = None) -> PageItem:
        context = tracker_context(self.crawler)
        if self._boilerplate is None:
            self._boilerplate = SiteBoilerplate(
                context.runtime.redis, context.runtime.settings.redis_prefix, self.min_pages
            )
        library = MasterText(
            find=lambda text: [
                (span["page_start"], span["page_end"])
                for match in context.detector.check(text)
                for span in match.spans
            ],
            version=lambda: context.detector.version or 0,
        )
        url = item["url"]
        try:
            mask, dropped = self._boilerplate.mask(site_of(url), item["text"], url, library)
        except SERVER_ERRORS as exc:  # counts or library unavailable: match the page as it is
            count_failure(self.stats, exc, url, "site boilerplate lookup")
            return item
        if dropped:
            item["normalized"] = normalize(item["text"], drop=mask)
            self.stats.inc_value("tracker/boilerplate_lines", dropped)
        return item
