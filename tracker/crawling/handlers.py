"""The crawl's http(s) download handler: one way in for plain, rendered and impersonated
requests.

* a plain request goes through Scrapy's own HTTP/1.1 handler, as before (this class is that
  handler);
* a request with ``meta["playwright"]`` through a headless browser
  (:class:`tracker.crawling.rendering.BrowserRenderer`: scrapy-playwright, started at the first
  such request, so a crawl that renders nothing starts no browser and no Playwright driver);
* a request with ``meta["impersonate"]`` (a site file's ``impersonate: chrome``) through
  curl_cffi, whose TLS and HTTP/2 fingerprints are a real browser's (scrapy-impersonate's
  handler, made at the first such request).

scrapy-playwright and scrapy-impersonate each ship a handler meant to *be* the http(s) handler;
this one dispatches to them, so both tiers can serve one crawl and neither touches plain
requests.
"""

from __future__ import annotations

from typing import Any

from scrapy.core.downloader.handlers.http11 import HTTP11DownloadHandler
from scrapy.crawler import Crawler
from scrapy.http import Request, Response

from tracker.crawling.rendering import BrowserRenderer


class ImpersonationUnavailable(RuntimeError):
    """scrapy-impersonate (curl_cffi) cannot be loaded here."""


class ReaderDownloadHandler(HTTP11DownloadHandler):
    lazy = False

    def __init__(self, crawler: Crawler) -> None:
        super().__init__(crawler)
        self._renderer: BrowserRenderer | None = None
        self._impersonator: Any = None

    async def download_request(self, request: Request) -> Response:
        meta = request.meta
        if meta.get("playwright"):
            if self._renderer is None:
                self._renderer = BrowserRenderer(self._crawler)
            return await self._renderer.download(request)
        if meta.get("impersonate"):
            # Certificates unchecked, as Scrapy's own handler does: pirate sites' are often bad.
            meta.setdefault("impersonate_args", {"verify": False})
            return await self._impersonating().download_request(request)
        return await super().download_request(request)

    def _impersonating(self) -> Any:
        if self._impersonator is None:
            try:
                from scrapy_impersonate.handler import ImpersonateDownloadHandler
            except ImportError as exc:
                raise ImpersonationUnavailable(
                    f"impersonate: needs scrapy-impersonate and curl_cffi ({exc})"
                ) from exc
            self._impersonator = ImpersonateDownloadHandler(self._crawler)
        return self._impersonator

    async def close(self) -> None:
        await super().close()
        if self._renderer is not None:
            await self._renderer.close()
        if self._impersonator is not None:
            await self._impersonator.close()
