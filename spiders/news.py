"""``scrapy crawl news -a start_url=URL``: news articles from sitemaps, RSS/Atom feeds or a
front page.

The start URL's kind is read from its body: a sitemap (``<urlset>``, or a ``<sitemapindex>``
whose sitemaps are followed), a feed (RSS 2.0, RDF or Atom) or an HTML front page, whose feed
links (``<link rel="alternate">``) and article links are followed. Article pages are stored and
their article links followed in turn; list and tag pages (by URL, or by their main text being
mostly links) are skipped and counted as ``tracker/skipped/list_page``.

Feeds are pages too (:mod:`tracker.reading.feeds`): an item with its own text (``content:encoded``,
Atom ``content``, or a ``description`` long enough to be the article) is stored and matched as
a page under its link, or under ``FEED_URL#guid`` when it has none or it leads off the site; an
item that is only a summary has its on-site link fetched instead, so the whole article is
matched (the item itself is not stored: the article holds it).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

from scrapy.http import Response, TextResponse
from scrapy.linkextractors import LinkExtractor
from scrapy.utils.sitemap import Sitemap

from spiders.base import IGNORED_EXTENSIONS, TrackerSpider
from tracker.crawling.items import PageItem
from tracker.crawling.outcomes import SKIPPED
from tracker.enforcement.capture import exchange_of
from tracker.reading.feeds import FeedError, looks_like_feed, parse_feed

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
    if looks_like_feed(head):
        return "feed"
    return "html"


class NewsSpider(TrackerSpider):
    name = "news"

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.link_extractor = LinkExtractor(deny_extensions=IGNORED_EXTENSIONS, unique=True)

    def parse_start(self, response: Response) -> Iterator[Any]:
        kind = document_kind(response.body)
        self.outcomes.fetched(response.meta)  # a list of articles: its entries are the pages
        self.outcomes.end(SKIPPED, "front_page" if kind == "html" else kind)
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
        """Each item with its own text as a page; the on-site links of summaries fetched."""
        content_type = response.headers.get(b"Content-Type", b"").decode("latin-1")
        try:
            items = parse_feed(response.body, response.url, content_type)
        except FeedError as exc:
            self.count_error("bad_feed", response.url, str(exc))
            return
        stats = self.crawler.stats
        feed = exchange_of(response)
        for entry in items:
            on_site = entry.link is not None and self.on_site(entry.link)
            if entry.link and not on_site:
                stats.inc_value("tracker/links_offsite")
            if entry.summary and on_site:
                yield from self._article_request(entry.link, require_article_url=False)
                continue
            if not entry.html:
                continue
            stats.inc_value("tracker/feed_items")
            yield PageItem(
                url=entry.page_url(response.url, self.on_site),
                html=entry.page_html(),
                status=response.status,
                encoding="utf-8",
                depth=response.meta.get("depth", 0) + 1,
                referer=response.url,
                truncated=False,
                rules=self.extraction_rules,
                exchanges=[feed],  # the item's text was served in the feed
                fetched=False,  # an entry of the feed, which was the URL fetched
            )

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
