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
* **Download files** (:mod:`tracker.files`): an answer that is a file (an attachment, an
  archive, a ``.txt`` download; :func:`tracker.files.links.is_file_response`) becomes one
  item with its bytes (``file_body``), read as books by :mod:`pipelines.files`; download links
  (:meth:`TrackerSpider.download_requests`) may fetch up to ``max_download_mb``, and one that
  is larger, or cut short, is recorded unread.
* **Chapters over several pages** (:meth:`TrackerSpider.read_parts`): a kept page that
  continues on a next page of the same chapter or thread (:mod:`tracker.reading.pagination`)
  has its further pages fetched in its own callback and becomes one item, the first URL with
  the others in ``parts`` and every part's HTTP exchange in ``exchanges`` (its evidence); a
  rendered page's parts go through the browser too. See the method for the duplicate filter,
  depth, limits and faults.
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
    DropItem,
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
from tracker.crawling.outcomes import REFETCH, SKIPPED, UNREAD, Ended, HandedOn, UrlLedger
from tracker.crawling.profiles import check_choice, check_impersonate
from tracker.crawling.rendering import MODES, RenderPolicy, RenderUnavailable
from tracker.crawling.resources import linked_resources, merge_resources
from tracker.crawling.unread import UnreadLedger
from tracker.enforcement.capture import exchange_data, exchange_from_data, exchange_of
from tracker.files.links import (
    FILE_SUFFIXES,
    file_name,
    is_file_response,
    mentions_file,
    script_file_urls,
    url_suffix,
)
from tracker.reading.extract import MAX_LINK_TEXT_SHARE, MIN_PROSE_CHARS
from tracker.reading.pagination import (
    CONTINUED_TEXT,
    NextLink,
    first_part_aliases,
    next_part_link,
    part_address,
    part_of,
    same_chapter_title,
)
from tracker.text.encoding import (  # decode_page: re-exported
    DecodeError,
    ascii_is_wide,
    decode_page,
)

#: What a decoded page takes from its response (``Response.attributes``, the encoding aside).
_RESPONSE_ATTRIBUTES = tuple(name for name in HtmlResponse.attributes if name != "encoding")

#: In a response's meta: why the spider did not keep it (a skipped page's reason).
SKIP_REASON = "tracker_skip"

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
    """An HTML document without its closing ``</body>``/``</html>``: cut short somewhere (a
    JSON answer, an app's API read by a book source, is judged by the transfer alone)."""
    text = html.strip()
    if text[:1] in ("{", "[") and text[-1:] in ("}", "]"):
        return False
    return bool(text) and not _END_OF_HTML.search(html[-4096:])


def link_text(response: TextResponse) -> tuple[int, int]:
    """Characters (whitespace aside) of the body's visible text, and of those inside links:
    their ratio is the "link density" of Kohlschütter, Fankhauser and Nejdl, "Boilerplate
    Detection using Shallow Text Features", WSDM 2010."""
    # lxml serialises an element's text in C: 0.67 ms a real portal page, against 2.0 for
    # iterating its text nodes in Python and 9.6 for an XPath test of each node's ancestors
    # (the same counts on the 73 saved pages of tests/fixtures/pages).
    # The links' text nodes in one XPath call, and the body found by lxml's own iteration
    # rather than a parsel XPath: 64 µs a bench chapter page against 89.
    text = links = 0
    for root in response.selector.root.iter("body"):
        text += _visible_chars(_text_of(root)) - _visible_chars(
            "".join(element.text or "" for element in root.iter("script", "style"))
        )
        links += _visible_chars("".join(_LINK_TEXT(root)))
    return text, links


#: Every text node inside a link (a text node is met once, however deep its link nests).
_LINK_TEXT = lxml.etree.XPath(".//a//text()", smart_strings=False)


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
        return answer_unread_reason(exc.response)
    if request is not None and request.meta.get("playwright"):
        return "render_failed"
    kind = error_kind(failure)
    if kind == "too_large" and request is not None and request.meta.get("tracker_download"):
        return "too_large"  # a download over max_download_mb: a file not read
    return kind if kind in _UNREAD_KINDS else None


