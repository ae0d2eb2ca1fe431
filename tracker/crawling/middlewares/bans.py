"""Rate limits and bans: a site answering 429 or 503 is given the time it asks for.

Pirate sites answer a burst of requests with ``429 Too Many Requests`` or ``503 Service
Unavailable``, usually with ``Retry-After``. Scrapy's ``RetryMiddleware`` re-sends such a
request at once, two times, then drops the page (a burst-limited site gave 1 page of 8). Here,
for 429 and 503 only (``RETRY_HTTP_CODES`` leaves them to this middleware):

* the site's download slot is held (:meth:`tracker.crawling.downloader.PoliteDownloader.pause`)
  for ``Retry-After`` (seconds, or an HTTP date: RFC 9110, section 10.2.3), or without one for
  an exponential back-off (``TRACKER_BAN_BACKOFF_BASE`` · 2^(n-1), equal jitter, at most
  ``TRACKER_BAN_BACKOFF_MAX``), whichever is longer: every request to that site waits, other
  sites keep crawling;
* the request is sent again, up to ``TRACKER_BAN_RETRIES`` times;
* a page still refused after that, or whose ``Retry-After`` is longer than
  ``TRACKER_BAN_MAX_WAIT`` (a ban for the day), goes on as the error response it is: the spider
  records it as *unread* (reason ``banned``), to be asked for again by the next crawl.

A challenge page answered with 503 (:mod:`tracker.crawling.challenges`) is not retried: waiting
does not solve a challenge. Counted as ``tracker/bans/<status>``, ``tracker/bans/retries``,
``tracker/bans/wait_seconds`` and ``tracker/bans/gave_up``.
"""

from __future__ import annotations

import logging
import math
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime

from scrapy.crawler import Crawler
from scrapy.http import Request, Response, TextResponse

from tracker.crawling.challenges import challenge_of
from tracker.crawling.middlewares.retry import backoff_delay

log = logging.getLogger(__name__)

BAN_STATUSES = frozenset((429, 503))
#: ``request.meta`` key: times this request was sent again after a 429 or 503.
META_KEY = "ban_retries"


def retry_after(value: bytes | str | None, now: datetime | None = None) -> float | None:
    """The seconds a ``Retry-After`` header asks to wait (0 for a date already past), or None
    when there is none or it cannot be read."""
    if value is None:
        return None
    text = (value.decode("latin-1") if isinstance(value, bytes) else value).strip()
    if not text:
        return None
    if text.isdigit():
        return float(text)
    try:
        moment = parsedate_to_datetime(text)
    except (TypeError, ValueError, IndexError):
        return None
    if moment is None:
        return None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    seconds = (moment - (now or datetime.now(UTC))).total_seconds()
    return max(0.0, seconds) if math.isfinite(seconds) else None


class BanMiddleware:
    def __init__(
        self,
        crawler: Crawler,
        retries: int = 6,
        base: float = 1.0,
        maximum: float = 60.0,
        longest: float = 600.0,
    ) -> None:
        self.crawler = crawler
        self.stats = crawler.stats
        self.retries = retries
        self.base = base
        self.maximum = maximum
        self.longest = longest

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> BanMiddleware:
        settings = crawler.settings
        return cls(
            crawler,
            retries=settings.getint("TRACKER_BAN_RETRIES", 6),
            base=settings.getfloat("TRACKER_BAN_BACKOFF_BASE", 1.0),
            maximum=settings.getfloat("TRACKER_BAN_BACKOFF_MAX", 60.0),
            longest=settings.getfloat("TRACKER_BAN_MAX_WAIT", 600.0),
        )

    def process_response(self, request: Request, response: Response) -> Request | Response:
        if response.status not in BAN_STATUSES or request.meta.get("dont_retry"):
            return response
        if _is_challenge(response):
            return response
        self.stats.inc_value(f"tracker/bans/{response.status}")
        tries = request.meta.get(META_KEY, 0) + 1
        asked = retry_after(response.headers.get(b"Retry-After"))
        if asked is not None and asked > self.longest:
            return self._give_up(request, response, f"Retry-After {asked:.0f} s")
        if tries > self.retries:
            return self._give_up(request, response, f"{self.retries} retries")
        wait = max(asked or 0.0, backoff_delay(tries, self.base, self.maximum))
        held = self._pause(request, wait)
        self.stats.inc_value("tracker/bans/retries")
        self.stats.inc_value("tracker/bans/wait_seconds", round(held, 3))
        log.debug(
            "%d from %s (retry %d of %d): its site waits %.1f s",
            response.status,
            request.url,
            tries,
            self.retries,
            wait,
        )
        retry = request.replace(dont_filter=True, priority=request.priority + 1)
        retry.meta[META_KEY] = tries
        return retry

    def _pause(self, request: Request, seconds: float) -> float:
        engine = getattr(self.crawler, "engine", None)
        downloader = getattr(engine, "downloader", None)
        pause = getattr(downloader, "pause", None)
        if pause is None:  # Scrapy's own downloader: the retry alone
            return 0.0
        return pause(request.meta.get("download_slot") or downloader.get_slot_key(request), seconds)

    def _give_up(self, request: Request, response: Response, why: str) -> Response:
        self.stats.inc_value("tracker/bans/gave_up")
        log.warning("%d from %s: given up (%s)", response.status, request.url, why)
        return response


def _is_challenge(response: Response) -> bool:
    headers = {"cf-mitigated": response.headers.get(b"cf-mitigated", b"").decode("latin-1")}
    text = response.text if isinstance(response, TextResponse) else ""
    if not text and response.body:
        text = response.body[:65_536].decode("utf-8", "replace")
    return challenge_of(response.status, headers, text, 0) is not None
