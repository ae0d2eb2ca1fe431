"""Script-rendered pages, read through a real headless browser.

Pirate sites load a chapter by script (an XHR for JSON, ``document.write(atob(…))``, a packed
``eval``): the HTML holds a placeholder ("加载中…", an empty container) and a plain fetch reads
nothing. Such a page is fetched again through Debian's Chromium, driven by Playwright through
scrapy-playwright's download handler, and its text is extracted from the rendered DOM. Page
scripts run only there, in the browser; nothing else evaluates them.

**When** (:class:`RenderPolicy`, ``render: auto|always|never`` per site, ``TRACKER_RENDER``,
``-a render=``): with ``auto`` a page is rendered when its extracted body is missing or a
placeholder and the page has scripts. The spider flags the pages that may be so, cheaply
(:func:`thin_reason`: scripts, and little text outside links with few links, or a placeholder
phrase with less than a chapter's text); the ExtractPipeline extracts them as any page and
sends those whose body did not come out (:func:`placeholder_only`) to the browser. When the
first pages of a site rendered that way had their text only once rendered, the site is
*learned* to need rendering: its next pages go to the browser at once (no plain fetch first),
and the crawl stores that (:class:`tracker.stores.rendering.RenderStore`) for the next crawls
(for ``TRACKER_RENDER_LEARN_DAYS``, then it is learned again). ``always``
renders every page of the site, ``never`` none.

**How** (:class:`BrowserRenderer`, used by :class:`tracker.crawling.handlers.ReaderDownloadHandler`
for a request with ``meta["playwright"]``): the browser, Playwright's driver and the handler are
started at the first page that needs them, so a crawl of plain sites pays nothing. One browser
context per site (its User-Agent that of the site's profile, :mod:`tracker.crawling.profiles`,
``zh-CN``, service workers blocked), replaced every ``TRACKER_RENDER_CONTEXT_PAGES`` pages and
closed once its pages are done, so the browser's memory does not grow with the crawl; at most
``TRACKER_RENDER_PAGES`` pages open at once (2). Images, media, fonts and every request to a host
outside the crawl's allowed domains are blocked. A page is read once the network has been quiet
for ``QUIET_S`` after its DOM is loaded (scripts fetch the text after it), or after
``TRACKER_RENDER_WAIT`` seconds at most.

**The browser** is ``browser_path`` (``TRACKER_BROWSER_PATH``, or ``-s TRACKER_BROWSER_PATH=``),
else the first of ``chromium``, ``chromium-browser``, ``google-chrome`` on the PATH; no browser
is ever downloaded. One that fails to start is reported once, naming the setting, and the crawl
goes on without rendering: the pages that needed it are recorded as unread
(``render_unavailable``).
"""

from __future__ import annotations

import asyncio
import logging
import re
import shutil
import weakref
from collections import Counter
from collections.abc import Iterable
from time import monotonic
from typing import Any

from scrapy.crawler import Crawler
from scrapy.http import Request, Response
from scrapy.utils.httpobj import urlparse_cached

log = logging.getLogger(__name__)

AUTO, ALWAYS, NEVER = "auto", "always", "never"
MODES = (AUTO, ALWAYS, NEVER)

#: Chromium's flags for a sandboxed container run as root: no GPU, no QUIC, nothing fetched in
#: the background (updates, sync, field trials).
LAUNCH_ARGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
)
BROWSER_NAMES = ("chromium", "chromium-browser", "google-chrome")
#: What a text reader does not need.
BLOCKED_RESOURCES = frozenset(
    ("image", "media", "font", "texttrack", "websocket", "eventsource", "manifest")
)
#: Network quiet after the DOM is loaded before it is read (scripts fetch the text then).
QUIET_S = 0.25

#: A page with fewer visible characters outside links than this is thin…
THIN_TEXT_CHARS = 150
#: …unless it has this many characters of link text (a catalogue, a list).
LIST_LINK_CHARS = 400
#: A placeholder phrase makes a page thin when its text is shorter than a chapter.
PLACEHOLDER_TEXT_CHARS = 1000
PLACEHOLDER = re.compile(
    r"加载中|正在加载|载入中|加載中|正在載入|请稍候|請稍候|请稍后|loading\.\.\.|loading…|"
    r"(?:enable|开启|启用|打开|開啟)\s*javascript",
    re.I,
)
_SCRIPT = re.compile(rb"<script", re.I)
#: An empty element with an id (``<div id="content"></div>``)…
_EMPTY_WITH_ID = re.compile(
    rb"<(?:div|article|section|main|td|pre)\b[^>]*?\bid\s*=\s*[\"']?([\w-]{1,60})[\"']?"
    rb"[^>]*>\s*</",
    re.I,
)
#: What writes text into an element.
_WRITES = re.compile(
    rb"\.innerHTML\s*=|\.innerText\s*=|\.textContent\s*=|insertAdjacentHTML|appendChild\(|"
    rb"\.append\(|\.html\(|\.text\(|document\.write",
)
#: …that a script gives its text (a chapter written into it: no "loading" phrase, and the
#: page around it a synopsis, a notice, recommendations: not thin).
SCRIPTED_GAIN_CHARS = THIN_TEXT_CHARS
#: What the renderer puts in a request's meta for scrapy-playwright, taken out after.
_CALLABLES = ("playwright_page_init_callback", "playwright_page_methods")


