"""Stop redirect loops at the first repeated URL.

Scrapy's ``RedirectMiddleware`` gives up after ``REDIRECT_MAX_TIMES`` hops, but a loop back to
an already fetched URL (``a → b → a``) is silently swallowed by the duplicate filter and never
reported. This middleware sits on the downloader side of it and raises :class:`RedirectLoop`
(an ``IgnoreRequest``, so it reaches the request's errback and the crawl stats) as soon as a
``Location`` points back into the chain of the current request.
"""

from __future__ import annotations

from urllib.parse import urljoin

from scrapy.exceptions import IgnoreRequest
from scrapy.http import Request, Response
from w3lib.url import canonicalize_url, safe_url_string

REDIRECT_STATUSES = frozenset((301, 302, 303, 307, 308))


class RedirectLoop(IgnoreRequest):
    """A redirect points back to a URL already visited on the way to this one."""


class RedirectLoopMiddleware:
    def process_response(self, request: Request, response: Response) -> Response:
        if response.status not in REDIRECT_STATUSES or b"Location" not in response.headers:
            return response
        location = response.headers[b"Location"].decode("latin-1")
        target = canonicalize_url(safe_url_string(urljoin(request.url, location)))
        chain = [*request.meta.get("redirect_urls", ()), request.url]
        if target in {canonicalize_url(url) for url in chain}:
            raise RedirectLoop(f"redirect loop: {' -> '.join(chain)} -> {target}")
        return response
