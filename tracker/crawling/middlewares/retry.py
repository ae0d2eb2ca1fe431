"""Exponential backoff before each retry.

Scrapy's ``RetryMiddleware`` decides *whether* to retry (``RETRY_TIMES``, ``RETRY_HTTP_CODES``)
and re-schedules at once; this middleware, next to the downloader, makes the retry wait.
The ``n``-th retry waits ``d = min(RETRY_BACKOFF_MAX, RETRY_BACKOFF_BASE · 2^(n-1))`` seconds
with "equal jitter", ``d/2 + U(0, d/2)`` (Brooker, "Exponential Backoff And Jitter", AWS
Architecture Blog, 2015), so that retries of many requests to a failing server spread out.
"""

from __future__ import annotations

import random

from scrapy.crawler import Crawler
from scrapy.http import Request
from scrapy.utils.defer import maybe_deferred_to_future
from twisted.internet import reactor
from twisted.internet.task import deferLater


def backoff_delay(
    retries: int, base: float, maximum: float, rng: random.Random | None = None
) -> float:
    """Seconds to wait before retry number ``retries`` (1 for the first retry)."""
    if retries <= 0 or base <= 0:
        return 0.0
    delay = min(maximum, base * 2 ** (retries - 1))
    return delay / 2 + (rng or random).uniform(0, delay / 2)


class BackoffMiddleware:
    def __init__(self, crawler: Crawler, base: float, maximum: float) -> None:
        self.crawler = crawler
        self.base = base
        self.maximum = maximum

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> BackoffMiddleware:
        settings = crawler.settings
        return cls(
            crawler,
            base=settings.getfloat("RETRY_BACKOFF_BASE", 1.0),
            maximum=settings.getfloat("RETRY_BACKOFF_MAX", 60.0),
        )

    async def process_request(self, request: Request) -> None:
        delay = backoff_delay(request.meta.get("retry_times", 0), self.base, self.maximum)
        if delay > 0:
            self.crawler.stats.inc_value("tracker/retry/backoff_seconds", round(delay, 3))
            await maybe_deferred_to_future(deferLater(reactor, delay, lambda: None))
