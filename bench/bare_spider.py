"""The baseline of :mod:`bench.crawl_throughput`: a bare Scrapy spider that follows every
on-site link of a site and keeps nothing (Scrapy's own cost: downloads, link extraction,
scheduling, duplicate filter), run with ``scrapy runspider`` outside the tracker project so
none of its settings, middlewares or pipelines apply.

    scrapy runspider bench/bare_spider.py -a start_url=http://127.0.0.1:8000/
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any
from urllib.parse import urlsplit

import scrapy
from scrapy.http import Response, TextResponse
from scrapy.linkextractors import IGNORED_EXTENSIONS, LinkExtractor


class BareSpider(scrapy.Spider):
    name = "bare"

    def __init__(self, start_url: str, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.start_urls = [start_url]
        parts = urlsplit(start_url)
        self.allowed_domains = [parts.hostname or ""]
        self.links = LinkExtractor(deny_extensions=IGNORED_EXTENSIONS, unique=True)

    def parse(self, response: Response) -> Iterator[Any]:
        if not isinstance(response, TextResponse):
            return
        for link in self.links.extract_links(response):
            yield response.follow(link.url, self.parse)