def answer_unread_reason(response: Response) -> str | None:
    """Why an HTTP error answer leaves its page unread (a challenge, a ban, 403 or a server
    error), or None when the answer says the page is not there (404, 410…)."""
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
        self.max_parts = 50  # pages of one chapter (TRACKER_MAX_PARTS, set from the crawler)
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
        self.max_parts = crawler.settings.getint("TRACKER_MAX_PARTS", 50)
        self.max_download_bytes = crawler.settings.getint("TRACKER_MAX_DOWNLOAD_MB", 100) << 20
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
        self.outcomes = UrlLedger(crawler)

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
                meta = self.download_meta() if url_suffix(url) in FILE_SUFFIXES else {}
                yield self.request(url, self.parse, meta=meta)

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

    def on_error(self, failure: Failure) -> list[PageItem] | None:
        kind = error_kind(failure)
        request = getattr(failure, "request", None)
        url = request.url if request is not None else "?"
        if kind == "robots":  # not fetched
            self.crawler.stats.inc_value("tracker/skipped/robots")
            self.logger.info("forbidden by robots.txt: %s", url)
            return
        self.outcomes.fetched(request.meta if request is not None else {})
        if isinstance(failure.value, RenderUnavailable):
            self.rendering.unavailable = True
        self.count_error(kind, url, str(failure.value)[:200])
        reason = unread_reason(failure)
        plain = request.meta.get("plain_html") if request is not None else None
        if reason in ("render_failed", "render_unavailable") and plain:
            # the browser failed on a page that had text without it: that text is read (and
            # the page asked for again next crawl)
            self.unread.unread(url, reason, str(failure.value)[:200])
            self.crawler.stats.inc_value("tracker/render/plain_read")
            return [self._plain_item(request, plain)]
        if reason is not None:
            self.unread.unread(url, reason, str(failure.value)[:200])
            self.outcomes.end(UNREAD, reason)
        else:
            if kind in ("http_404", "http_410"):
                self.unread.read(url)  # gone: an answer
            self.outcomes.end(SKIPPED, kind)
        return None

    def _plain_item(self, request: Request, html: str) -> PageItem:
        """The item of a page as it was fetched plainly, from a browser request's meta."""
        return PageItem(
            url=request.url,
            html=html,
            status=200,
            encoding="utf-8",
            depth=request.meta.get("depth", 0),
            referer="",
            truncated=False,
            rules=self.extraction_rules,
            exchanges=[exchange_from_data(e) for e in request.meta.get("plain_exchanges") or ()],
        )

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
        # Made from the response's attributes rather than with replace(), which would first
        # read the encoding the HTML declares, only for it to be overruled here.
        attributes = {name: getattr(response, name) for name in _RESPONSE_ATTRIBUTES}
        return HtmlResponse(**attributes, encoding=page.encoding), truncated

    def canonical_request(self, response: TextResponse) -> Request | None:
        """A request for the page's canonical URL when it names another fetchable page of
        this site (:func:`canonical_of`, within the crawl's scope)."""
        if b"canonical" not in response.body and not ascii_is_wide(response.encoding):
            return None  # the word the XPath asks for is not in the page (most pages)
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
        item["exchanges"] = [exchange_of(page) for page in pages]  # the evidence: every part
        resources = merge_resources([linked_resources(page, self.on_site) for page in pages])
        if resources:
            item["resources"] = resources
        if parts and (parts.pages or parts.unread):
            item["parts"] = [page.url for page in parts.pages]
            item["parts_html"] = [page.text for page in parts.pages]
            item["parts_unread"] = parts.unread
        return item

    def parse_page(self, response: Response) -> Iterable[Any] | AsyncIterator[Any]:
        """What every spider does with a page: decode it; record it as unread when it is a
        challenge, or flag it for the browser when it looks unrendered
        (:meth:`render_candidate`); follow its canonical URL when it names another page of
        the site, emit it when :meth:`keeps` it, with its further pages when it continues on
        others (:meth:`read_parts`), then follow :meth:`follow` (the links of every part). A
        later part reached by a link of its own is left to its first part
        (``tracker/parts/via_first``). A rendered page is read the same way: its parts are
        fetched through the browser too. A file (an attachment, an archive, a TXT download)
        is one item of its own (:meth:`file_item`). Every page ends counted
        (:mod:`tracker.crawling.outcomes`): here when it gives no item, else by the pipelines."""
        self.outcomes.fetched(response.meta)
        if self.is_file(response):
            return self.file_item(response)
        read = self.read_page(response)
        if read is None:
            self.outcomes.end(SKIPPED, "not_text")
            return ()
        page, truncated = read
        if challenge := self.challenge(page):
            self.unread.unread(page.url, challenge, f"{challenge} page, status {page.status}")
            self.outcomes.end(UNREAD, challenge)
            return ()
        text, links = self.text_counts(page)
        candidate = self.render_candidate(page, text, links)
        if truncated and "dataloss" in response.flags:
            self.unread.unread(page.url, "truncated", "body cut short in transfer")
        elif candidate is None:
            self.unread.read(page.url)  # a candidate's read is known once it is extracted
        if (first := self.first_part(page)) is not None:
            return self._via_first_part(page, first)
        kept = self.keeps(page)
        onward = self.next_part(page) if kept else None
        if onward is None:
            return self._page_output(page, truncated, kept, candidate)
        return self._chapter_output(page, truncated, onward, candidate)

    def _page_output(
        self, page: TextResponse, truncated: bool, kept: bool, candidate: str | None
    ) -> Iterator[Any]:
        if canonical := self.canonical_request(page):
            yield canonical
        if kept:
            yield self._rendering_marks(self.page_item(page, truncated), page, candidate)
        else:
            self.outcomes.end(SKIPPED, page.meta.pop(SKIP_REASON, "not_kept"))
        yield from self.follow(page)

    # -- download files ------------------------------------------------------------------

    def download_meta(self) -> dict[str, Any]:
        """The meta of a request that may fetch a file: up to ``max_download_mb``."""
        return {"download_maxsize": self.max_download_bytes, "tracker_download": True}

    def download_requests(self, page: TextResponse, downloads: Iterable[Any]) -> Iterator[Request]:
        """Requests for ``page``'s download links ``downloads`` (chosen by text or extension,
        :func:`tracker.files.links.is_download_link`) and the file URLs its scripts name (a
        countdown's target), on site; each link is marked given, so the page's other links
        do not fetch it again without the download size limit."""
        depth = page.meta.get("depth", 0) + 1
        urls = [link.url for link in downloads]
        if mentions_file(page.text):  # the scripts' text looked at only then
            scripts = page.xpath("//script/text()").getall()
            urls += [page.urljoin(url) for url in script_file_urls(scripts)]
        for url in dict.fromkeys(urls):
            given = self.followed.get(url)
            if (given is not None and given <= depth) or not self.on_site(url):
                continue
            if given is not None or len(self.followed) < FOLLOWED_LINKS_MAX:
                self.followed[url] = depth
            self.crawler.stats.inc_value("tracker/files/links")
            request = self.request(url, self.parse, priority=5, meta=self.download_meta())
            request.meta.pop("playwright", None)  # a file is fetched, never rendered
            yield request

    def is_file(self, response: Response) -> bool:
        return is_file_response(
            response.url,
            response.headers.get(b"Content-Type", b"").decode("latin-1"),
            response.headers.get(b"Content-Disposition"),
            response.body[:64],
            bool(response.meta.get("tracker_download")),
        )

    def file_item(self, response: Response) -> Iterator[PageItem]:
        """A file as one item, its bytes in ``file_body`` (read by :mod:`pipelines.files`);
        a file cut short in transfer is recorded unread (no partial book is read as clean)."""
        self.crawler.stats.inc_value("tracker/files/fetched")
        if "dataloss" in response.flags:
            self.count_error("truncated", response.url, "a download cut short")
            self.unread.unread(response.url, "truncated", "a download cut short in transfer")
            self.outcomes.end(UNREAD, "truncated")
            return
        referer = response.request.headers.get("Referer") if response.request else None
        yield PageItem(
            url=response.url,
            html="",
            status=response.status,
            depth=response.meta.get("depth", 0),
            referer=(referer or b"").decode("latin-1"),
            truncated=False,
            file={"name": file_name(response.url, response.headers.get(b"Content-Disposition"))},
            file_body=response.body,
            exchanges=[exchange_of(response)],
        )

    def _rendering_marks(
        self, item: PageItem, page: TextResponse, candidate: str | None
    ) -> PageItem:
        """Whether the page may need the browser (the ExtractPipeline asks
        :meth:`after_reading`), and whether it was read through it."""
        item["render_reason"] = candidate or page.meta.get("render_reason")
        item["rendered"] = bool(page.meta.get("playwright"))
        for key in ("plain_chars", "plain_html", "plain_exchanges"):
            if page.meta.get(key) is not None:
                item[key] = page.meta[key]
        return item

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
        self.outcomes.end(SKIPPED, "later_part")
        yield self.request(first, page.request.callback if page.request else self.parse)
        yield from self.follow(page)

    async def _chapter_output(
        self, page: TextResponse, truncated: bool, onward: NextLink, candidate: str | None
    ) -> AsyncIterator[Any]:
        if canonical := self.canonical_request(page):
            yield canonical
        parts = await self.read_parts(page, onward)
        item = self.page_item(page, truncated or parts.truncated, parts)
        yield self._rendering_marks(item, page, candidate)
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
        * A part that fails (an HTTP error, a timeout after the retries, not HTML, a
          challenge) ends the chain: the chapter is kept with what was read, the part's URL in
          ``parts_unread`` (``tracker/parts/unread``, and the error counted as any page's);
          a ban, a challenge or a server error also records the part *unread*, so the next
          crawl asks for it again (and, through its link to the first page, for the chapter).
        * A part is fetched as the first page was: through the browser when that was rendered
          (:mod:`tracker.crawling.rendering`), so a script-loaded chapter is read whole.
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
            response = await self._fetch_part(url, first, page.url, depth, parts)
            if response is None:
                break
            read = self.read_page(response)
            if read is None:
                parts.unread.append(url)
                stats.inc_value("tracker/parts/unread")
                self.outcomes.end(SKIPPED, "not_text")
                break
            part, truncated = read
            if challenge := self.challenge(part):
                self.unread.unread(url, challenge, f"{challenge} page, a part of {first.url}")
                parts.unread.append(url)
                stats.inc_value("tracker/parts/unread")
                self.outcomes.end(UNREAD, challenge)
                break
            if canonicalize_url(part.url) in seen - {canonicalize_url(url)}:
                stats.inc_value("tracker/parts/loop")  # redirected back into the chapter
                self.outcomes.end(SKIPPED, "part_loop")
                break
            if verdict != "yes" and not same_chapter_title(first, part):
                stats.inc_value("tracker/parts/not_a_part")
                self.outcomes.end(SKIPPED, "not_a_part")  # fetched again as a page
                parts.stray = url
                break
            parts.pages.append(part)
            parts.truncated = parts.truncated or truncated
            self.unread.read(url)
            self._claim(part.url, depth)
            page = part
            link = self.next_part(part, first)
        for url in parts.unread:  # recorded (when unread) here: not fetched again as a page
            self.followed[url] = 0
        if parts.pages:
            # the pager of the parts links the first page by its part-1 URL (?pn=1): the same
            # page under another name, never to read as a page of its own
            for alias in first_part_aliases(parts.pages[0].url):
                if canonicalize_url(alias) not in seen:
                    self._claim(alias, depth)
            stats.inc_value("tracker/parts/chapters")
            stats.inc_value("tracker/parts/pages", len(parts.pages))
        return parts

    async def _fetch_part(
        self, url: str, first: TextResponse, referer: str, depth: int, parts: Parts
    ) -> Response | None:
        """A further page of ``first``'s chapter, fetched as ``first`` was (through the
        browser when it was rendered, impersonating when the site is), or None (counted, and
        recorded unread when the answer says so: a ban, a challenge, a server error)."""
        meta: dict[str, Any] = {"depth": depth}
        for key in ("playwright", REFETCH):  # through the browser; fetched before, plainly
            if first.meta.get(key):
                meta[key] = True
        request = self.request(
            url, self.parse, headers={"Referer": referer}, meta=meta, dont_filter=True
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
        self.outcomes.fetched(meta)
        if response.status >= 400:
            self.count_error(f"http_{response.status}", url, "a part of a chapter")
            if reason := answer_unread_reason(response):
                self.unread.unread(url, reason, f"status {response.status}, a part of a chapter")
                self.outcomes.end(UNREAD, reason)
            else:
                self.outcomes.end(SKIPPED, f"http_{response.status}")
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

    def challenge(self, page: TextResponse) -> str | None:
        """The kind of challenge or captcha page ``page`` is (:func:`challenge_of`: its
        status, ``cf-mitigated`` header, markup and own text), or None."""
        text, links = self.text_counts(page)
        headers = {"cf-mitigated": page.headers.get(b"cf-mitigated", b"").decode("latin-1")}
        return challenge_of(page.status, headers, page.text, text - links)

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

    def after_reading(self, item: PageItem, read: bool) -> DropItem | None:
        """What the ExtractPipeline found in a render candidate or in its rendered page
        (``read``: a body was extracted); the drop to raise when the plain item goes no
        further (:class:`HandedOn` to the browser, or :class:`Ended` unread). A rendered page
        teaches :attr:`rendering` whether its site needs rendering; a candidate that was read
        is read; one that was not is fetched again through the browser (its plain HTML, text
        length and exchanges carried along: the rendered page is checked against them), or
        recorded unread when the browser is unavailable."""
        url = item["url"]
        if item.get("rendered"):
            site = (urlsplit(url).hostname or "").lower()
            if self.rendering.rendered(site, read):
                self.crawler.stats.inc_value("tracker/render/learned")
                self.logger.info("%s needs rendering: its next pages go to the browser", site)
            return None
        if read:
            self.unread.read(url)
            return None
        min_chars = self.crawler.settings.getint("TRACKER_MIN_TEXT_CHARS", 80)
        has_body = (item.get("plain_chars") or 0) >= min_chars
        if self.rendering.unavailable:
            self.unread.unread(url, "render_unavailable", "needs rendering")
            if has_body:  # its text without the browser is read meanwhile
                self.crawler.stats.inc_value("tracker/render/plain_read")
                return None
            return Ended(f"needs rendering, no browser: {url}", UNREAD, "render_unavailable")
        reason = item.get("render_reason") or "empty"
        self.crawler.stats.inc_value(f"tracker/render/requested/{reason}")
        meta = {
            "playwright": True,
            "render_reason": reason,
            "depth": item.get("depth", 0),
            REFETCH: True,
        }
        if item.get("plain_chars") is not None:
            meta["plain_chars"] = item["plain_chars"]
        if has_body and not item.get("parts"):
            # its static text, a body: read instead when the rendered page carries less, or
            # when the browser fails on it
            meta["plain_html"] = item["html"]
            meta["plain_exchanges"] = [exchange_data(e) for e in item.get("exchanges") or ()]
        self.crawler.engine.crawl(self.request(url, self.parse, meta=meta, dont_filter=True))
        return HandedOn(f"no body without its scripts, rendering: {url}")

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
        response.meta.setdefault(SKIP_REASON, "list_page")
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
        return self.new_links(response, extractor.extract_links(response))

    def new_links(self, response: TextResponse, found: Iterable[Any]) -> Iterator[Any]:
        """:meth:`links` of the links ``found`` on ``response`` (extracted already)."""
        depth = response.meta.get("depth", 0) + 1
        for link in found:
            given = self.followed.get(link.url)
            if given is not None and given <= depth:
                continue
            if self.on_site(link.url):
                if given is not None or len(self.followed) < FOLLOWED_LINKS_MAX:
                    self.followed[link.url] = depth
                yield link
            else:
                self.crawler.stats.inc_value("tracker/links_offsite")
