"""What reading a page takes besides its HTML: the same-site stylesheets it links and the web
fonts that draw its Private-Use characters, fetched through the crawl's engine once per URL
and kept for the crawl.

The spider notes them on the page (:func:`linked_resources`, from the tree it parsed anyway);
the ExtractPipeline asks :class:`PageResources` for a page's
:class:`~tracker.reading.extract.PageContext` before sending the page to its extraction worker.

* **Stylesheets** (``<link rel="stylesheet">`` on the crawl's site, at most
  ``MAX_SHEETS_PER_PAGE`` a page) are fetched with ``engine.download_async``, so they go through
  the downloader's politeness, retries, proxies and robots.txt like any request, but not the
  scheduler: a page waiting for its sheet cannot be left waiting by the duplicate filter, and
  every worker of a distributed crawl fetches each sheet once for itself. A sheet is reduced
  in a worker process to the rules that decide visibility
  (:func:`tracker.reading.visibility.relevant_css`, typically a few hundred bytes of a 100 KB
  sheet) and its ``@font-face`` URLs; concurrent pages share one fetch.
* **Web fonts** (the ``@font-face`` sources of the page's ``<style>`` and sheets, on the site
  or ``data:`` URIs) are fetched only for pages that hold Private-Use characters, and decoded
  in the extraction worker process (:func:`tracker.reading.webfont.glyph_table`, cached per
  font digest on disk).

Both caches hold ``TRACKER_RESOURCES_CACHED`` entries (least recently used dropped). A sheet
or font that fails (HTTP error, not CSS, not a font) is logged and counted
(``tracker/reading/stylesheet_errors``, ``tracker/reading/webfont/bad``) and the page is read
without it: never lost.
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
from collections import OrderedDict
from collections.abc import Awaitable, Callable
from typing import Any, NamedTuple
from urllib.parse import urljoin, urlsplit

from scrapy.crawler import Crawler
from scrapy.http import Request, TextResponse

from tracker.crawling.process_pool import ProcessPool
from tracker.reading.extract import PageContext, has_private_use
from tracker.reading.visibility import Sheet, import_urls, read_stylesheet
from tracker.reading.webfont import data_uri_bytes, font_face_urls, glyph_table
from tracker.text.encoding import ascii_is_wide

log = logging.getLogger(__name__)

MAX_SHEETS_PER_PAGE = 8
MAX_FONTS_PER_PAGE = 4


def linked_resources(page: TextResponse, on_site: Callable[[str], bool]) -> dict[str, Any] | None:
    """The same-site stylesheets a page links, whether its text holds Private-Use characters,
    and then the web fonts its ``<style>`` blocks declare; None when there is none of these
    (most pages). JSON data, as an item field."""
    # Most pages link, import and declare nothing: a look at the raw bytes spares the XPath
    # (~6x faster than case-blind regexes; not for the encodings whose ASCII is not ASCII
    # bytes).
    raw = page.body.lower()
    wide = ascii_is_wide(page.encoding)
    sheets = []
    # The <link> elements from lxml's own iteration, not a parsel XPath (a Selector and an
    # attribute dict per element): the same elements, a third of the time.
    for link in page.selector.root.iter("link") if wide or b"stylesheet" in raw else ():
        attributes = link.attrib
        href, rel = attributes.get("href"), attributes.get("rel")
        if href is None or rel is None:
            continue
        rel = rel.lower().split()
        media = (attributes.get("media") or "").lower()
        if "stylesheet" not in rel or "alternate" in rel or "print" in media:
            continue
        url = urljoin(page.url, href.strip())
        if on_site(url):
            sheets.append(url)
    imports = wide or b"@import" in raw
    private = has_private_use(page.text)
    styles = page.xpath("//style/text()").getall() if imports or private else []
    if imports:  # sheets a <style> block imports
        for css in styles:
            sheets += [url for url in import_urls(css, page.url) if on_site(url)]
    fonts = []
    if private:
        for css in styles:
            if "@font-face" in css:
                fonts += font_face_urls(css, page.url)
    fonts = [url for url in fonts if url.startswith("data:") or on_site(url)]
    if not sheets and not private:
        return None
    return {
        "stylesheets": list(dict.fromkeys(sheets))[:MAX_SHEETS_PER_PAGE],
        "fonts": list(dict.fromkeys(fonts)),
        "private_use": private,
    }


def merge_resources(found: list[dict[str, Any] | None]) -> dict[str, Any] | None:
    """The resources of the pages of one chapter, together."""
    found = [f for f in found if f]
    if not found:
        return None
    return {
        "stylesheets": list(dict.fromkeys(u for f in found for u in f["stylesheets"])),
        "fonts": list(dict.fromkeys(u for f in found for u in f["fonts"])),
        "private_use": any(f["private_use"] for f in found),
    }


class Glyphs(NamedTuple):
    glyphs: dict[int, str]
    private: int  # Private-Use glyphs in the font


class _Cache:
    """Results by key, computed once however many pages ask at the same time; the
    ``size`` most recently used kept."""

    def __init__(self, size: int) -> None:
        self.size = size
        self.entries: OrderedDict[str, asyncio.Future] = OrderedDict()

    async def get(self, key: str, compute: Callable[[], Awaitable[Any]]) -> Any:
        future = self.entries.get(key)
        if future is None:
            future = asyncio.ensure_future(compute())
            self.entries[key] = future
            while len(self.entries) > self.size:
                self.entries.popitem(last=False)
        else:
            self.entries.move_to_end(key)
        return await asyncio.shield(future)


class PageResources:
    """The crawl's cache of stylesheets and decoded web fonts (see the module doc)."""

    def __init__(self, crawler: Crawler, pool: ProcessPool) -> None:
        self.crawler = crawler
        self.stats = crawler.stats
        self.pool = pool
        size = crawler.settings.getint("TRACKER_RESOURCES_CACHED", 512)
        self.sheets = _Cache(size)
        self.fonts = _Cache(size)

    async def context(
        self, item: Any, parts: tuple[tuple[str, str], ...] = ()
    ) -> PageContext | None:
        """What reading the page ``item`` takes besides its HTML (``parts``: its further pages
        as ``(url, html)``), or None for a plain page."""
        found = item.get("resources") or {}
        referer = item["url"]
        stylesheets: dict[str, str] = {}
        fonts = list(found.get("fonts") or ())
        for url in found.get("stylesheets") or ():
            sheet = await self.sheets.get(url, lambda url=url: self._sheet(url, referer))
            css = sheet.css
            for imported in sheet.imports[:MAX_SHEETS_PER_PAGE]:  # one level of @import
                if imported != url and _same_host(imported, url, referer):
                    inner = await self.sheets.get(
                        imported, lambda imported=imported, url=url: self._sheet(imported, url)
                    )
                    css = f"{inner.css}\n{css}" if inner.css else css
                    fonts += inner.fonts
            if css:
                stylesheets[url] = css
            fonts += sheet.fonts
        glyphs: dict[int, str] = {}
        if found.get("private_use"):
            for url in list(dict.fromkeys(fonts))[:MAX_FONTS_PER_PAGE]:
                key = url if not url.startswith("data:") else _digest(url)
                font = await self.fonts.get(key, lambda url=url: self._font(url, referer))
                glyphs.update(font.glyphs)
        if not (parts or stylesheets or glyphs):
            return None
        return PageContext(parts, stylesheets, glyphs)

    async def _fetch(self, url: str, referer: str, what: str) -> bytes | None:
        request = Request(url, headers={"Referer": referer}, dont_filter=True)
        try:
            response = await self.crawler.engine.download_async(request)
        except Exception as exc:  # connection errors, timeouts, robots.txt…
            self._failed(what, url, f"{type(exc).__name__}: {exc}")
            return None
        if response.status != 200:
            self._failed(what, url, f"HTTP {response.status}")
            return None
        return response.body

    def _failed(self, what: str, url: str, reason: str) -> None:
        key = "stylesheet_errors" if what == "stylesheet" else "webfont/bad"
        self.stats.inc_value(f"tracker/reading/{key}")
        log.warning("%s not read: %s (%s)", what, url, reason[:200])

    async def _sheet(self, url: str, referer: str) -> Sheet:
        body = await self._fetch(url, referer, "stylesheet")
        if body is None:
            return Sheet("", ())
        if body.lstrip()[:1] == b"<":  # an HTML page (an error or a login page), not CSS
            self._failed("stylesheet", url, "not CSS")
            return Sheet("", ())
        text = body.decode("utf-8", "replace")
        try:
            sheet = await self.pool.run(read_stylesheet, text, url)
        except Exception as exc:
            self._failed("stylesheet", url, f"{type(exc).__name__}: {exc}")
            return Sheet("", ())
        self.stats.inc_value("tracker/reading/stylesheets")
        return sheet

    async def _font(self, url: str, referer: str) -> Glyphs:
        if url.startswith("data:"):
            try:
                data: bytes | None = data_uri_bytes(url)
            except ValueError as exc:
                self._failed("web font", url[:60], str(exc))
                return Glyphs({}, 0)
        else:
            data = await self._fetch(url, referer, "web font")
        if data is None:
            return Glyphs({}, 0)
        try:
            glyphs, private, error = await self.pool.run(glyph_table, data)
        except Exception as exc:  # the worker died on it
            glyphs, private, error = {}, 0, f"{type(exc).__name__}: {exc}"
        if error:
            self._failed("web font", url[:200], error)
            return Glyphs({}, 0)
        self.stats.inc_value("tracker/reading/webfont/fonts")
        self.stats.inc_value("tracker/reading/webfont/glyphs", private)
        self.stats.inc_value("tracker/reading/webfont/glyphs_decoded", len(glyphs))
        return Glyphs(glyphs, private)


def _same_host(url: str, *others: str) -> bool:
    """Whether ``url`` is on the host of one of ``others`` (a sheet imported from a sheet of
    the site, or from the page's host)."""
    host = urlsplit(url).hostname
    return host is not None and any(urlsplit(other).hostname == host for other in others)


def _digest(text: str) -> str:
    return "data:" + hashlib.sha1(text.encode()).hexdigest()
