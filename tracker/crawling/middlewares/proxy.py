"""Send requests through a list of HTTP proxies, round robin, resting the ones that fail."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from pathlib import Path

from scrapy.crawler import Crawler
from scrapy.exceptions import NotConfigured
from scrapy.http import Request, Response
from scrapy.statscollectors import StatsCollector

from tracker.config import Settings

log = logging.getLogger(__name__)

#: ``request.meta`` key marking a proxy this middleware chose (so a retry may get another).
META_KEY = "tracker_proxy"


def read_proxy_list(text: str) -> list[str]:
    """Proxy URLs, one per line or comma-separated; ``#`` starts a comment."""
    proxies = []
    for line in text.splitlines():
        for part in line.split("#", 1)[0].split(","):
            if part.strip():
                proxies.append(part.strip())
    return proxies


class ProxyListMiddleware:
    """Assigns ``request.meta["proxy"]`` from ``TRACKER_PROXIES`` / ``TRACKER_PROXY_FILE``.

    A proxy with ``TRACKER_PROXY_MAX_FAILURES`` consecutive connection failures rests for
    ``TRACKER_PROXY_BAN_SECONDS``; when every proxy rests, the least recently banned is used
    anyway (a crawl never stalls for want of a proxy). A request that set its own ``proxy``
    keeps it. Runs before Scrapy's ``HttpProxyMiddleware``, which applies the meta key.
    """

    def __init__(
        self,
        proxies: list[str],
        stats: StatsCollector,
        max_failures: int = 3,
        ban_seconds: float = 300.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.proxies = proxies
        self.stats = stats
        self.max_failures = max_failures
        self.ban_seconds = ban_seconds
        self.clock = clock
        self.failures = dict.fromkeys(proxies, 0)
        self.banned_until = dict.fromkeys(proxies, 0.0)
        self._position = 0

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> ProxyListMiddleware:
        settings = crawler.settings
        proxies = [p.strip() for p in settings.getlist("TRACKER_PROXIES") if p.strip()]
        if path := settings.get("TRACKER_PROXY_FILE"):
            proxies += read_proxy_list(Path(path).read_text(encoding="utf-8"))
        if not proxies:
            raise NotConfigured("no proxies configured")
        return cls(
            list(dict.fromkeys(proxies)),
            crawler.stats,
            max_failures=settings.getint("TRACKER_PROXY_MAX_FAILURES", Settings.proxy_max_failures),
            ban_seconds=settings.getfloat("TRACKER_PROXY_BAN_SECONDS", Settings.proxy_ban_seconds),
        )

    def next_proxy(self) -> str:
        now = self.clock()
        for _ in range(len(self.proxies)):
            proxy = self.proxies[self._position % len(self.proxies)]
            self._position += 1
            if self.banned_until[proxy] <= now:
                return proxy
        return min(self.proxies, key=self.banned_until.__getitem__)

    def process_request(self, request: Request) -> None:
        if "proxy" in request.meta and META_KEY not in request.meta:
            return  # chosen by the caller
        proxy = self.next_proxy()
        request.meta["proxy"] = proxy
        request.meta[META_KEY] = proxy
        self.stats.inc_value("tracker/proxy/requests")

    def process_response(self, request: Request, response: Response) -> Response:
        if proxy := request.meta.get(META_KEY):
            self.failures[proxy] = 0
        return response

    def process_exception(self, request: Request, exception: Exception) -> None:
        proxy = request.meta.get(META_KEY)
        if proxy is None or proxy not in self.failures:
            return
        self.stats.inc_value("tracker/proxy/failures")
        self.failures[proxy] += 1
        if self.failures[proxy] >= self.max_failures:
            self.failures[proxy] = 0
            self.banned_until[proxy] = self.clock() + self.ban_seconds
            self.stats.inc_value("tracker/proxy/banned")
            log.warning(
                "proxy %s failed %d times in a row (%s); resting it for %.0f s",
                proxy,
                self.max_failures,
                type(exception).__name__,
                self.ban_seconds,
            )