class RenderUnavailable(RuntimeError):
    """The browser could not be started: no page can be rendered in this crawl."""


def find_browser(configured: str | None) -> str | None:
    """The browser executable: ``configured`` when given (even if missing: the launch then
    says so), else the first of :data:`BROWSER_NAMES` on the PATH."""
    if configured:
        return configured
    return next((found for name in BROWSER_NAMES if (found := shutil.which(name))), None)


def thin_reason(body: bytes, text_chars: int, link_chars: int) -> str | None:
    """Why a page may be unrendered (``"empty"``, ``"placeholder"`` or ``"scripted"``), or
    None: it has scripts, and little text outside links with few links, or a placeholder
    phrase, or an empty element its scripts fill (:func:`filled_by_script`), with less than a
    chapter's text. ``text_chars``: its visible characters outside links. Such a page is a
    *candidate*: it is extracted first, and rendered only when no body comes out
    (:func:`placeholder_only`; a ``scripted`` page always, its plain text being what
    surrounds the empty element)."""
    if text_chars >= PLACEHOLDER_TEXT_CHARS or not _SCRIPT.search(body):
        return None
    if text_chars < THIN_TEXT_CHARS and link_chars < LIST_LINK_CHARS:
        return "empty"
    if PLACEHOLDER.search(body.decode("utf-8", "ignore")):
        return "placeholder"
    if filled_by_script(body):
        return "scripted"
    return None


def filled_by_script(body: bytes) -> bool:
    """Whether the page has an empty block (``div``, ``article``, ``td``…) that one of its
    scripts looks up by id (``getElementById('content')``, ``$('#content')``,
    ``querySelector('#content')``; not to set its style) on a page whose scripts write text
    (``innerHTML =``, ``.html(``, ``document.write``…): a container a script writes into."""
    if not _WRITES.search(body):
        return False
    for found in _EMPTY_WITH_ID.finditer(body):
        name = re.escape(found[1])
        lookup = rb"(?:getElementById\(\s*[\"']|[\"']#)" + name + rb"[\"']\s*\)(?!\s*\.style)"
        if re.search(lookup, body):
            return True
    return False


def placeholder_only(text: str) -> bool:
    """Whether an extracted body is a placeholder ("章节内容加载中…") rather than a text."""
    return len(text) < PLACEHOLDER_TEXT_CHARS and bool(PLACEHOLDER.search(text))


