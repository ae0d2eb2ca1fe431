"""A rotating ``User-Agent`` header.

Pirate sites serve different (or no) content to unknown clients; rotating common browser
strings keeps the crawl from being singled out. robots.txt is still read for tracker's own
product token (``ROBOTSTXT_USER_AGENT``), whatever header a request carries.
"""

from __future__ import annotations

import itertools

from scrapy.crawler import Crawler
from scrapy.exceptions import NotConfigured
from scrapy.http import Request


class RotatingUserAgentMiddleware:
    """Gives each request the next user agent of ``TRACKER_USER_AGENTS`` (round robin).

    A request that already has a ``User-Agent`` header keeps it. Disabled (``NotConfigured``)
    when the list is empty, leaving Scrapy's single ``USER_AGENT``.
    """

    def __init__(self, user_agents: list[str]) -> None:
        self.user_agents = user_agents
        self._next = itertools.cycle(user_agents)

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> RotatingUserAgentMiddleware:
        agents = [a.strip() for a in crawler.settings.getlist("TRACKER_USER_AGENTS") if a.strip()]
        if not agents:
            raise NotConfigured("TRACKER_USER_AGENTS is empty")
        return cls(agents)

    def process_request(self, request: Request) -> None:
        if b"User-Agent" not in request.headers:
            request.headers[b"User-Agent"] = next(self._next)
