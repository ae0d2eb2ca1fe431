"""``scrapy crawl news -a start_url=URL``: news articles from sitemaps, RSS/Atom feeds or a
front page.

The start URL's kind is read from its body: a sitemap (``<urlset>``, or a ``<sitemapindex>``
whose sitemaps are followed), a feed (RSS ``<item><link>``, Atom ``<entry><link>``) or an HTML
front page, whose feed links (``<link rel="alternate">``) and article links are followed.
Article pages are stored and their article links followed in turn; list and tag pages (by URL,
or by being mostly links) are skipped and counted as ``tracker/skipped/list_page``.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import lxml.etree
from scrapy.http import Response, TextResponse
from scrapy.linkextractors import LinkExtractor
from scrapy.utils.sitemap import Sitemap

from spiders.base import IGNORED_EXTENSIONS, TrackerSpider

#: Article URLs: a date in the path, a long numeric id, or an article-like directory.
ARTICLE_URL = re.compile(
    r"/(19|20)\d{2}[-/_]?[01]\d[-/_]?[0-3]\d/"
    r"|/(19|20)\d{2}[-/_][01]?\d/[^/?#]+\.s?html?$"
    r"|/t(19|20)\d{6}_\d+"
    r"|[/_-]\d{4,}\.s?html?$"
    r"|/(article|articles|news|a|p|post|posts|content|detail|story|doc)/[^/?#]+$"
    r"|[?&](id|aid|article_?id|news_?id|docid)=\d+",
    re.I,
)
#: List, tag and index pages.
LIST_URL = re.compile(
    r"/(tag|tags|topic|topics|category|categories|list|lists|column|channel|author|authors"
    r"|search|archive|archives|index|page|special)(/|_|\.|$|-)"
    r"|[?&](page|p|tag|tags|cat|category|q|s|keyword)=",
    re.I,
)


def is_list_url(url: str) -> bool:
    return bool(LIST_URL.search(url))


def is_article_url(url: str) -> bool:
    return bool(ARTICLE_URL.search(url)) and not is_list_url(url)


def document_kind(body: bytes) -> str:
    """``sitemap``, ``feed`` or ``html``, from the first bytes of a body."""
    head = body[:2048].lstrip().lower()
    if b"<urlset" in head or b"<sitemapindex" in head:
        return "sitemap"
    if b"<rss" in head or b"<feed" in head or b"<rdf:rdf" in head:
        return "feed"
    return "html"


class NewsSpider(TrackerSpider):
    name = "news"

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.link_extractor = LinkExtractor(deny_extensions=IGNORED_EXTENSIONS, unique=True)

    def parse_start(self, response: Response) -> Iterator[Any]:
        kind = document_kind(response.body)
        if kind == "sitemap":
            yield from self.parse_sitemap(response)
        elif kind == "feed":
            yield from self.parse_feed(response)
        else:
            yield from self.parse_front(response)

    parse = parse_start

    def parse_sitemap(self, response: Response) -> Iterator[Any]:
        try:
            sitemap = Sitemap(response.body)
        except Exception as exc:  # lxml raises several kinds on broken XML
            self.count_error("bad_sitemap", response.url, repr(exc))
            return
        for entry in sitemap:
            url = response.urljoin(entry.get("loc", "").strip())
            if not self.on_site(url):
                self.crawler.stats.inc_value("tracker/links_offsite")
            elif sitemap.type == "sitemapindex":
                yield self.request(url, self.parse_start, priority=5)
            else:
                yield from self._article_request(url)

    def parse_feed(self, response: Response) -> Iterator[Any]:
        parser = lxml.etree.XMLParser(
            resolve_entities=False, no_network=True, recover=True, huge_tree=False
        )
        root = lxml.etree.fromstring(response.body, parser=parser)
        if root is None:
            self.count_error("bad_feed", response.url)
            return
        links = root.xpath(
            "//*[local-name()='item']/*[local-name()='link']/text()"
            " | //*[local-name()='entry']/*[local-name()='link']"
            "[not(@rel) or @rel='alternate']/@href"
        )
        for link in links:
            url = response.urljoin(str(link).strip())
            if self.on_site(url):
                yield from self._article_request(url, require_article_url=False)
            else:
                self.crawler.stats.inc_value("tracker/links_offsite")

    def parse_front(self, response: Response) -> Iterator[Any]:
        read = self.read_page(response)
        if read is None:
            return
        page, _ = read
        for href in page.xpath(
            "//link[@rel='alternate'][contains(@type, 'rss') or contains(@type, 'atom')]/@href"
        ).getall():
            url = page.urljoin(href.strip())
            if self.on_site(url):
                yield self.request(url, self.parse_start, priority=5)
        yield from self.follow(page)

    def parse_article(self, response: Response) -> Iterator[Any]:
        return self.parse_page(response)

    def follow(self, page: TextResponse) -> Iterator[Any]:
        """Article links (list and tag pages are skipped)."""
        for link in self.links(page, self.link_extractor):
            if is_article_url(link.url):
                yield self.request(link.url, self.parse_article)
            elif is_list_url(link.url):
                self.crawler.stats.inc_value("tracker/links_skipped/list")

    def _article_request(self, url: str, require_article_url: bool = False) -> Iterator[Any]:
        if is_list_url(url) or (require_article_url and not is_article_url(url)):
            self._skip_list_page(url)
            return
        yield self.request(url, self.parse_article)

    def _skip_list_page(self, url: str) -> None:
        self.crawler.stats.inc_value("tracker/skipped/list_page")
        self.logger.debug("list or tag page, not stored: %s", url)