class RenderPolicy:
    """Which pages of a crawl are rendered (see the module doc): the mode, the sites learned
    to need it, and what this crawl's rendered pages showed."""

    def __init__(
        self,
        mode: str = AUTO,
        learn_after: int = 3,
        learn_share: float = 0.8,
        learn_days: float = 30.0,
    ) -> None:
        if mode not in MODES:
            raise ValueError(f"render: expected one of {', '.join(MODES)}, got {mode!r}")
        self.mode = mode
        self.learn_after = learn_after
        self.learn_share = learn_share
        self.learn_days = learn_days
        self.learned: set[str] = set()  # sites whose pages go to the browser at once
        self.newly_learned: dict[str, tuple[int, int]] = {}  # site -> (rendered, helped)
        self._tried: Counter[str] = Counter()  # thin pages rendered, per site
        self._helped: Counter[str] = Counter()  # ... that had their text once rendered
        self.unavailable = False  # the browser did not start

    def at_once(self, site: str) -> bool:
        """Whether pages of ``site`` go to the browser without a plain fetch first."""
        return not self.unavailable and (
            self.mode == ALWAYS or (self.mode == AUTO and site in self.learned)
        )

    def wants(self, body: bytes, text_chars: int, link_chars: int) -> str | None:
        """Why a plainly fetched page should be rendered, or None."""
        if self.mode != AUTO:
            return None
        return thin_reason(body, text_chars, link_chars)

    def rendered(self, site: str, helped: bool) -> bool:
        """A page of ``site`` read nothing plainly and was rendered; ``helped``: the rendered
        page had a body. True when this taught that the site needs rendering."""
        self._tried[site] += 1
        if helped:
            self._helped[site] += 1
        tried, helped = self._tried[site], self._helped[site]
        if site in self.learned or tried < self.learn_after or helped < self.learn_share * tried:
            return False
        self.learned.add(site)
        self.newly_learned[site] = (tried, helped)
        return True

    async def load(self, crawler: Crawler, sites: Iterable[str]) -> None:
        """The sites among ``sites`` learned by earlier crawls (none when the store cannot be
        read: they are learned again)."""
        if self.mode != AUTO:
            return
        from pymongo.errors import PyMongoError

        from tracker.crawling.context import tracker_context
        from tracker.stores.rendering import RenderStore

        sites = sorted(set(sites))

        def read() -> set[str]:
            context = tracker_context(crawler)
            store = RenderStore(context.runtime.db)
            return context.call(lambda: store.learned(sites, self.learn_days), "render sites")

        try:
            self.learned |= await asyncio.get_running_loop().run_in_executor(None, read)
        except PyMongoError as exc:
            log.error("could not read which sites need rendering: %s", exc)

    async def save(self, crawler: Crawler) -> None:
        """Store the sites this crawl learned to need rendering."""
        if not self.newly_learned:
            return
        from pymongo.errors import PyMongoError

        from tracker.crawling.context import tracker_context
        from tracker.stores.rendering import RenderStore

        def write() -> None:
            context = tracker_context(crawler)
            store = RenderStore(context.runtime.db)
            for site, (tried, helped) in self.newly_learned.items():
                context.call(lambda s=site, t=tried, h=helped: store.learn(s, t, h), "render")

        try:
            await asyncio.get_running_loop().run_in_executor(None, write)
        except PyMongoError as exc:
            log.error("could not store which sites need rendering: %s", exc)


