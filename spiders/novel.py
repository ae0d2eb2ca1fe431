"""``scrapy crawl novel -a start_url=URL``: crawl one novel site from a start page.

Follows every on-site link (book catalogues, chapter lists, chapter pages) and gives
continuation links (下一页, ``_2.html``, ``?page=2``) priority, so a split chapter is fetched
together. Download links (``TXT下载``, ``点击下载``, ``.zip``…) and the files they lead to are
read as books (:mod:`tracker.files`). Every HTML page that is not mostly links (catalogues,
chapter lists) becomes a :class:`tracker.crawling.items.PageItem`; the pipelines decide which
pages carry text. Arguments:
``start_url`` (comma-separated for several), ``allowed_domains``, ``max_pages``, ``max_depth``,
``obey_robots`` + ``robots_reason`` (see :mod:`spiders.base`).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

from scrapy.http import Response, TextResponse
from scrapy.linkextractors import LinkExtractor

from spiders.base import IGNORED_EXTENSIONS, TrackerSpider
from tracker.files.links import is_download_link, url_suffix

DENIED = {f".{extension}" for extension in IGNORED_EXTENSIONS}

NEXT_PAGE_TEXT = re.compile(r"下一页|下页|下一章|下一節|下一节|下一頁|next", re.I)
NEXT_PAGE_URL = re.compile(r"(_\d+\.html?$)|([?&](page|p)=\d+)", re.I)


def is_continuation(url: str, text: str) -> bool:
    return bool(NEXT_PAGE_TEXT.search(text or "") or NEXT_PAGE_URL.search(url))


class NovelSpider(TrackerSpider):
    name = "novel"

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        # One extraction a page (no extension denied): the download links are picked from it,
        # the other links then lose the extensions of IGNORED_EXTENSIONS.
        self.link_extractor = LinkExtractor(deny_extensions=[], unique=True)

    def parse(self, response: Response) -> Iterator[Any]:
        return self.parse_page(response)

    def follow(self, page: TextResponse) -> Iterator[Any]:
        downloads, pages = [], []
        for link in self.link_extractor.extract_links(page):
            suffix = url_suffix(link.url)
            if is_download_link(link.url, link.text, suffix):
                downloads.append(link)
            if suffix not in DENIED:
                pages.append(link)
        yield from self.download_requests(page, downloads)
        for link in self.new_links(page, pages):
            priority = 10 if is_continuation(link.url, link.text) else 0
            yield self.request(link.url, self.parse, priority=priority)
