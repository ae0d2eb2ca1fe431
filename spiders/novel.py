"""``scrapy crawl novel -a start_url=URL``: crawl one novel site from a start page.

Follows every link on the start page's site (catalogues, chapter lists, chapter pages) and
gives continuation links (下一页, ``_2.html``, ``?page=2``) priority, so a split chapter is
fetched together.
Every HTML page becomes a :class:`tracker.items.PageItem`; the pipelines decide which pages carry
text. Optional arguments: ``max_pages``, ``max_depth``, ``obey_robots`` (default true).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any
from urllib.parse import urlsplit

import scrapy
from scrapy.http import Response, TextResponse
from scrapy.linkextractors import LinkExtractor

from tracker.items import PageItem
from tracker.text.encoding import DecodeError, decode_bytes

NEXT_PAGE_TEXT = re.compile(r"下一页|下页|下一章|下一節|下一节|next", re.I)
NEXT_PAGE_URL = re.compile(r"(_\d+\.html?$)|([?&](page|p)=\d+)", re.I)
IGNORED_EXTENSIONS = [
    "zip",
    "rar",
    "7z",
    "exe",
    "apk",
    "jpg",
    "jpeg",
    "png",
    "gif",
    "webp",
    "mp3",
    "mp4",
    "pdf",
    "css",
    "js",
    "ico",
    "svg",
    "woff",
    "woff2",
    "ttf",
]


def _flag(value: Any) -> bool:
    return str(value).lower() not in ("0", "false", "no", "off")


class NovelSpider(scrapy.Spider):
    name = "novel"

    def __init__(
        self,
        start_url: str | None = None,
        max_pages: str | None = None,
        max_depth: str | None = None,
        obey_robots: str | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        if not start_url:
            raise ValueError("give a start page: scrapy crawl novel -a start_url=URL")
        parts = urlsplit(start_url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError(f"start_url must be an http(s) URL, got {start_url!r}")
        self.start_url = start_url
        self.allowed_domains = [parts.hostname]
        self.allowed_port = parts.port
        self.max_pages = int(max_pages) if max_pages else None
        self.max_depth = int(max_depth) if max_depth else None
        self.obey_robots = _flag(obey_robots) if obey_robots is not None else None
        self.links = LinkExtractor(deny_extensions=IGNORED_EXTENSIONS, unique=True)

    @classmethod
    def from_crawler(cls, crawler, *args: Any, **kwargs: Any) -> NovelSpider:
        spider = super().from_crawler(crawler, *args, **kwargs)
        overrides = {
            "CLOSESPIDER_PAGECOUNT": spider.max_pages,
            "DEPTH_LIMIT": spider.max_depth,
            "ROBOTSTXT_OBEY": spider.obey_robots,
        }
        for key, value in overrides.items():
            if value is not None:
                crawler.settings.set(key, value, priority="spider")
        return spider

    async def start(self) -> Any:
        yield scrapy.Request(self.start_url, callback=self.parse)

    def parse(self, response: Response) -> Iterator[Any]:
        stats = self.crawler.stats
        html = self._decode(response)
        if html is None:
            stats.inc_value("tracker/skipped/not_text")
            self.logger.info("skipped non-text page %s", response.url)
            return
        yield PageItem(
            url=response.url,
            html=html,
            status=response.status,
            encoding=getattr(response, "encoding", None),
            depth=response.meta.get("depth", 0),
            referer=(response.request.headers.get("Referer") or b"").decode("latin-1")
            if response.request
            else "",
        )
        if not isinstance(response, TextResponse):
            return
        for link in self.links.extract_links(response):
            if not self.on_site(link.url):
                self.crawler.stats.inc_value("tracker/links_offsite")
                continue
            is_next = bool(NEXT_PAGE_TEXT.search(link.text or "") or NEXT_PAGE_URL.search(link.url))
            yield response.follow(link.url, callback=self.parse, priority=10 if is_next else 0)

    def on_site(self, url: str) -> bool:
        """Same host (or a subdomain of it) and same port as the start page."""
        parts = urlsplit(url)
        host = (parts.hostname or "").lower()
        domain = self.allowed_domains[0]
        return (
            parts.scheme in ("http", "https")
            and parts.port == self.allowed_port
            and (host == domain or host.endswith("." + domain))
        )

    def _decode(self, response: Response) -> str | None:
        """The page's HTML as text; the declared charset when there is one, else detected."""
        if isinstance(response, TextResponse):
            declared = response._declared_encoding()  # header, BOM or <meta>
            if declared:
                return response.text
        try:
            return decode_bytes(response.body)[0]
        except DecodeError:
            return None
