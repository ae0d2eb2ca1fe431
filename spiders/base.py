"""What every tracker spider shares.

* **Scope**: ``allowed_domains`` (the start URLs' hosts unless given) and, when a start URL
  names a port, that port; links elsewhere are not followed.
* **Limits and politeness** from spider arguments: ``max_pages``, ``max_depth``,
  ``obey_robots`` (with a ``robots_reason`` that is logged and stored with the run).
* **Decoding** (:func:`decode_page`): the charset of the HTTP header, of ``<meta>``, or
  detected; a declaration that does not fit the bytes is overruled and counted.
* **Faults**: every failed request ends in :meth:`TrackerSpider.on_error`, which logs it and
  counts it as ``tracker/errors/<kind>`` (:func:`error_kind`); bad bodies (binary, undecodable,
  truncated) are counted the same way, and the crawl goes on.
* **Canonical URLs**: a ``<link rel="canonical">`` naming another page of the site (not its
  home page) is followed like a link, and the page itself is still stored, matched and
  followed: one line of markup must not hide a page. When its text turns out to be its
  canonical's, the ExtractPipeline keeps one copy (:mod:`pipelines.extract`).
* **Lists**: only obvious link lists (:meth:`TrackerSpider.is_list_page`) are dropped here,
  before extraction; whether any other page is an article is decided on its extracted main
  text (:attr:`tracker.reading.extract.Extracted.is_list`).
* **Chapters over several pages** (:meth:`TrackerSpider.read_parts`): a kept page that
  continues on a next page of the same chapter or thread (:mod:`tracker.reading.pagination`)
  has its further pages fetched in its own callback and becomes one item, the first URL with
  the others in ``parts``; see the method for the duplicate filter, depth, limits and faults.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import AsyncIterator, Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urljoin, urlsplit

import lxml.etree
import scrapy
from scrapy.crawler import Crawler
from scrapy.exceptions import (
    CannotResolveHostError,
    DownloadCancelledError,
    DownloadConnectionRefusedError,
    DownloadFailedError,
    DownloadTimeoutError,
    IgnoreRequest,
    ResponseDataLossError,
)
from scrapy.http import HtmlResponse, Request, Response, TextResponse
from scrapy.spidermiddlewares.httperror import HttpError
from twisted.internet import error as net_error
from twisted.internet.defer import CancelledError
from twisted.python.failure import Failure
from twisted.web._newclient import ResponseFailed, ResponseNeverReceived
from w3lib.url import canonicalize_url

from tracker.config import parse_bool
from tracker.crawling.items import PageItem
from tracker.crawling.middlewares.redirect import RedirectLoop
from tracker.crawling.middlewares.traps import strip_session_ids
from tracker.crawling.resources import linked_resources, merge_resources
from tracker.reading.extract import MAX_LINK_TEXT_SHARE, MIN_PROSE_CHARS
from tracker.reading.pagination import (
    CONTINUED_TEXT,
    NextLink,
    next_part_link,
    part_address,
    part_of,
    same_chapter_title,
)
from tracker.text.encoding import DecodeError, decode_page  # decode_page: re-exported

#: Links a spider remembers having given (:meth:`TrackerSpider.links`): ~150 bytes each.
FOLLOWED_LINKS_MAX = 500_000

IGNORED_EXTENSIONS = [
    *("zip", "rar", "7z", "gz", "exe", "apk", "dmg", "iso", "torrent"),
    *("jpg", "jpeg", "png", "gif", "webp", "bmp", "mp3", "mp4", "avi", "flv", "pdf", "epub"),
    *("css", "js", "ico", "svg", "woff", "woff2", "ttf", "xml", "json"),
]


def argument(name: str, value: Any, parse: Callable[[Any], Any]) -> Any:
    """A spider argument ``-a name=value`` read with ``parse`` (None when not given); a bad
    value raises ValueError naming the argument."""
    if value in (None, ""):
        return None
    try:
        return parse(value)
    except ValueError:
        raise ValueError(f"-a {name}={value!r}: expected {_EXPECTED[parse]}") from None


_EXPECTED: dict[Callable[[Any], Any], str] = {
    int: "a whole number",
    parse_bool: "true or false",
}


def split_list(value: str | list[str] | None) -> list[str]:
    if not value:
        return []
    if isinstance(value, str):
        value = value.split(",")
    return [v.strip() for v in value if v and v.strip()]


# ------------------------------------------------------------------------------- decoding
# decode_page lives with the project's one decoder, tracker.text.encoding.


_END_OF_HTML = re.compile(r"</(html|body)\s*>", re.I)


def looks_truncated(html: str) -> bool:
    """An HTML document without its closing ``</body>``/``</html>``: cut short somewhere."""
    return bool(html.strip()) and not _END_OF_HTML.search(html[-4096:])


def link_text(response: TextResponse) -> tuple[int, int]:
    """Characters (whitespace aside) of the body's visible text, and of those inside links:
    their ratio is the "link density" of Kohlschütter, Fankhauser and Nejdl, "Boilerplate
    Detection using Shallow Text Features", WSDM 2010."""
    # lxml serialises an element's text in C: 0.67 ms a real portal page, against 2.0 for
    # iterating its text nodes in Python and 9.6 for an XPath test of each node's ancestors
    # (the same counts on the 73 saved pages of tests/fixtures/pages).
    text = links = 0
    for body in response.xpath("//body"):
        root = body.root
        text += _visible_chars(_text_of(root)) - _visible_chars(
            "".join(element.text or "" for element in root.iter("script", "style"))
        )
        links += _visible_chars("".join(_text_of(a) for a in root.iter("a")))
    return text, links


