"""``scrapy crawl site -a config=sites/NAME.yaml``: a crawl described by a per-site file.

The file (see ``sites/example.yaml`` and :mod:`spiders.siteconfig`) gives the start URLs,
allowed domains, which links to follow and which pages to store (regular expressions), an
optional CSS/XPath body selector for sites where automatic extraction is wrong, limits, the
robots.txt policy and the schedule. Spider arguments (``-a max_pages=…``) override the file.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from scrapy.http import Response, TextResponse
from scrapy.linkextractors import LinkExtractor

from spiders.base import IGNORED_EXTENSIONS, SKIP_REASON, TrackerSpider
from spiders.novel import is_continuation
from spiders.siteconfig import SiteConfig, load_site_config


class SiteSpider(TrackerSpider):
    name = "site"

    def __init__(self, config: str | None = None, **kwargs: Any) -> None:
        if not config:
            raise ValueError("give a site file: scrapy crawl site -a config=sites/NAME.yaml")
        self.site: SiteConfig = load_site_config(config)
        site = self.site
        defaults = {
            "start_url": ",".join(site.start_urls),
            "allowed_domains": site.allowed_domains,
            "max_pages": site.max_pages,
            "max_depth": site.max_depth,
            "obey_robots": None if site.obey_robots else False,
            "robots_reason": site.robots_reason,
            "render": site.render,
            "user_agent": site.user_agent,
            "impersonate": site.impersonate,
        }
        for key, value in defaults.items():
            if kwargs.get(key) in (None, ""):
                kwargs[key] = value
        super().__init__(**kwargs)
        self.extraction_rules = site.extraction_rules
        self.link_extractor = LinkExtractor(
            allow=site.follow_allow,
            deny=site.follow_deny,
            deny_extensions=IGNORED_EXTENSIONS,
            unique=True,
        )

    def spider_settings(self) -> dict[str, Any]:
        site = self.site
        return {
            **super().spider_settings(),
            "CONCURRENT_REQUESTS_PER_DOMAIN": site.concurrency,
            "DOWNLOAD_DELAY": site.delay,
            "AUTOTHROTTLE_START_DELAY": site.delay,
            "DOWNLOAD_TIMEOUT": site.timeout,
            "TRACKER_MAX_PARTS": site.max_parts,
            "TRACKER_BROWSER_HEADERS": site.headers or None,
        }

    def crawl_id(self) -> str:
        return f"site-{self.site.name}"

    def parse(self, response: Response) -> Iterator[Any]:
        return self.parse_page(response)

    def keeps(self, page: TextResponse) -> bool:
        if self.site.is_page(page.url) and (self.site.pages_allow or not self.is_list_page(page)):
            return True
        self.crawler.stats.inc_value("tracker/skipped/not_a_page")
        page.meta.setdefault(SKIP_REASON, "not_a_page")
        return False

    def follow(self, page: TextResponse) -> Iterator[Any]:
        for link in self.links(page, self.link_extractor):
            priority = 10 if is_continuation(link.url, link.text) else 0
            yield self.request(link.url, self.parse, priority=priority)
