"""Extract the body text of a page (site selector, platform, trafilatura, fallback); drop list
pages, textless pages and copies of a page's canonical.

* **Lists.** The spider drops only obvious link lists; here a page is a list when its extracted
  main text is short of prose and mostly link lines
  (:attr:`tracker.reading.extract.Extracted.is_list`), whatever the rest of the page holds. Counted
  as ``tracker/skipped/list_page``.
* **Script-rendered pages.** A page the spider flagged as possibly unrendered
  (``render_reason``) whose body does not come out (too short, or a placeholder) is sent
  to the browser by the spider (:meth:`spiders.base.TrackerSpider.after_reading`) and dropped
  here; its rendered page comes back as a new item.
* **Canonical copies.** A page whose ``<link rel="canonical">`` names another page is stored
  under its own URL (markup must not hide a page) unless its text is its canonical's: then one
  copy suffices. The canonical's text is known when it was met earlier in this crawl or is
  stored; when the page is met before its canonical, the page is kept and the canonical,
  arriving later with the same text, is the copy dropped. Counted as
  ``tracker/pages_canonical_copy``.

Extraction runs in ``TRACKER_EXTRACT_PROCESSES`` worker processes (0: in a thread of the crawl
process), beside the downloads and the other stages, ``TRACKER_EXTRACT_BATCH`` pages to a call
(:class:`tracker.crawling.process_pool.PoolBatcher`: the batches grow while the worker is busy); a
page whose extraction fails, or kills its worker twice, is counted as ``tracker/errors/extract`` and
dropped. With ``TRACKER_EXTRACT_LEARNED_BODY`` a worker reads the further pages of a site whose
body element it has learned from trafilatura's text with that element
(:mod:`tracker.reading.locator`; counted as ``tracker/reading/learned_body``). Stored canonicals
are looked up a batch at a time in a worker thread.

What else reading a page takes (the further parts of a chapter split over several pages, the
same-site stylesheets, the web font that draws its Private-Use characters) is gathered first
(:class:`tracker.crawling.resources.PageResources`) and sent with the page; what reading took
is counted as ``tracker/reading/<what>`` and kept on the page (``reading``).
"""

from __future__ import annotations

import functools
import logging
from collections import OrderedDict
from typing import Any, TypeVar

from scrapy import Spider
from scrapy.crawler import Crawler

from pipelines import SERVER_ERRORS, Tally, close_batcher, stage_batcher
from spiders.base import canonical_of
from tracker.config import Settings
from tracker.crawling import match_worker, workers
from tracker.crawling.context import crawler_component, tracker_context
from tracker.crawling.items import PageItem
from tracker.crawling.outcomes import SKIPPED, UNREAD, Ended
from tracker.crawling.process_pool import PoolBatcher, ProcessPool
from tracker.crawling.rendering import SCRIPTED_GAIN_CHARS, placeholder_only
from tracker.crawling.resources import PageResources
from tracker.enforcement.capture import exchange_from_data
from tracker.reading.extract import ExtractionRules, PageContext, extract_pages, warm_up

log = logging.getLogger(__name__)

V = TypeVar("V")

#: Pages whose text digest is remembered for the canonical check (LRU, ~150 bytes each).
RECENT_PAGES = 100_000


def worker_pool(crawler: Crawler) -> ProcessPool:
    """The crawl's worker processes (``TRACKER_EXTRACT_PROCESSES``): extraction, and the
    check of the pages with ``TRACKER_MATCH_IN_WORKERS`` (:mod:`tracker.crawling.match_worker`,
    whose warm-up then also builds the worker's detector)."""

    def make() -> ProcessPool:
        settings = crawler.settings
        return ProcessPool(
            settings.getint("TRACKER_EXTRACT_PROCESSES", 0),  # 0 outside a project crawl
            preload=workers.preload(settings),
            warm_up=match_worker.warm_up if workers.matching_in_workers(settings) else warm_up,
        )

    return crawler_component(crawler, "_tracker_worker_pool", make)