def _text_of(element: Any) -> str:
    return lxml.etree.tostring(element, method="text", encoding=str, with_tail=False)


def _visible_chars(text: str) -> int:
    return len("".join(text.split()))


def canonical_of(url: str, href: str | None) -> str | None:
    """The page a ``<link rel="canonical" href>`` on ``url`` names, when it is another http(s)
    page (session ids aside) and not a home page (a site-wide canonical to the home page is a
    misconfiguration); else None. Whether it is on the crawl's site is the spider's call."""
    if not href or not href.strip():
        return None
    canonical = strip_session_ids(urljoin(url, href.strip()))
    parts = urlsplit(canonical)
    if parts.scheme not in ("http", "https") or parts.path in ("", "/"):
        return None
    if canonicalize_url(canonical) == canonicalize_url(strip_session_ids(url)):
        return None
    return canonical


# --------------------------------------------------------------------------------- faults


def error_kind(failure: Failure) -> str:
    """A short name for why a request failed: ``http_404``, ``timeout``, ``redirect_loop``…"""
    exc = failure.value
    if isinstance(exc, HttpError):
        return f"http_{exc.response.status}"
    if isinstance(exc, RedirectLoop):
        return "redirect_loop"
    if isinstance(exc, IgnoreRequest):
        message = str(exc)
        if "redirect" in message:
            return "redirect_loop"  # max redirections reached
        if "robots" in message.lower():
            return "robots"
        return "ignored"
    if isinstance(exc, DownloadTimeoutError | net_error.TimeoutError | net_error.TCPTimedOutError):
        return "timeout"
    if isinstance(exc, DownloadCancelledError | CancelledError):
        return "too_large" if "max size" in str(exc) else "cancelled"
    if isinstance(exc, CannotResolveHostError | net_error.DNSLookupError):
        return "dns"
    if isinstance(exc, ResponseDataLossError):
        return "truncated"
    if isinstance(
        exc,
        DownloadConnectionRefusedError
        | DownloadFailedError
        | ResponseFailed
        | ResponseNeverReceived
        | net_error.ConnectError
        | net_error.ConnectionLost
        | net_error.ConnectionDone,
    ):
        return "connection"
    return re.sub(r"(?<!^)(?=[A-Z])", "_", type(exc).__name__).lower()


# ---------------------------------------------------------------------------------- parts


@dataclass
class Parts:
    """The further pages of a chapter, as :meth:`TrackerSpider.read_parts` read them."""

    pages: list[TextResponse] = field(default_factory=list)
    unread: list[str] = field(default_factory=list)  # a part that could not be read
    stray: str | None = None  # a "next page" that was another chapter: to crawl as such
    truncated: bool = False


