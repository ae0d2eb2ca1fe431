"""A browser's User-Agent and headers on every request, one coherent profile per site.

See :mod:`tracker.crawling.profiles` for why and what is sent. The profile is
``TRACKER_BROWSER_PROFILE`` (``auto``: picked per site by its host; a profile's name;
``tracker``: the tracker's own ``USER_AGENT``; or a literal User-Agent string), set per site
by its file (``user_agent:``) or ``-a user_agent=…``; ``TRACKER_BROWSER_HEADERS`` adds or
replaces headers. A header a request sets itself is kept. Runs before Scrapy's
``DefaultHeadersMiddleware``, whose ``Accept``/``Accept-Language`` defaults then stay unused.
"""

from __future__ import annotations

from scrapy.crawler import Crawler
from scrapy.http import Request
from scrapy.utils.httpobj import urlparse_cached

from tracker.crawling.profiles import BrowserProfile, profile_for


class BrowserProfileMiddleware:
    def __init__(self, choice: str, own_user_agent: str, extra: dict[str, str]) -> None:
        self.choice = choice
        self.own_user_agent = own_user_agent
        self.extra = extra
        self._profiles: dict[str, BrowserProfile] = {}

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> BrowserProfileMiddleware:
        settings = crawler.settings
        return cls(
            settings.get("TRACKER_BROWSER_PROFILE") or "auto",
            settings.get("USER_AGENT") or "",
            {str(k): str(v) for k, v in settings.getdict("TRACKER_BROWSER_HEADERS").items()},
        )

    def profile(self, site: str) -> BrowserProfile:
        """The site's profile, the same for every request of the crawl."""
        found = self._profiles.get(site)
        if found is None:
            found = self._profiles[site] = profile_for(site, self.choice, self.own_user_agent)
        return found

    def process_request(self, request: Request) -> None:
        site = urlparse_cached(request).hostname or ""
        referer = request.headers.get(b"Referer")
        headers = self.profile(site).request_headers(
            request.url, referer.decode("latin-1") if referer else None
        )
        chosen = {name.lower(): (name, value) for name, value in headers}
        chosen.update((name.lower(), (name, value)) for name, value in self.extra.items())
        for name, value in chosen.values():
            request.headers.setdefault(name, value)