class ExtractPipeline:
    def __init__(self, crawler: Crawler) -> None:
        self.crawler = crawler
        self.stats = crawler.stats
        self.min_chars = crawler.settings.getint("TRACKER_MIN_TEXT_CHARS", Settings.min_text_chars)
        self.recent: OrderedDict[str, str] = OrderedDict()  # url -> text digest, this crawl
        self.variants: OrderedDict[str, set[str]] = OrderedDict()  # canonical -> kept digests
        self.pool = worker_pool(crawler)
        learn = crawler.settings.getbool(
            "TRACKER_EXTRACT_LEARNED_BODY", Settings.extract_learned_body
        )
        self.extractions = PoolBatcher(
            self.pool,
            functools.partial(extract_pages, learn=learn),
            size=crawler.settings.getint("TRACKER_EXTRACT_BATCH", Settings.extract_batch),
            delay=crawler.settings.getfloat("TRACKER_BATCH_DELAY", Settings.batch_delay),
            name="pipeline-extract",
        )
        self.lookups = stage_batcher(crawler, self._stored_digests, "canonical")
        self.resources = PageResources(crawler, self.pool)

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> ExtractPipeline:
        return cls(crawler)

    def open_spider(self, spider: Spider | None = None) -> None:
        self.pool.start()

    async def close_spider(self, spider: Spider | None = None) -> None:
        await close_batcher(self.crawler, self.extractions, "extract")
        await close_batcher(self.crawler, self.lookups, "canonical")
        self.pool.close()

    async def process_item(self, item: PageItem) -> PageItem:
        if item.get("file"):  # a download file, read by pipelines.files
            return item
        rules = ExtractionRules.from_dict(item.get("rules"))
        context = await self._context(item)
        page = await self._extract(item, item["html"], rules, context)
        plain_html = item.pop("plain_html", None)
        plain_exchanges = item.pop("plain_exchanges", None)
        kept_plain = False
        if plain_html is not None and len(page.normalized) < (item.get("plain_chars") or 0):
            # Rendering may add text, never take the static text away: the plain page it was
            # fetched as carried more, so that is the page read (and its exchanges the
            # evidence); the browser's did not help.
            plain = await self._extract(item, plain_html, rules, context)
            if len(plain.normalized) > len(page.normalized):
                self.stats.inc_value("tracker/render/plain_kept")
                page, item["html"], kept_plain = plain, plain_html, True
                if plain_exchanges:
                    item["exchanges"] = [exchange_from_data(e) for e in plain_exchanges]
        extracted, normalized = page.extracted, page.normalized
        if extracted.located:
            self.stats.inc_value("tracker/reading/learned_body")
        for what, count in extracted.reading.items():
            self.stats.inc_value(f"tracker/reading/{what}", count)
        if rules and (rules.css or rules.xpath) and extracted.extractor not in ("css", "xpath"):
            self.stats.inc_value("tracker/reading/extract/selector_missed")
        if item.get("render_reason"):  # a page that may need the browser (spiders.base)
            body = (
                len(normalized) >= self.min_chars
                and not placeholder_only(extracted.text)
                and not kept_plain  # the browser did not help
            )
            plain = item.get("plain_chars")  # its text when fetched plainly, if it was
            if plain is None:
                item["plain_chars"] = len(normalized)
            if item["render_reason"] == "scripted":
                # the text around an empty element a script fills: render it; the rendering
                # helped (teaches that the site needs it) only when it added text
                body = body and plain is not None and len(normalized) >= plain + SCRIPTED_GAIN_CHARS
            if (drop := self.crawler.spider.after_reading(item, body)) is not None:
                raise drop
        if extracted.is_list and not (rules and rules.articles):
            self.stats.inc_value("tracker/skipped/list_page")
            raise Ended(f"list page (main text mostly links): {item['url']}", SKIPPED, "list_page")
        self.stats.inc_value(f"tracker/extractor/{extracted.extractor}")
        if len(normalized) < self.min_chars:
            self.stats.inc_value("tracker/pages_without_text")
            raise Ended(
                f"no body text ({len(normalized)} characters): {item['url']}",
                SKIPPED,
                "without_text",
            )
        await self._drop_canonical_copy(
            item["url"], page.content_hash, extracted.metadata.get("canonical")
        )
        self.stats.inc_value("tracker/pages_extracted")
        item["text"] = extracted.text
        item["title"] = extracted.title
        item["chapter_title"] = extracted.chapter_title
        item["metadata"] = extracted.metadata
        item["extractor"] = extracted.extractor
        item["reading"] = extracted.reading
        item["content_hash"] = page.content_hash
        item["normalized"] = normalized
        item["simhash_votes"] = page.votes
        item["simhash"] = page.simhash
        return item

    async def _extract(
        self, item: PageItem, html: str, rules: ExtractionRules | None, context: Any
    ) -> Any:
        """``html`` of ``item`` extracted in a worker (an ``ExtractedPage``); a failure ends
        the page unread (``extract_failed``)."""
        try:
            return await self.extractions.submit((html, item["url"], rules, context))
        except Exception as exc:  # hostile markup must not stop the crawl
            log.warning("extraction failed for %s: %r", item["url"], exc)
            self.stats.inc_value("tracker/errors/extract")
            raise Ended(f"extraction failed: {item['url']}", UNREAD, "extract_failed") from exc

    async def _context(self, item: PageItem) -> PageContext | None:
        """The page's parts, stylesheets and web-font glyphs; the parts alone when gathering
        the rest failed (counted): a page is read without its sheets rather than lost."""
        parts_html = item.pop("parts_html", None) or ()  # sent once, not carried further
        parts = tuple(zip(item.get("parts") or (), parts_html, strict=False))
        try:
            return await self.resources.context(item, parts)
        except Exception as exc:
            log.warning("resources of %s not read: %r", item["url"], exc)
            self.stats.inc_value("tracker/reading/resource_errors")
            return PageContext(parts) if parts else None

    async def _drop_canonical_copy(self, url: str, digest: str, href: str | None) -> None:
        """Raise DropItem when the page (its text's ``digest``) is a copy of its canonical, or
        the canonical of a page already kept with the same text; remember the digest
        otherwise."""
        canonical = canonical_of(url, href)
        if canonical is not None:
            known = self.recent.get(canonical)
            if known is None:
                stored, tally = await self.lookups.submit(canonical)
                tally.apply(self.stats)
                known = self.recent.get(canonical, stored)  # met meanwhile: that text wins
            if known == digest:
                self.stats.inc_value("tracker/pages_canonical_copy")
                raise Ended(
                    f"same text as its canonical {canonical}: {url}", SKIPPED, "canonical_copy"
                )
            _remember(self.variants, canonical, set()).add(digest)
        elif digest in self.variants.get(url, ()):
            self.stats.inc_value("tracker/pages_canonical_copy")
            raise Ended(
                f"same text as a page naming it canonical, kept: {url}", SKIPPED, "canonical_copy"
            )
        _remember(self.recent, url, digest)

    def _stored_digests(self, urls: list[str]) -> list[tuple[str | None, Tally]]:
        """The stored text digest of each of ``urls`` (None: not stored, or unknown when the
        store is away: the page is kept). In the lookup worker."""
        context = tracker_context(self.crawler)
        tallies = [Tally(url) for url in urls]
        try:
            known = context.call(lambda: context.pages.known_hashes(urls), "page lookup")
        except SERVER_ERRORS as exc:
            for tally in tallies:
                tally.failure(exc, "page lookup")
            known = {}
        return [(known.get(url), tally) for url, tally in zip(urls, tallies, strict=True)]


def _remember(table: OrderedDict[str, V], key: str, value: V) -> V:
    """``table[key]`` (set to ``value`` when absent), most recent last, oldest evicted."""
    if key in table:
        table.move_to_end(key)
        return table[key]
    table[key] = value
    if len(table) > RECENT_PAGES:
        table.popitem(last=False)
    return value
