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
* **What a reader sees** (:mod:`tracker.crawling.rendering`, ``-a render=auto|always|never``):
  a thin page with scripts is fetched again through a headless browser and read from its
  rendered DOM; ``-a user_agent=`` names the site's browser profile
  (:mod:`tracker.crawling.profiles`).
* **Unread pages** (:mod:`tracker.crawling.unread`): a challenge or captcha page, a ban that
  outlasted the retries, a render that failed, a body cut short or a server error is recorded
  as unread with its reason (:func:`unread_reason`) and never stored over a good copy; the
  site's unread pages of earlier crawls are asked for again first.
* **Lists**: only obvious link lists (:meth:`TrackerSpider.is_list_page`) are dropped here,
  before extraction; whether any other page is an article is decided on its extracted main
  text (:attr:`tracker.reading.extract.Extracted.is_list`).
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable, Iterator
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
from tracker.crawling.challenges import challenge_of
from tracker.crawling.items import PageItem
from tracker.crawling.middlewares.redirect import RedirectLoop
from tracker.crawling.middlewares.traps import strip_session_ids
from tracker.crawling.profiles import check_choice, check_impersonate
from tracker.crawling.rendering import MODES, RenderPolicy, RenderUnavailable
from tracker.crawling.unread import UnreadLedger
from tracker.enforcement.capture import exchange_of
from tracker.reading.extract import MAX_LINK_TEXT_SHARE, MIN_PROSE_CHARS
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
    check_choice: "auto, tracker, a browser profile's name or a User-Agent string",
    check_impersonate: "a browser to impersonate: chrome, edge, safari, firefox (chrome131…)",
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


#: Failures that leave a page unread (a 404 or a robots.txt refusal is an answer, not one).
_UNREAD_KINDS = frozenset(("timeout", "connection", "dns", "truncated"))


