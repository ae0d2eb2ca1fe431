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

from tracker.crawling.profiles import BrowserProfile, fetch_site, profile_for


class BrowserProfileMiddleware:
    def __init__(self, choice: str, own_user_agent: str, extra: dict[str, str]) -> None:
        self.choice = choice
        self.own_user_agent = own_user_agent
        self.extra = extra
        self._profiles: dict[str, BrowserProfile] = {}
        self._headers: dict[tuple[str, str], list[tuple[str, str]]] = {}

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
        came_from = referer.decode("latin-1") if referer else None
        profile = self.profile(site)
        # The headers differ between a site's requests only by Sec-Fetch-Site: made once each.
        key = (site, fetch_site(request.url, came_from) if profile.fetch_metadata else "")
        headers = self._headers.get(key)
        if headers is None:
            chosen = {
                name.lower(): (name, value)
                for name, value in profile.request_headers(request.url, came_from)
            }
            chosen.update((name.lower(), (name, value)) for name, value in self.extra.items())
            headers = self._headers[key] = list(chosen.values())
        for name, value in headers:
            request.headers.setdefault(name, value)
