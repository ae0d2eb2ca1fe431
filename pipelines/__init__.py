"""Item pipelines: extract → skip unchanged → read download files → drop site boilerplate →
fingerprint → match → store (see ``ITEM_PIPELINES``).

No stage blocks the reactor. Extraction runs in worker processes
(``TRACKER_EXTRACT_PROCESSES``); every MongoDB and Redis call, and the pauses of a reconnection
(:meth:`tracker.crawling.context.TrackerContext.call`), run in a worker thread per stage, a batch of
pages at a time (:class:`tracker.batching.Batcher`: a batch goes to the worker when it holds
``TRACKER_BATCH_SIZE`` pages, or when the worker is free and ``TRACKER_BATCH_DELAY`` seconds have
passed since its first page, so batches grow while the worker is busy), so a slow or absent
server holds up the pages that need it, never the downloads. Stats are counted in the reactor
thread (:class:`Tally`).

A page that could not be matched or stored because a server failed is counted as
``tracker/errors/index`` (Redis) or ``tracker/errors/store`` (MongoDB) and as
``tracker/degraded/unmatched`` or ``tracker/degraded/unstored``, each page of a failed batch
for itself; the crawl then ends with ``status: degraded`` and a non-zero exit status (see
:mod:`tracker.crawling.extensions`).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

from pymongo.errors import PyMongoError
from redis.exceptions import RedisError
from scrapy.crawler import Crawler
from scrapy.statscollectors import StatsCollector

from tracker.batching import Batcher
from tracker.config import Settings
from tracker.crawling.context import tracker_context

log = logging.getLogger(__name__)

SERVER_ERRORS = (RedisError, PyMongoError)

T = TypeVar("T")


def count_failure(
    stats: StatsCollector, exc: Exception, url: str, what: str, degraded: str | None = None
) -> None:
    """Log and count a server failure met while processing ``url``; with ``degraded``
    (``unmatched`` or ``unstored``), the page's record is incomplete."""
    kind = "index" if isinstance(exc, RedisError) else "store"
    log.error("%s failed for %s: %s", what, url, exc)
    stats.inc_value(f"tracker/errors/{kind}")
    if degraded:
        stats.inc_value(f"tracker/degraded/{degraded}")
        stats.inc_value("tracker/degraded")


class Tally:
    """What processing one page in a worker thread adds to the crawl's stats, added in the
    reactor thread once the page's batch is done (Scrapy's stats collector is not
    thread-safe)."""

    def __init__(self, url: str) -> None:
        self.url = url
        self._counts: list[tuple[str, int]] = []
        self._failures: list[tuple[Exception, str, str | None]] = []

    def inc(self, key: str, count: int = 1) -> None:
        self._counts.append((key, count))

    def failure(self, exc: Exception, what: str, degraded: str | None = None) -> None:
        """A server failure, counted as :func:`count_failure` counts it."""
        self._failures.append((exc, what, degraded))

    def apply(self, stats: StatsCollector) -> None:
        for exc, what, degraded in self._failures:
            count_failure(stats, exc, self.url, what, degraded)
        for key, count in self._counts:
            stats.inc_value(key, count)


def stage_batcher(
    crawler: Crawler, handler: Callable[[list[T]], Sequence[object]], name: str
) -> Batcher:
    """The batcher of stage ``name``, sized by the crawl's settings."""
    settings = crawler.settings
    return Batcher(
        handler,
        size=settings.getint("TRACKER_BATCH_SIZE", Settings.batch_size),
        delay=settings.getfloat("TRACKER_BATCH_DELAY", Settings.batch_delay),
        name=f"pipeline-{name}",
    )


async def close_batcher(crawler: Crawler, batcher: Batcher, name: str) -> None:
    """Finish the stage's pending batches and stop its worker; record how it batched
    (``tracker/batches/<name>``: batches run, ``…/pages``: pages in them)."""
    await batcher.close()
    if crawler.stats is not None and batcher.batches:
        crawler.stats.set_value(f"tracker/batches/{name}", batcher.batches)
        crawler.stats.set_value(f"tracker/batches/{name}/pages", batcher.items)


class BatchedStage:
    """A pipeline stage whose work runs in a worker thread of its own, a batch of pages at a
    time: a subclass names its ``stage`` and implements :meth:`process_batch`."""

    stage = "stage"
    #: Whether download files (items with ``file``, see :mod:`pipelines.files`) go through this
    #: stage; the page stages pass them on untouched.
    reads_files = False

    def __init__(self, crawler: Crawler) -> None:
        self.crawler = crawler
        self.stats = crawler.stats
        self.batcher = stage_batcher(crawler, self.process_batch, self.stage)

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Any:
        return cls(crawler)

    def open_spider(self, spider: Any = None) -> None:
        self.batcher.prepare(self.warm_up)

    def warm_up(self) -> None:
        """What the stage's first batch would otherwise wait for (in its worker thread, as the
        crawl opens): the tracker's connections and components."""
        tracker_context(self.crawler).warm_up()

    async def process_item(self, item: Any) -> Any:
        if item.get("file") and not self.reads_files:
            return item
        tally = await self.batcher.submit(item)
        tally.apply(self.stats)
        return item

    async def close_spider(self) -> None:
        await close_batcher(self.crawler, self.batcher, self.stage)

    def process_batch(self, items: list[Any]) -> list[Any]:
        """Process ``items`` (in the worker thread): a :class:`Tally` per item, in order."""
        raise NotImplementedError