# --------------------------------------------------------------------------------- spider


class TrackerSpider(scrapy.Spider):
    """Base of the tracker spiders (see the module doc). Subclasses implement :meth:`parse`."""

    #: Extraction rules passed to the pipelines with every page (see ``tracker.reading.extract``).
    extraction_rules: dict[str, Any] | None = None

    def __init__(
        self,
        start_url: str | None = None,
        allowed_domains: str | list[str] | None = None,
        max_pages: str | int | None = None,
        max_depth: str | int | None = None,
        obey_robots: str | bool | None = None,
        robots_reason: str | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        if start_url:
            self.start_urls = split_list(start_url)
        if not getattr(self, "start_urls", None):
            raise ValueError(f"give a start page: scrapy crawl {self.name} -a start_url=URL")
        hosts, ports = [], set()
        for url in self.start_urls:
            parts = urlsplit(url)
            if parts.scheme not in ("http", "https") or not parts.hostname:
                raise ValueError(f"start URLs must be http(s) URLs, got {url!r}")
            hosts.append(parts.hostname.lower())
            ports.add(parts.port)
        self.allowed_domains = split_list(allowed_domains) or list(dict.fromkeys(hosts))
        # A start URL with an explicit port confines the crawl to the start URLs' ports.
        self.allowed_ports = ports if ports != {None} else None
        self.max_pages = argument("max_pages", max_pages, int)
        self.max_depth = argument("max_depth", max_depth, int)
        self.obey_robots = argument("obey_robots", obey_robots, parse_bool)
        self.robots_reason = robots_reason or ""
        self.followed: dict[str, int] = {}  # link URL -> the shallowest depth it was given at
        self.max_parts = 50  # pages of one chapter (TRACKER_MAX_PARTS, set from the crawler)
        if self.obey_robots is False and not self.robots_reason.strip():
            raise ValueError(
                "ignoring robots.txt needs a reason on record: "
                "-a obey_robots=false -a robots_reason='written permission from …'"
            )

    @classmethod
    def check_arguments(cls, **arguments: Any) -> None:
        """Raise ValueError, naming the fix, when these spider arguments are wrong (the crawl
        command asks before it starts anything)."""
        cls(**arguments)

    @classmethod
    def from_crawler(cls, crawler: Crawler, *args: Any, **kwargs: Any) -> TrackerSpider:
        spider = super().from_crawler(crawler, *args, **kwargs)
        spider.apply_settings(crawler)
        return spider

    def spider_settings(self) -> dict[str, Any]:
        """Crawl settings this spider's arguments (or site file) override."""
        return {
            "CLOSESPIDER_PAGECOUNT": self.max_pages,
            "DEPTH_LIMIT": self.max_depth,
            "ROBOTSTXT_OBEY": self.obey_robots,
        }

    def apply_settings(self, crawler: Crawler) -> None:
        for key, value in self.spider_settings().items():
            if value is not None:
                crawler.settings.set(key, value, priority="spider")
        self.max_parts = crawler.settings.getint("TRACKER_MAX_PARTS", 50)
        if self.obey_robots is False:
            self.logger.warning(
                "robots.txt is NOT obeyed on %s: %s",
                ", ".join(self.allowed_domains),
                self.robots_reason,
            )

    def crawl_id(self) -> str:
        """Processes crawling the same start URLs with the same spider join one crawl."""
        digest = hashlib.sha1(" ".join(sorted(self.start_urls)).encode()).hexdigest()[:12]
        return f"{self.name}-{digest}"

    # -- requests --------------------------------------------------------------------------

    async def start(self) -> Any:
        for url in self.start_urls:
            yield self.request(url, self.parse_start)

    def parse_start(self, response: Response) -> Any:
        return self.parse(response)

    def request(
        self, url: str, callback: Callable[..., Any], priority: int = 0, **kwargs: Any
    ) -> Request:
        return Request(url, callback=callback, errback=self.on_error, priority=priority, **kwargs)

    def on_site(self, url: str) -> bool:
        """An http(s) URL on an allowed domain (or a subdomain) and, if confined, port."""
        parts = urlsplit(url)
        if parts.scheme not in ("http", "https"):
            return False
        host = (parts.hostname or "").lower()
        if self.allowed_ports is not None and parts.port not in self.allowed_ports:
            return False
        return any(host == d or host.endswith("." + d) for d in self.allowed_domains)

    def on_error(self, failure: Failure) -> None:
        kind = error_kind(failure)
        request = getattr(failure, "request", None)
        url = request.url if request is not None else "?"
        if kind == "robots":
            self.crawler.stats.inc_value("tracker/skipped/robots")
            self.logger.info("forbidden by robots.txt: %s", url)
            return
        self.count_error(kind, url, str(failure.value)[:200])

    def count_error(self, kind: str, url: str, detail: str = "") -> None:
        self.crawler.stats.inc_value("tracker/errors")
        self.crawler.stats.inc_value(f"tracker/errors/{kind}")
        self.logger.warning("page error (%s) %s %s", kind, url, detail)

    # -- pages -----------------------------------------------------------------------------

    def read_page(self, response: Response) -> tuple[TextResponse, bool] | None:
        """The response as decoded HTML and whether it was cut short, or None (counted) when
        it is not text."""
        content_type = response.headers.get(b"Content-Type", b"").decode("latin-1")
        try:
            page = decode_page(response.body, content_type)
        except DecodeError as exc:
            kind = "binary" if "binary" in str(exc) else "decode"
            self.count_error(kind, response.url, str(exc))
            return None
        if page.wrong_charset:
            self.count_error("wrong_charset", response.url, f"decoded as {page.encoding}")
        truncated = "dataloss" in response.flags or looks_truncated(page.html)
        if truncated:
            self.count_error("truncated", response.url, "body cut short; kept as a partial copy")
        return response.replace(cls=HtmlResponse, encoding=page.encoding), truncated

    def canonical_request(self, response: TextResponse) -> Request | None:
        """A request for the page's canonical URL when it names another fetchable page of
        this site (:func:`canonical_of`, within the crawl's scope)."""
        canonical = canonical_of(
            response.url, response.xpath("//link[@rel='canonical']/@href").get()
        )
        if canonical is None or not self.on_site(canonical):
            return None
        self.crawler.stats.inc_value("tracker/traps/canonical")  # followed, page kept
        return self.request(canonical, response.request.callback if response.request else None)

    def page_item(
        self, response: TextResponse, truncated: bool = False, parts: Parts | None = None
    ) -> PageItem:
        referer = response.request.headers.get("Referer") if response.request else None
        item = PageItem(
            url=response.url,
            html=response.text,
            status=response.status,
            encoding=response.encoding,
            depth=response.meta.get("depth", 0),
            referer=(referer or b"").decode("latin-1"),
            truncated=truncated,
            rules=self.extraction_rules,
        )
        pages = [response, *(parts.pages if parts else ())]
        resources = merge_resources([linked_resources(page, self.on_site) for page in pages])
        if resources:
            item["resources"] = resources
        if parts and (parts.pages or parts.unread):
            item["parts"] = [page.url for page in parts.pages]
            item["parts_html"] = [page.text for page in parts.pages]
            item["parts_unread"] = parts.unread
        return item

    def parse_page(self, response: Response) -> Iterable[Any] | AsyncIterator[Any]:
        """What every spider does with a page: decode it, follow its canonical URL when it
        names another page of the site, emit it when :meth:`keeps` it, with its further
        pages when it continues on others (:meth:`read_parts`), then follow :meth:`follow`
        (the links of every part). A later part reached by a link of its own is left to its
        first part (``tracker/parts/via_first``)."""
        read = self.read_page(response)
        if read is None:
            return ()
        page, truncated = read
        if (first := self.first_part(page)) is not None:
            return self._via_first_part(page, first)
        kept = self.keeps(page)
        onward = self.next_part(page) if kept else None
        if onward is None:
            return self._page_output(page, truncated, kept)
        return self._chapter_output(page, truncated, onward)

    def _page_output(self, page: TextResponse, truncated: bool, kept: bool) -> Iterator[Any]:
        if canonical := self.canonical_request(page):
            yield canonical
        if kept:
            yield self.page_item(page, truncated)
        yield from self.follow(page)

    def first_part(self, page: TextResponse) -> str | None:
        """The first page of the chapter of which ``page`` is a later part, when its URL says
        so (``…_3.html``, ``?page=3``) and the page links to that first page (a chapter named
        ``chapter_12.html`` is no part 12)."""
        address = part_address(page.url)
        if address.evidence != "strong" or address.number <= 1 or not self.on_site(address.chapter):
            return None
        for href in page.xpath("//a/@href").getall():
            if strip_session_ids(page.urljoin(href.strip())) == address.chapter:
                return address.chapter
        return None

    def _via_first_part(self, page: TextResponse, first: str) -> Iterator[Any]:
        self.crawler.stats.inc_value("tracker/parts/via_first")
        yield self.request(first, page.request.callback if page.request else self.parse)
        yield from self.follow(page)

    async def _chapter_output(
        self, page: TextResponse, truncated: bool, onward: NextLink
    ) -> AsyncIterator[Any]:
        if canonical := self.canonical_request(page):
            yield canonical
        parts = await self.read_parts(page, onward)
        yield self.page_item(page, truncated or parts.truncated, parts)
        callback = page.request.callback if page.request else None
        if parts.stray is not None:
            yield self.request(parts.stray, callback or self.parse)
        for part in (page, *parts.pages):
            for request in self.follow(part):
                yield request

    def next_part(self, page: TextResponse, first: TextResponse | None = None) -> NextLink | None:
        """The link to the page after ``page`` of the same chapter, when there may be one:
        a "next page" link whose URL is the next part's (``_2.html``, ``?page=2``…) or may be
        (``4-b.html``, ``?p=2``: then the titles must agree), or any "next page" link of a
        page that says it continues ("本章未完…")."""
        if self.max_parts <= 1:
            return None
        link = next_part_link(page)
        if link is None:
            return None
        url = strip_session_ids(link.url)
        if not self.on_site(url):
            return None
        verdict = part_of(url, page.url, first.url if first is not None else None)
        if verdict == "no" and not (link.how == "text" and CONTINUED_TEXT.search(page.text)):
            return None
        return link._replace(url=url)

    async def read_parts(self, first: TextResponse, onward: NextLink) -> Parts:
        """Fetch the further pages of the chapter that starts on ``first``, one after another,
        in this callback (``engine.download_async``: the downloader's middlewares, politeness
        and retries apply, the scheduler does not, so no request of the chain can be dropped
        by the duplicate filter or left in a shared queue with half a chapter in it).

        * A part whose URL does not say it is one must repeat the chapter's title; a "next
          page" that is another chapter ends the chain and is crawled as a page of its own
          (``tracker/parts/not_a_part``).
        * At most ``TRACKER_MAX_PARTS`` pages a chapter (``tracker/parts/capped``); a next
          page met before ends the chain (``tracker/parts/loop``).
        * A part that fails (an HTTP error, a timeout after the retries, not HTML) ends the
          chain: the chapter is kept with what was read, the part's URL in ``parts_unread``
          (``tracker/parts/unread``, and the error counted as any page's).
        * The parts read count as fetched pages (``max_pages``), take the first page's depth,
          and are marked seen: in the duplicate filter (shared in a distributed crawl) and in
          the links this spider gives, so no later link fetches them as pages of their own.
        """
        parts = Parts()
        stats = self.crawler.stats
        seen = {canonicalize_url(first.url)}
        page, depth = first, first.meta.get("depth", 0)
        link: NextLink | None = onward
        while link is not None:
            url = link.url
            if 1 + len(parts.pages) >= self.max_parts:
                stats.inc_value("tracker/parts/capped")
                self.logger.warning("chapter capped at %d pages: %s", self.max_parts, first.url)
                self.followed[url] = 0  # nor followed as a page: the chain would go on
                break
            if canonicalize_url(url) in seen:
                stats.inc_value("tracker/parts/loop")
                break
            seen.add(canonicalize_url(url))
            verdict = part_of(url, page.url, first.url)
            response = await self._fetch_part(url, page.url, depth, parts)
            if response is None:
                break
            read = self.read_page(response)
            if read is None:
                parts.unread.append(url)
                stats.inc_value("tracker/parts/unread")
                break
            part, truncated = read
            if canonicalize_url(part.url) in seen - {canonicalize_url(url)}:
                stats.inc_value("tracker/parts/loop")  # redirected back into the chapter
                break
            if verdict != "yes" and not same_chapter_title(first, part):
                stats.inc_value("tracker/parts/not_a_part")
                parts.stray = url
                break
            parts.pages.append(part)
            parts.truncated = parts.truncated or truncated
            self._claim(part.url, depth)
            page = part
            link = self.next_part(part, first)
        if parts.pages:
            stats.inc_value("tracker/parts/chapters")
            stats.inc_value("tracker/parts/pages", len(parts.pages))
        return parts

    async def _fetch_part(
        self, url: str, referer: str, depth: int, parts: Parts
    ) -> Response | None:
        request = Request(
            url, headers={"Referer": referer}, meta={"depth": depth}, dont_filter=True
        )
        try:
            response = await self.crawler.engine.download_async(request)
        except Exception as exc:  # after the retries: the chapter keeps what was read
            failure = Failure(exc)
            failure.request = request  # type: ignore[attr-defined]
            self.on_error(failure)
            parts.unread.append(url)
            self.crawler.stats.inc_value("tracker/parts/unread")
            return None
        if response.status >= 400:
            self.count_error(f"http_{response.status}", url, "a part of a chapter")
            parts.unread.append(url)
            self.crawler.stats.inc_value("tracker/parts/unread")
            return None
        return response

    def _claim(self, url: str, depth: int) -> None:
        """Mark a part read: no link of this spider gives it again, and the duplicate filter
        (the crawl's, shared in a distributed crawl) knows it."""
        self.followed[url] = 0
        scheduler = getattr(self.crawler.engine, "scheduler", None)
        dupefilter = getattr(scheduler, "df", None)
        if dupefilter is not None:
            dupefilter.request_seen(Request(url, meta={"depth": depth}))

    def keeps(self, page: TextResponse) -> bool:
        """Whether the page goes on to the pipelines: by default, any page but an obvious list
        of links (the ExtractPipeline decides on the others, see :mod:`pipelines.extract`)."""
        return not self.is_list_page(page)

    def follow(self, page: TextResponse) -> Iterator[Any]:
        """The requests for the links worth following from ``page``."""
        return iter(())

    def is_list_page(self, response: TextResponse) -> bool:
        """An obvious catalogue, chapter list or tag page (counted when true): mostly links,
        and its text outside links too short to hold an article's prose, so extracting it
        would be wasted."""
        total, links = link_text(response)
        if links <= MAX_LINK_TEXT_SHARE * total or total - links >= MIN_PROSE_CHARS:
            return False
        self.crawler.stats.inc_value("tracker/skipped/list_page")
        return True

    def links(self, response: TextResponse, extractor: Any) -> Iterator[Any]:
        """On-site links of ``response`` found by ``extractor`` (off-site ones counted), but
        those this process gave already at the same depth or a shallower one.

        Most links of a site's pages were met before (上一章, 下一章, 目录 and the menus of
        every chapter page: 4 in 5 on the bench's novel site), and each would cost a
        request, the spider middlewares and a fingerprint before Scrapy's duplicate filter
        dropped it. A link met again deeper would be dropped by that filter too (or by the
        depth limit); one met again shallower goes on, as the depth limit may have dropped
        it before. Up to ``FOLLOWED_LINKS_MAX`` links are remembered."""
        depth = response.meta.get("depth", 0) + 1
        for link in extractor.extract_links(response):
            given = self.followed.get(link.url)
            if given is not None and given <= depth:
                continue
            if self.on_site(link.url):
                if given is not None or len(self.followed) < FOLLOWED_LINKS_MAX:
                    self.followed[link.url] = depth
                yield link
            else:
                self.crawler.stats.inc_value("tracker/links_offsite")
