"""Scrapy's downloader, with a site's concurrency limit kept.

Scrapy 2.19 starts each download in a task of its own and counts it as *transferring* only
once that task runs, so one pass of a slot's queue loop hands every queued request to the
network at once: with no download delay, ``CONCURRENT_REQUESTS_PER_DOMAIN`` (a site's
politeness limit, ``concurrency`` in a site's YAML) was not kept (16 requests in flight to
one site set to 2). Here a request counts as transferring from the moment it leaves the
slot's queue. With a delay (AutoThrottle's, ``DOWNLOAD_DELAY``) Scrapy hands out one request
per delay and counts it in time: its own code runs.

A site that asks for time (429 or 503 with ``Retry-After``) gets it: :meth:`PoliteDownloader.pause`
holds that site's slot, and only that site's.
"""

from __future__ import annotations

from time import monotonic

from scrapy.core.downloader import Downloader, Slot
from scrapy.crawler import Crawler
from scrapy.utils.asyncio import call_later
from scrapy.utils.defer import _schedule_coro


class PoliteDownloader(Downloader):
    def __init__(self, crawler: Crawler) -> None:
        super().__init__(crawler)
        self._paused_until: dict[str, float] = {}  # slot key -> end of its pause (monotonic)

    def _process_queue(self, slot: Slot) -> None:
        if slot.latercall or slot.download_delay():
            super()._process_queue(slot)
            return
        while slot.queue and slot.free_transfer_slots() > 0:
            slot.lastseen = monotonic()
            request, queue_dfd = slot.queue.popleft()
            slot.transferring.add(request)  # counted now; _download adds it again (a set)
            _schedule_coro(self._wait_for_download(slot, request, queue_dfd))

    def pause(self, key: str, seconds: float) -> float:
        """Hold the queue of slot ``key`` (a site) for ``seconds``, as a server asked with
        ``Retry-After`` (:mod:`tracker.crawling.middlewares.bans`): downloads in flight finish,
        other sites' slots go on. A longer pause already set is kept. Returns the seconds the
        slot is now held."""
        slot = self.slots.get(key)
        if slot is None or seconds <= 0:
            return 0.0
        now = monotonic()
        until = now + seconds
        if self._paused_until.get(key, 0.0) >= until:
            return self._paused_until[key] - now
        self._paused_until[key] = until
        if slot.latercall:
            slot.latercall.cancel()
        slot.latercall = call_later(seconds, self._latercall, slot)
        return seconds
