"""Match fingerprinted pages against the master library index, a batch at a time: the index
is read in one round trip for the whole batch (:meth:`Detector.check_normalized_many`). With
``TRACKER_MATCH_IN_WORKERS`` (and worker processes) the batches are checked in the crawl's
worker processes (:mod:`tracker.crawling.match_worker`), off the crawl process's GIL; a page
whose batch failed there, and every page without worker processes, is checked in the stage's
worker thread, with the reconnections and failure counts of :class:`pipelines.BatchedStage`."""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from scrapy.crawler import Crawler

from pipelines import SERVER_ERRORS, BatchedStage, Tally, close_batcher
from pipelines.extract import worker_pool
from tracker.config import Settings
from tracker.crawling import workers
from tracker.crawling.context import tracker_context
from tracker.crawling.items import PageItem
from tracker.crawling.match_worker import MatchFailed, match_pages
from tracker.crawling.process_pool import PoolBatcher
from tracker.reading.extract import WARM_UP_TEXT
from tracker.text.normalize import normalize

log = logging.getLogger(__name__)


class MatchPipeline(BatchedStage):
    """Sets each page's ``matches`` (None when matching failed: the page is stored as such
    and matched again by the next crawl or ``tracker rematch``) and ``library_version``."""

    stage = "match"

    def __init__(self, crawler: Crawler) -> None:
        super().__init__(crawler)
        self.remote: PoolBatcher | None = None
        settings = crawler.settings
        if workers.matching_in_workers(settings):
            pool = worker_pool(crawler)
            if pool.processes:
                self.remote = PoolBatcher(
                    pool,
                    match_pages,
                    size=settings.getint("TRACKER_BATCH_SIZE", Settings.batch_size),
                    delay=settings.getfloat("TRACKER_BATCH_DELAY", Settings.batch_delay),
                    name="pipeline-match-workers",
                )

    def warm_up(self) -> None:
        """The connections, and one short text looked up: the index's query tables load (in
        the workers instead when they check the pages); the rewrite stage's lexicon loads on
        the first page that stage reads (see :func:`tracker.crawling.match_worker.warm_up`)."""
        super().warm_up()
        if self.remote is None:
            detector = tracker_context(self.crawler).detector
            detector.check_normalized_many([normalize(WARM_UP_TEXT)], [0], rewrites=False)

    async def process_item(self, item: Any) -> Any:
        if self.remote is None or item.get("file"):
            return await super().process_item(item)
        try:
            result = await self.remote.submit((item["normalized"], item["simhash"]))
        except Exception as exc:  # a worker gone twice: the crawl process checks the page
            result = MatchFailed(repr(exc))
        if isinstance(result, MatchFailed):
            log.info("matching %s in the crawl process: %s", item["url"], result)
            self.stats.inc_value("tracker/match/in_crawl_process")
            return await super().process_item(item)
        matches, version = result
        _record(item, matches, version, self.stats.inc_value)
        return item

    async def close_spider(self) -> None:
        if self.remote is not None:
            await close_batcher(self.crawler, self.remote, "match")
            await close_batcher(self.crawler, self.batcher, "match/in_crawl_process")
        else:
            await super().close_spider()

    def process_batch(self, items: list[PageItem]) -> list[Tally]:
        context = tracker_context(self.crawler)
        tallies = [Tally(item["url"]) for item in items]
        pages = [item["normalized"] for item in items]
        simhashes = [item["simhash"] for item in items]
        try:
            found = context.call(
                lambda: context.detector.check_normalized_many(pages, simhashes), "matching"
            )
            version = context.detector.version or 0
        except SERVER_ERRORS as exc:  # keep the pages, unmatched; count each
            for item, tally in zip(items, tallies, strict=True):
                tally.failure(exc, "matching", "unmatched")
                item["matches"] = None
            return tallies
        for item, tally, matches in zip(items, tallies, found, strict=True):
            _record(item, [m.to_dict() for m in matches], version, tally.inc)
        return tallies


def _record(
    item: PageItem, matches: list[dict], version: int, inc: Callable[[str, int], None]
) -> None:
    """The page's matches and the library version they were found against; counted."""
    item["matches"] = matches
    item["library_version"] = version
    if matches:
        inc("tracker/pages_matched", 1)
        inc("tracker/matches", len(matches))