def unread_reason(failure: Failure) -> str | None:
    """Why a failed request leaves its page unread (see :mod:`tracker.crawling.unread`), or
    None when the failure is an answer (404, 410, robots.txt, a redirect loop, a body too
    large or not text)."""
    exc = failure.value
    request = getattr(failure, "request", None)
    if isinstance(exc, RenderUnavailable):
        return "render_unavailable"
    if isinstance(exc, HttpError):
        response = exc.response
        text = response.text if isinstance(response, TextResponse) else ""
        headers = {"cf-mitigated": response.headers.get(b"cf-mitigated", b"").decode("latin-1")}
        challenge = challenge_of(response.status, headers, text, 0)
        if challenge is not None:
            return challenge
        if response.status in (429, 503):
            return "banned"
        if response.status == 403:
            return "forbidden"
        return f"http_{response.status}" if response.status >= 500 else None
    if request is not None and request.meta.get("playwright"):
        return "render_failed"
    kind = error_kind(failure)
    return kind if kind in _UNREAD_KINDS else None


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
        render: str | None = None,
        user_agent: str | None = None,
        impersonate: str | None = None,
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
        if render and render not in MODES:
            raise ValueError(f"-a render={render!r}: expected one of {', '.join(MODES)}")
        self.render = render or None
        self.user_agent = argument("user_agent", user_agent, check_choice)
        self.impersonate = argument("impersonate", impersonate, check_impersonate)
        self._counted: tuple[TextResponse, tuple[int, int]] | None = None
        self._candidate: TextResponse | None = None  # the page being parsed, when a candidate
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
            "TRACKER_RENDER": self.render,
            "TRACKER_BROWSER_PROFILE": self.user_agent,
        }

    def apply_settings(self, crawler: Crawler) -> None:
        for key, value in self.spider_settings().items():
            if value is not None:
                crawler.settings.set(key, value, priority="spider")
        if self.obey_robots is False:
            self.logger.warning(
                "robots.txt is NOT obeyed on %s: %s",
                ", ".join(self.allowed_domains),
                self.robots_reason,
            )
        self.rendering = RenderPolicy(
            crawler.settings.get("TRACKER_RENDER") or "auto",
            learn_days=crawler.settings.getfloat("TRACKER_RENDER_LEARN_DAYS", 30),
        )
        self.unread = UnreadLedger(crawler)

    async def closed(self, reason: str) -> None:
        """Finish recording the unread pages and the sites learned to need rendering."""
        await self.unread.close()
        await self.rendering.save(self.crawler)

    def crawl_id(self) -> str:
        """Processes crawling the same start URLs with the same spider join one crawl."""
        digest = hashlib.sha1(" ".join(sorted(self.start_urls)).encode()).hexdigest()[:12]
        return f"{self.name}-{digest}"

    # -- requests --------------------------------------------------------------------------

    async def start(self) -> Any:
        sites = {urlsplit(url).hostname or "" for url in self.start_urls}
        sites |= set(self.allowed_domains)
        await self.rendering.load(self.crawler, sites)
        unread = await self.unread.load(sites)
        for url in self.start_urls:
            yield self.request(url, self.parse_start)
        for url in unread:  # pages earlier crawls could not read: asked for again
            if self.on_site(url):
                yield self.request(url, self.parse)

    def parse_start(self, response: Response) -> Any:
        return self.parse(response)

    def request(
        self, url: str, callback: Callable[..., Any], priority: int = 0, **kwargs: Any
    ) -> Request:
        if self.rendering.at_once((urlsplit(url).hostname or "").lower()):
            kwargs["meta"] = {**kwargs.get("meta", {}), "playwright": True}
        elif self.impersonate:
            kwargs["meta"] = {"impersonate": self.impersonate, **kwargs.get("meta", {})}
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
        if isinstance(failure.value, RenderUnavailable):
            self.rendering.unavailable = True
        self.count_error(kind, url, str(failure.value)[:200])
        reason = unread_reason(failure)
        if reason is not None:
            self.unread.unread(url, reason, str(failure.value)[:200])
        elif kind in ("http_404", "http_410"):
            self.unread.read(url)  # gone: an answer

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

    def page_item(self, response: TextResponse, truncated: bool = False) -> PageItem:
        referer = response.request.headers.get("Referer") if response.request else None
        return PageItem(
            url=response.url,
            html=response.text,
            status=response.status,
            encoding=response.encoding,
            depth=response.meta.get("depth", 0),
            referer=(referer or b"").decode("latin-1"),
            truncated=truncated,
            rules=self.extraction_rules,
            exchanges=[exchange_of(response)],
        )

    def parse_page(self, response: Response) -> Iterator[Any]:
        """What every spider does with a page: decode it; record it as unread when it is a
        challenge, or flag it for the browser when it looks unrendered
        (:meth:`render_candidate`); follow its canonical URL when it names another page of
        the site, emit it when :meth:`keeps` it, then follow :meth:`follow`."""
        read = self.read_page(response)
        if read is None:
            return
        page, truncated = read
        text, links = self.text_counts(page)
        headers = {"cf-mitigated": page.headers.get(b"cf-mitigated", b"").decode("latin-1")}
        if challenge := challenge_of(page.status, headers, page.text, text - links):
            self.unread.unread(page.url, challenge, f"{challenge} page, status {page.status}")
            return
        candidate = self.render_candidate(page, text, links)
        if truncated and "dataloss" in response.flags:
            self.unread.unread(page.url, "truncated", "body cut short in transfer")
        elif candidate is None:
            self.unread.read(page.url)  # a candidate's read is known once it is extracted
        if canonical := self.canonical_request(page):
            yield canonical
        if self.keeps(page):
            item = self.page_item(page, truncated)
            item["render_reason"] = candidate or page.meta.get("render_reason")
            item["rendered"] = bool(page.meta.get("playwright"))
            yield item
        yield from self.follow(page)

    def text_counts(self, page: TextResponse) -> tuple[int, int]:
        """:func:`link_text` of ``page``, counted once however often it is asked for."""
        if self._counted is None or self._counted[0] is not page:
            self._counted = (page, link_text(page))
        return self._counted[1]

    def render_candidate(self, page: TextResponse, text: int, links: int) -> str | None:
        """Why ``page``, fetched plainly, may need the browser (it has scripts and looks thin:
        :meth:`tracker.crawling.rendering.RenderPolicy.wants`), or None. A candidate is not
        taken for a list here; the ExtractPipeline reads it and calls :meth:`after_reading`."""
        if page.meta.get("playwright"):
            return None
        reason = self.rendering.wants(page.body, text - links, links)
        self._candidate = page if reason else None
        return reason

    def after_reading(self, item: PageItem, read: bool) -> bool:
        """What the ExtractPipeline found in a render candidate or in its rendered page
        (``read``: a body was extracted); True when the page goes to the browser (the plain
        item is dropped). A rendered page teaches :attr:`rendering` whether its site needs
        rendering; a candidate that was read is read; one that was not is fetched again
        through the browser, or recorded unread when the browser is unavailable."""
        url = item["url"]
        if item.get("rendered"):
            site = (urlsplit(url).hostname or "").lower()
            if self.rendering.rendered(site, read):
                self.crawler.stats.inc_value("tracker/render/learned")
                self.logger.info("%s needs rendering: its next pages go to the browser", site)
            return False
        if read:
            self.unread.read(url)
            return False
        if self.rendering.unavailable:
            self.unread.unread(url, "render_unavailable", "needs rendering")
            return True
        reason = item.get("render_reason") or "empty"
        self.crawler.stats.inc_value(f"tracker/render/requested/{reason}")
        meta = {"playwright": True, "render_reason": reason, "depth": item.get("depth", 0)}
        self.crawler.engine.crawl(self.request(url, self.parse, meta=meta, dont_filter=True))
        return True

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
        if self._candidate is response:
            return False  # read first: the ExtractPipeline decides
        total, links = self.text_counts(response)
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
