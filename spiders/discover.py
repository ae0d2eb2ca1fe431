"""``scrapy crawl discover -a results=FILE``: check a search engine's results, and crawl the
sites where they found copies (see :mod:`tracker.discovery`, which writes the file and runs
this crawl).

``results`` names a JSON file, ``[{"url", "query"}, …]``: the result pages to fetch, each
with the query that found it (a result may redirect to another site: an engine's redirect
link); ``-a licensed=SITE,…`` names sites whose pages a redirect may reach but that are never
checked (hosts or ``host:port``). Every page goes through the same download, rendering, ban,
challenge and extraction path and the same pipelines as any crawl (a result page that could
not be read is *unread*, never clean), and each page stored or matched carries ``found_by``,
the query that led to it. Then, per site (its :func:`~tracker.model.site_key`: host and port):

* a result page found to **carry a copy** makes its site *followed*: the links of the site's
  result pages are followed, and from the pages they lead to, like ``scrapy crawl novel``
  (chapter lists, 下一页 first), so the copies the engine did not return are found too, up to
  ``max_site_pages`` requests a site (``-a max_site_pages=N``, default the
  ``discover_max_pages`` setting). Links never leave the site.
* a result page that is a **list** (a book's catalogue: what a title query mostly returns) is
  *probed*: up to :data:`PROBE_LINKS` of its links that look like chapters (第N章, 第N回…) are
  fetched, and a copy among them makes the site followed.
* a site where nothing carries a copy is not crawled further.

Whether a page carries a copy is known once the pipelines have matched it
(:class:`~spiders.copies.WatchesCopies`), so a site's links wait until then. With ``-a
summary=FILE`` the crawl writes what it found: each result's ``outcome`` (``copy``, ``read``,
or ``unread``), and per site the ``query`` that led to it, the page the copy was
``found_at``, the pages ``fetched``, the ``copies`` found and their URLs (``entries``).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from scrapy.crawler import Crawler
from scrapy.http import Request, Response, TextResponse

from spiders.base import argument, split_list
from spiders.copies import WatchesCopies
from spiders.novel import NovelSpider, is_continuation
from tracker.crawling.items import PageItem
from tracker.crawling.outcomes import SKIPPED
from tracker.model import is_licensed, site_key
from tracker.text.chapters import CHAPTER_NUMBER

#: Chapter-like links of a catalogue result fetched to see whether its site carries copies.
PROBE_LINKS = 3
#: Pages with copies a site's summary lists (the start pages of its later crawls).
MAX_ENTRIES = 20

COPY, READ, UNREAD = "copy", "read", "unread"

Link = tuple[str, str, int]  # url, link text, depth


@dataclass
class SiteTally:
    """What the crawl did on one site."""

    query: str = ""
    found_at: str = ""
    fetched: int = 0
    requested: int = 0
    copies: int = 0
    entries: list[str] = field(default_factory=list)
    followed: bool = False


class DiscoverSpider(WatchesCopies, NovelSpider):
    name = "discover"

    def __init__(
        self,
        results: str | None = None,
        summary: str | None = None,
        max_site_pages: str | int | None = None,
        licensed: str | None = None,
        **kwargs: Any,
    ) -> None:
        if not results:
            raise ValueError(
                "give the results to check: scrapy crawl discover -a results=FILE (a JSON list "
                'of {"url", "query"})'
            )
        self.queries = read_results(results)
        self.start_urls = list(self.queries)
        kwargs.pop("start_url", None)  # the results are the start pages
        super().__init__(**kwargs)
        # A result may be the engine's redirect link (Baidu's /link?url=…) to another site:
        # no domain filter, each page's links are kept on its own site (follow, on_site).
        self.allowed_domains, self.allowed_ports = [], None
        self.licensed = split_list(licensed)
        self.summary_path = summary
        self.max_site_pages = argument("max_site_pages", max_site_pages, int)
        self.sites: dict[str, SiteTally] = {}
        self.pending: dict[str, list[tuple[str, list[Link]]]] = {}  # site -> (result, links)
        self.aliases: dict[str, str] = {}  # a result's URL after redirects -> the result
        self.via: dict[str, str] = {}  # a probed page -> the result it was probed from
        self.lists: set[str] = set()  # result pages taken for lists: probed once followed
        self.probed: set[str] = set()
        self.copies: set[str] = set()  # results (and probes' results) found carrying a copy

    @classmethod
    def from_crawler(cls, crawler: Crawler, *args: Any, **kwargs: Any) -> DiscoverSpider:
        spider = super().from_crawler(crawler, *args, **kwargs)
        if spider.max_site_pages is None:
            spider.max_site_pages = crawler.settings.getint("TRACKER_DISCOVER_MAX_PAGES", 500)
        return spider

    def spider_settings(self) -> dict[str, Any]:
        # The sites' budgets bound the crawl; a page count for all of it would cut the last
        # sites short.
        return {**super().spider_settings(), "CLOSESPIDER_PAGECOUNT": self.max_pages or 0}

    # -- requests --------------------------------------------------------------------------

    async def start(self) -> Any:
        """The result pages (not the sites' unread pages, as a crawl of a site would: these
        sites are not crawled unless they carry copies)."""
        sites = {(urlsplit(url).hostname or "").lower() for url in self.start_urls}
        await self.rendering.load(self.crawler, sites)
        for url in self.start_urls:
            self.tally(site_key(url), url).requested += 1
            yield self.request(url, self.parse)

    def tally(self, site: str, url: str) -> SiteTally:
        if site not in self.sites:
            self.sites[site] = SiteTally(query=self.query_of(url))
        return self.sites[site]

    def result_of(self, url: str) -> str | None:
        """The result that ``url`` is, was redirected from, or was probed from."""
        url = self.aliases.get(url, url)
        if url in self.queries:
            return url
        return self.via.get(url)

    def query_of(self, url: str) -> str:
        """The query that led to ``url``: its result's, else its followed site's."""
        result = self.result_of(url)
        if result is not None:
            return self.queries[result]
        found = self.sites.get(site_key(url))
        return found.query if found is not None else ""

    # -- pages -----------------------------------------------------------------------------

    def on_site(self, url: str) -> bool:
        """Any http(s) URL: :meth:`follow` keeps a page's links on its own site."""
        return urlsplit(url).scheme in ("http", "https")

    def canonical_request(self, response: TextResponse) -> Request | None:
        request = super().canonical_request(response)
        if request is not None and site_key(request.url) != site_key(response.url):
            return None  # a canonical page on another site is not this site's
        return request

    def parse(self, response: Response) -> Iterator[Any]:
        redirects = response.meta.get("redirect_urls")
        if redirects and redirects[0] in self.queries:
            self.aliases[response.url] = redirects[0]
        if is_licensed(response.url, self.licensed):
            # A result redirected to a licensed site: its pages are not checked.
            self.crawler.stats.inc_value("tracker/discover/licensed_skipped")
            self.outcomes.fetched(response.meta)
            self.outcomes.end(SKIPPED, "licensed")
            self.logger.info("%s is on a licensed site: not checked", response.url)
            return iter(())
        self.tally(site_key(response.url), response.url).fetched += 1
        return self.parse_page(response)

    def page_item(self, response: TextResponse, truncated: bool = False) -> PageItem:
        item = super().page_item(response, truncated)
        item["found_by"] = self.query_of(response.url)
        return item

    def keeps(self, page: TextResponse) -> bool:
        kept = super().keeps(page)
        if not kept and self.is_result(page.url):
            self.lists.add(self.aliases.get(page.url, page.url))  # a catalogue: probed
        return kept

    def is_result(self, url: str) -> bool:
        """``url`` is a result page (or where one was redirected to), not a page reached
        from one."""
        return self.aliases.get(url, url) in self.queries

    def follow(self, page: TextResponse) -> Iterator[Any]:
        site = site_key(page.url)
        depth = page.meta.get("depth", 0) + 1
        links = [
            (link.url, link.text, depth)
            for link in self.links(page, self.link_extractor)
            if site_key(link.url) == site
        ]
        if self.sites[site].followed:
            yield from self.requests(site, links)
            return
        if not self.is_result(page.url):
            return  # a probed page: the site is followed from its results, if at all
        result = self.aliases.get(page.url, page.url)
        self.pending.setdefault(site, []).append((result, links))
        if result in self.lists:
            yield from self.probe(site, result, links)

    def requests(self, site: str, links: list[Link]) -> Iterator[Request]:
        """Requests for ``links`` of a followed site, within its budget."""
        tally = self.sites[site]
        for url, text, depth in links:
            if tally.requested >= (self.max_site_pages or 0):
                self.crawler.stats.inc_value("tracker/discover/site_budget_reached")
                return
            tally.requested += 1
            priority = 10 if is_continuation(url, text) else 0
            yield self.request(url, self.parse, priority=priority, meta={"depth": depth})

    def probe(self, site: str, result: str, links: list[Link]) -> Iterator[Request]:
        """Up to :data:`PROBE_LINKS` chapter-like links of a catalogue result."""
        if result in self.probed:
            return
        self.probed.add(result)
        chosen = [link for link in links if CHAPTER_NUMBER.search(link[1] or "")][:PROBE_LINKS]
        for request in self.requests(site, chosen):
            self.via[request.url] = result
            self.crawler.stats.inc_value("tracker/discover/probed")
            yield request

    # -- what the pipelines found ----------------------------------------------------------

    def dropped(self, item: PageItem, exception: Exception) -> None:
        reason = str(exception)
        if self.is_result(item["url"]) and reason.startswith(("list page", "no body text")):
            result = self.aliases.get(item["url"], item["url"])
            self.lists.add(result)  # extracted as a list (a catalogue): probe it
            site = site_key(item["url"])
            for waiting, links in self.pending.get(site, ()):
                if waiting == result and not self.sites[site].followed:
                    for request in self.probe(site, result, links):
                        self.crawler.engine.crawl(request)

    def found_copy(self, url: str) -> None:
        """A page of ``url`` carries a copy: its site is followed from its result pages."""
        site = site_key(url)
        tally = self.tally(site, url)
        tally.copies += 1
        if len(tally.entries) < MAX_ENTRIES:
            tally.entries.append(url)
        result = self.result_of(url)
        if result is not None:
            self.copies.add(result)
        if tally.followed:
            return
        tally.followed, tally.found_at = True, url
        tally.query = self.query_of(url) or tally.query
        self.crawler.stats.inc_value("tracker/discover/sites_followed")
        self.logger.info("a copy on %s (%s): crawling the site", site, url)
        for _, links in self.pending.pop(site, ()):
            for request in self.requests(site, links):
                self.crawler.engine.crawl(request)

    async def closed(self, reason: str) -> None:
        await super().closed(reason)
        if not self.summary_path:
            return
        unread = {self.aliases.get(url, url) for url in self.unread.open}
        outcome = {
            url: COPY if url in self.copies else UNREAD if url in unread else READ
            for url in self.queries
        }
        summary = {
            "results": outcome,
            "sites": {site: asdict(tally) for site, tally in self.sites.items()},
        }
        Path(self.summary_path).write_text(json.dumps(summary, ensure_ascii=False), "utf-8")


def read_results(path: str) -> dict[str, str]:
    """``url → query`` of a results file (ValueError naming what is wrong)."""
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except OSError as exc:
        raise ValueError(f"-a results={path}: {exc.strerror or exc}") from None
    except ValueError as exc:
        raise ValueError(f"-a results={path}: not JSON ({exc})") from None
    if not isinstance(data, list) or not all(
        isinstance(entry, dict) and isinstance(entry.get("url"), str) for entry in data
    ):
        raise ValueError(f'-a results={path}: expected a JSON list of {{"url", "query"}}')
    results = {entry["url"]: str(entry.get("query") or "") for entry in data}
    if not results:
        raise ValueError(f"-a results={path}: no result to check")
    return results
