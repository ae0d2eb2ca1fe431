"""A crawl's record of the pages it could not read (see :mod:`tracker.stores.unread`).

The spider tells the ledger of every page it could not read (:meth:`UnreadLedger.unread`, with
a reason) and of every page it read (:meth:`UnreadLedger.read`). Reads cost nothing unless the
page was unread before: the ledger loads the crawl's sites' unread URLs when the crawl opens
(the spider asks for them again) and clears only those. The writes go to MongoDB in batches, in
a worker thread (:class:`tracker.batching.Batcher`), and are finished before the crawl closes.

Reasons: ``challenge``, ``captcha`` (:mod:`tracker.crawling.challenges`), ``banned`` (429/503
after the retries, :mod:`tracker.crawling.middlewares.bans`), ``forbidden`` (403), ``http_5xx``,
``timeout``, ``connection``, ``dns``, ``truncated`` (the body cut short in transfer: its
partial copy is kept as before), ``render_failed`` and ``render_unavailable`` (the browser
failed on the page, or did not start: :mod:`tracker.crawling.rendering`). Counted as
``tracker/unread`` and ``tracker/unread/<reason>``.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterable
from datetime import UTC, datetime
from itertools import groupby
from typing import Any

from pymongo.errors import PyMongoError
from scrapy.crawler import Crawler

from tracker.batching import Batcher
from tracker.crawling.context import tracker_context
from tracker.stores.unread import UnreadStore

log = logging.getLogger(__name__)

#: Unread URLs of its sites a crawl asks for again, at most.
RETRY_LIMIT = 10_000

READ, UNREAD = "read", "unread"


class UnreadLedger:
    def __init__(self, crawler: Crawler) -> None:
        self.crawler = crawler
        self.open: set[str] = set()  # unread before this crawl, or during it
        self.batcher: Batcher = Batcher(self._write, size=64, delay=0.2, name="unread")
        self._writes: set[asyncio.Future] = set()

    @property
    def stats(self) -> Any:
        return self.crawler.stats  # set once the crawl starts, after the spider is made

    def _store(self) -> tuple[UnreadStore, object]:
        context = tracker_context(self.crawler)
        return UnreadStore(context.runtime.db), context

    async def load(self, sites: Iterable[str]) -> list[str]:
        """The URLs of ``sites`` (hosts) still unread from earlier crawls, remembered so that
        reading one clears it: the spider asks for them again. A store that cannot be read
        gives none (logged)."""
        sites = sorted(set(sites))

        def read() -> list[str]:
            store, context = self._store()
            return context.call(lambda: store.of_sites(sites, RETRY_LIMIT), "unread pages")

        try:
            urls = await asyncio.get_running_loop().run_in_executor(None, read)
        except PyMongoError as exc:
            log.error("could not read the unread pages of %s: %s", ", ".join(sites), exc)
            self.stats.inc_value("tracker/errors/store")
            return []
        self.open.update(urls)
        if urls:
            self.stats.set_value("tracker/unread_retried", len(urls))
        return urls

    def unread(self, url: str, reason: str, detail: str = "") -> None:
        """``url`` could not be read, for ``reason``."""
        self.stats.inc_value("tracker/unread")
        self.stats.inc_value(f"tracker/unread/{reason}")
        log.warning("unread (%s): %s %s", reason, url, detail)
        self.open.add(url)
        self._submit((UNREAD, url, reason))

    def read(self, url: str) -> None:
        """``url`` was read: it is no longer unread, if it was."""
        if url in self.open:
            self.open.discard(url)
            self.stats.inc_value("tracker/unread_cleared")
            self._submit((READ, url, ""))

    async def close(self) -> None:
        """Finish the writes (before the crawl closes)."""
        await self.batcher.close()
        if self._writes:
            await asyncio.gather(*self._writes, return_exceptions=True)

    def _submit(self, event: tuple[str, str, str]) -> None:
        task = asyncio.ensure_future(self.batcher.submit(event))
        self._writes.add(task)
        task.add_done_callback(self._written)

    def _written(self, task: asyncio.Future) -> None:
        self._writes.discard(task)
        if not task.cancelled() and task.exception() is not None:
            log.error("could not record an unread page: %s", task.exception())
            self.stats.inc_value("tracker/errors/store")

    def _write(self, events: list[tuple[str, str, str]]) -> list[BaseException | None]:
        """In the worker thread: the batch's unread pages recorded, its read ones cleared, in
        the order they came (a page unread, then read, ends cleared)."""
        store, context = self._store()
        now = datetime.now(UTC)
        try:
            for kind, run in groupby(events, key=lambda event: event[0]):
                pages = [(url, reason) for _, url, reason in run]
                if kind == UNREAD:
                    context.call(lambda p=pages: store.record_many(p, now), "unread pages")
                else:
                    urls = [url for url, _ in pages]
                    context.call(lambda u=urls: store.clear(u, now), "unread pages")
        except PyMongoError as exc:
            return [exc] * len(events)
        return [None] * len(events)