class BrowserRenderer:
    """Renders the requests with ``meta["playwright"]`` through scrapy-playwright's handler,
    made and started at the first one (see the module doc)."""

    def __init__(self, crawler: Crawler) -> None:
        settings = crawler.settings
        self.crawler = crawler
        self.stats = crawler.stats
        configured = settings.get("TRACKER_BROWSER_PATH")  # browser_path, or -s for one crawl
        self.executable = find_browser(configured)
        self.setting = (
            f"TRACKER_BROWSER_PATH={configured} (setting browser_path, or -s for one crawl)"
            if configured
            else "browser_path (TRACKER_BROWSER_PATH), unset: no "
            + ", ".join(BROWSER_NAMES)
            + " on the PATH"
        )
        self.pages = max(1, settings.getint("TRACKER_RENDER_PAGES", 2))
        self.context_pages = max(1, settings.getint("TRACKER_RENDER_CONTEXT_PAGES", 100))
        self.wait = settings.getfloat("TRACKER_RENDER_WAIT", 5.0)
        self.timeout_ms = settings.getfloat("DOWNLOAD_TIMEOUT", 30) * 1000
        self._handler: Any = None
        self._starting = asyncio.Lock()
        self._open = asyncio.Semaphore(self.pages)
        self._failure: str | None = None
        self._launched = False  # a page was rendered: later failures are the pages' own
        self._generation: Counter[str] = Counter()  # site -> its context's generation
        self._used: Counter[str] = Counter()  # context -> pages given to it
        self._busy: Counter[str] = Counter()  # context -> pages in it now
        self._retired: set[str] = set()
        self._network: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()

    async def download(self, request: Request) -> Response:
        handler = await self._started()
        site = urlparse_cached(request).hostname or ""
        context = self._context_for(site)
        request.meta["playwright_context"] = context
        request.meta["playwright_context_kwargs"] = self._context_kwargs(request, site)
        request.meta["playwright_page_init_callback"] = self._watch_network
        request.meta["playwright_page_methods"] = [_page_method(self._settle)]
        # Not the load event: a stalled image or frame must not hold the text; the scripts'
        # requests are waited for by _settle.
        request.meta["playwright_page_goto_kwargs"] = {"wait_until": "domcontentloaded"}
        async with self._open:
            self._busy[context] += 1
            try:
                response = await handler.download_request(request)
            except Exception as exc:
                if not self._launched and not hasattr(handler, "browser"):  # it never started
                    raise self._unavailable(exc) from exc
                self.stats.inc_value("tracker/render/failed")
                raise
            finally:
                for key in _CALLABLES:  # a retried request must pickle (JOBDIR, distributed)
                    request.meta.pop(key, None)
                self._busy[context] -= 1
                await self._close_if_retired(context)
        self._launched = True
        self.stats.inc_value("tracker/render/pages")
        return response

    async def close(self) -> None:
        if self._handler is not None:
            await self._handler.close()

    # -- the browser ---------------------------------------------------------------------

    async def _started(self) -> Any:
        if self._failure is not None:
            raise RenderUnavailable(self._failure)
        async with self._starting:
            if self._handler is not None:
                return self._handler
            if self.executable is None:
                raise self._unavailable(FileNotFoundError("no browser executable"))
            try:
                from scrapy_playwright.handler import ScrapyPlaywrightDownloadHandler
            except ImportError as exc:
                raise self._unavailable(exc) from exc
            handler = ScrapyPlaywrightDownloadHandler(self.crawler)
            config = handler.config
            config.launch_options = {
                "executable_path": self.executable,
                "headless": True,
                "args": list(LAUNCH_ARGS),
                "timeout": self.timeout_ms,
            }
            config.max_pages_per_context = self.pages
            config.navigation_timeout_ms = self.timeout_ms
            config.restart_disconnected_browser = True
            handler.abort_request = self._blocks
            try:  # Playwright's driver (the browser itself starts with the first context)
                await handler._maybe_launch_in_thread()
            except Exception as exc:
                raise self._unavailable(exc) from exc
            self._handler = handler
            return handler

    def _unavailable(self, exc: BaseException) -> RenderUnavailable:
        if self._failure is None:
            first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
            self._failure = (
                f"the browser could not start ({self.setting}): {first}; the pages that need "
                "rendering are recorded as unread (render_unavailable)"
            )
            log.error("%s", self._failure)
            self.stats.set_value("tracker/render/unavailable", self._failure)
        return RenderUnavailable(self._failure)

    # -- contexts ------------------------------------------------------------------------

    def _context_for(self, site: str) -> str:
        """The site's current context, a new one every ``context_pages`` pages (the old one
        closed once its pages are done)."""
        name = f"{site}#{self._generation[site]}"
        if self._used[name] >= self.context_pages:
            self._retired.add(name)
            self._used.pop(name, None)
            self._generation[site] += 1
            name = f"{site}#{self._generation[site]}"
        self._used[name] += 1
        return name

    async def _close_if_retired(self, name: str) -> None:
        if name not in self._retired or self._busy[name] > 0:
            return
        self._retired.discard(name)
        self._busy.pop(name, None)
        wrapper = self._handler.context_wrappers.get(name) if self._handler else None
        if wrapper is not None:
            try:
                await wrapper.context.close()
            except Exception as exc:  # a browser gone meanwhile: nothing left to close
                log.debug("closing browser context %s: %r", name, exc)
            self.stats.inc_value("tracker/render/contexts_closed")

    def _context_kwargs(self, request: Request, site: str) -> dict[str, Any]:
        user_agent = request.headers.get(b"User-Agent")
        kwargs: dict[str, Any] = {
            "locale": "zh-CN",
            "java_script_enabled": True,
            "ignore_https_errors": True,
            "service_workers": "block",
            "accept_downloads": False,
        }
        if user_agent:
            kwargs["user_agent"] = user_agent.decode("latin-1")
        return kwargs

    # -- each page -----------------------------------------------------------------------

    def _blocks(self, request: Any) -> bool:
        """Whether the browser must not make ``request`` (a Playwright request)."""
        if request.resource_type in BLOCKED_RESOURCES:
            return True
        url = request.url
        if url.startswith(("data:", "blob:", "about:")):
            return False
        spider = getattr(self.crawler, "spider", None)
        on_site = getattr(spider, "on_site", None)
        return on_site is not None and not on_site(url)

    async def _watch_network(self, page: Any, request: Request) -> None:
        """Count the page's requests in flight (page init callback, before navigation)."""
        state = {"pending": 0, "last": monotonic()}
        self._network[page] = state

        def started(_: Any) -> None:
            state["pending"] += 1
            state["last"] = monotonic()

        def ended(_: Any) -> None:
            state["pending"] = max(0, state["pending"] - 1)
            state["last"] = monotonic()

        page.on("request", started)
        page.on("requestfinished", ended)
        page.on("requestfailed", ended)

    async def _settle(self, page: Any) -> None:
        """Wait until the page made no request for ``QUIET_S`` (at most ``wait`` seconds)."""
        state = self._network.get(page)
        if state is None:
            return
        deadline = monotonic() + self.wait
        while monotonic() < deadline:
            if state["pending"] == 0 and monotonic() - state["last"] >= QUIET_S:
                return
            await asyncio.sleep(0.05)
        self.stats.inc_value("tracker/render/wait_expired")


def _page_method(method: Any) -> Any:
    from scrapy_playwright.page import PageMethod

    return PageMethod(method)
