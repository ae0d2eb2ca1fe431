"""``scrapy crawl booksource -a runs=FILE``: run Legado book sources (see
:mod:`tracker.booksources`, which writes the file and runs this crawl).

``runs`` names a JSON file ``{"sources": {name: source object}, "runs": [{"source", "work"}]}``:
each run searches one source's site for one work's title. A run:

1. sends the source's ``searchUrl`` for the title (:func:`~tracker.booksources.urls.search_request`:
   GET or POST, in the source's charset);
2. reads the results with ``ruleSearch.bookList`` and picks the book whose ``name`` is the title
   (:func:`same_title`), then its ``bookUrl``;
3. reads the book page, and the table of contents at ``ruleBookInfo.tocUrl`` (none: the book
   page is the table), its chapters by ``ruleToc.chapterList``/``chapterName``/``chapterUrl``,
   following ``nextTocUrl``;
4. reads each chapter by ``ruleContent.content``, following ``nextContentUrl`` (up to
   ``TRACKER_MAX_PARTS`` pages, never into another chapter), ``replaceRegex`` applied.

Every page is fetched, decoded and checked as a crawl's (bans, challenge pages, unread pages:
:class:`~spiders.base.TrackerSpider`), and never off the source's site. A chapter becomes one
:class:`~tracker.crawling.items.PageItem` for the pipelines, under its URL, with the HTTP
exchanges of all its pages (the evidence) and ``found_by`` the source: its HTML is the text the
rules read, in a page of its own that the ExtractPipeline reads by selector. A chapter page the
content rule finds nothing on goes to the pipelines as it came, read as a crawl reads a page.

Each failure of a run is logged with its reason (a search page that is not what the rules
expect, a rule matching nothing, no book of that name) and counted; with ``-a summary=FILE``
the crawl writes per run its ``outcome`` (``searched``: the search answered; ``unread``; or
``failed``), per source what it did (books, chapters listed and read, copies, reasons) and per
site the copies found (as ``scrapy crawl discover`` does).
"""

from __future__ import annotations

import json
import re
import unicodedata
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import lxml.html
from lxml.html import builder
from scrapy.http import Request, Response, TextResponse
from twisted.python.failure import Failure

from spiders.base import TrackerSpider, argument
from spiders.copies import WatchesCopies
from tracker.booksources.rules import Analyzer, RuleError, apply_replace, html_to_text
from tracker.booksources.source import BookSource, source_from
from tracker.booksources.urls import UrlError, search_request
from tracker.crawling.items import PageItem
from tracker.crawling.outcomes import SKIPPED
from tracker.crawling.outcomes import UNREAD as URL_UNREAD
from tracker.enforcement.capture import exchange_of
from tracker.model import site_key

#: The element of a chapter's page that holds the text its rules read.
CONTENT_ID = "booksource-content"
#: Reasons a source's summary keeps.
MAX_REASONS = 20
#: How the pages a source reads for their links end in the crawl's accounting (skipped).
SOURCE_PAGES = {
    "search page": "source_search",
    "book page": "source_book",
    "table of contents": "source_toc",
}
SEARCHED, UNREAD, FAILED = "searched", "unread", "failed"
_TITLE_NOISE = re.compile(r"[\s《》【】「」『』<>\"'“”·:：,，.。!！?？_\-—]+")
_TITLE_SUFFIX = re.compile(r"[(（\[【][^)）\]】]*[)）\]】]$")


def same_title(name: str, title: str) -> bool:
    """``name``, as a site lists a book, is ``title``: equal once width, case, spaces,
    punctuation and book-title marks are set aside, and a trailing note in brackets (（全本）,
    [精校]) dropped."""

    def plain(text: str) -> str:
        text = unicodedata.normalize("NFKC", text or "").strip().lower()
        return _TITLE_NOISE.sub("", _TITLE_SUFFIX.sub("", text))

    return bool(plain(title)) and plain(name) == plain(title)


@dataclass
class SourceTally:
    """What one source's runs did."""

    runs: int = 0
    searched: int = 0  # searches answered
    books: int = 0  # books of the work's title found
    chapters: int = 0  # chapters listed in the tables of contents
    read: int = 0  # chapters whose text the rules read
    copies: int = 0  # chapters found carrying a copy
    unread: int = 0
    reasons: list[str] = field(default_factory=list)


@dataclass
class SiteTally:
    query: str = ""  # the source that led there
    found_at: str = ""
    fetched: int = 0
    copies: int = 0
    entries: list[str] = field(default_factory=list)


@dataclass
class Run:
    source: str
    work: str
    outcome: str = FAILED
    chapter_urls: set[str] = field(default_factory=set)
    toc_seen: set[str] = field(default_factory=set)


class BookSourceSpider(WatchesCopies, TrackerSpider):
    name = "booksource"

    def __init__(
        self,
        runs: str | None = None,
        summary: str | None = None,
        max_chapters: str | int | None = None,
        **kwargs: Any,
    ) -> None:
        if not runs:
            raise ValueError(
                'give the runs: scrapy crawl booksource -a runs=FILE ({"sources": {…}, "runs": '
                '[{"source", "work"}]})'
            )
        self.sources, self.runs = read_runs(runs)
        kwargs.pop("start_url", None)
        kwargs["start_url"] = ",".join(sorted({s.url for s in self.sources.values()}))
        super().__init__(**kwargs)
        self.allowed_domains = sorted({s.domain for s in self.sources.values()})
        self.summary_path = summary
        self.max_chapters = argument("max_chapters", max_chapters, int) or 5000
        self.tallies = {name: SourceTally() for name in self.sources}
        self.site_tallies: dict[str, SiteTally] = {}
        self.chapter_run: dict[str, int] = {}  # chapter URL -> its run

    def spider_settings(self) -> dict[str, Any]:
        return {**super().spider_settings(), "CLOSESPIDER_PAGECOUNT": self.max_pages or 0}

    # -- requests --------------------------------------------------------------------------

    async def start(self) -> Any:
        await self.rendering.load(self.crawler, set(self.allowed_domains))
        for index, run in enumerate(self.runs):
            source = self.sources[run.source]
            self.tallies[run.source].runs += 1
            try:
                wanted = search_request(
                    source.search_url, run.work, source.url, headers=source.headers()
                )
            except UrlError as exc:
                self.fail(index, f"searchUrl: {exc}")
                continue
            request = self.source_request(
                index, wanted.url, self.parse_search, "search page",
                method=wanted.method, body=wanted.body, headers=wanted.headers,
            )  # fmt: skip
            if request is not None:
                yield request

    def source_request(
        self, run: int, url: str, callback: Any, what: str, **kwargs: Any
    ) -> Request | None:
        """A request of ``run`` on its source's site (None, the reason recorded, elsewhere)."""
        source = self.sources[self.runs[run].source]
        if not self.on_source_site(url, source):
            self.fail(run, f"{what} {url} is not on the source's site {source.host}")
            return None
        if "headers" not in kwargs:
            kwargs["headers"] = source.headers()
        cb_kwargs = {"run": run, **kwargs.pop("cb_kwargs", {})}
        request = self.request(url, callback, cb_kwargs=cb_kwargs, **kwargs)
        return request.replace(errback=self.on_source_error)

    def on_source_site(self, url: str, source: BookSource) -> bool:
        """``url`` is on the source's domain or a subdomain (and port, when it names one)."""
        host, port = site_key(url), urlsplit(url).port
        name = host.split(":")[0]
        wanted_port = source.host.partition(":")[2]
        if wanted_port and str(port) != wanted_port:
            return False
        return self.on_site(url) and (name == source.domain or name.endswith("." + source.domain))

    def on_source_error(self, failure: Failure) -> Iterator[Any]:
        """A request that failed (counted, unread as in a crawl); a chapter whose later page
        failed is sent on as far as it was read."""
        self.on_error(failure)
        request = getattr(failure, "request", None)
        if request is None or "run" not in request.cb_kwargs:
            return
        run = request.cb_kwargs["run"]
        self.fail(run, f"{request.url}: {str(failure.value)[:120]}")
        if pages := request.cb_kwargs.get("pages"):
            yield self.chapter_item(run, request.cb_kwargs["name"], pages)

    def fail(self, run: int, reason: str, unread: bool = False) -> None:
        """Record why ``run`` went no further (logged, counted, kept in the summary)."""
        current = self.runs[run]
        tally = self.tallies[current.source]
        if unread:
            tally.unread += 1
            if current.outcome == FAILED:
                current.outcome = UNREAD
        self.crawler.stats.inc_value("tracker/booksource/failures")
        message = f"{current.source} / {current.work}: {reason}"
        self.logger.warning("book source %s", message)
        if len(tally.reasons) < MAX_REASONS:
            tally.reasons.append(message)

    # -- reading ---------------------------------------------------------------------------

    def read(self, response: Response, run: int, what: str) -> TextResponse | None:
        """The page decoded, or None (its reason recorded) when it is not text or is a
        challenge; recorded read or unread as a crawl records it."""
        self.site_tally(response.url, run).fetched += 1
        self.outcomes.fetched(response.meta)
        read = self.read_page(response)
        if read is None:
            self.fail(run, f"{what} {response.url} is not text")
            self.outcomes.end(SKIPPED, "not_text")
            return None
        page, truncated = read
        if challenge := self.challenge(page):
            self.unread.unread(page.url, challenge, f"{challenge} page, status {page.status}")
            self.fail(run, f"{what} {page.url} is a {challenge} page: unread", unread=True)
            self.outcomes.end(URL_UNREAD, challenge)
            return None
        if truncated and "dataloss" in response.flags:
            self.unread.unread(page.url, "truncated", "body cut short in transfer")
        else:
            self.unread.read(page.url)
        if what != "chapter":  # a search, book or contents page: read for its links
            self.outcomes.end(SKIPPED, SOURCE_PAGES.get(what, "source_page"))
        return page

    def rules(self, run: int, group: str) -> dict[str, str]:
        return self.sources[self.runs[run].source].rules(group)

    def parse_search(self, response: Response, run: int) -> Iterator[Any]:
        page = self.read(response, run, "search page")
        if page is None:
            return
        self.runs[run].outcome = SEARCHED
        tally = self.tallies[self.runs[run].source]
        tally.searched += 1
        rules = self.rules(run, "ruleSearch")
        analyzer = Analyzer(page.text, page.url)
        try:
            books = analyzer.elements(rules["bookList"])
            if not books:
                self.fail(run, _nothing("ruleSearch.bookList", rules["bookList"], page, analyzer))
                return
            found = []
            for book in books:
                item = Analyzer(book, page.url)
                found.append((item.string(rules["name"]), item.url(rules["bookUrl"])))
        except RuleError as exc:
            self.fail(run, f"search page {page.url}: {exc}")
            return
        title = self.runs[run].work
        chosen = [url for name, url in found if same_title(name, title) and url]
        if not chosen:
            names = ", ".join(repr(name) for name, _ in found[:5])
            self.fail(run, f"no book named {title!r} among {len(found)} results ({names})")
            return
        tally.books += 1
        self.crawler.stats.inc_value("tracker/booksource/books")
        if request := self.source_request(run, chosen[0], self.parse_book, "book page"):
            yield request

    def parse_book(self, response: Response, run: int) -> Iterator[Any]:
        page = self.read(response, run, "book page")
        if page is None:
            return
        rule = self.rules(run, "ruleBookInfo").get("tocUrl", "").strip()
        try:
            toc = Analyzer(page.text, page.url).url(rule) if rule else ""
        except RuleError as exc:
            self.fail(run, f"ruleBookInfo.tocUrl on {page.url}: {exc}")
            return
        if not toc or toc == page.url:
            yield from self.toc(page, run)
        elif request := self.source_request(run, toc, self.parse_toc, "table of contents"):
            yield request

    def parse_toc(self, response: Response, run: int) -> Iterator[Any]:
        page = self.read(response, run, "table of contents")
        if page is not None:
            yield from self.toc(page, run)

    def toc(self, page: TextResponse, run: int) -> Iterator[Any]:
        current = self.runs[run]
        current.toc_seen.add(page.url)
        rules = self.rules(run, "ruleToc")
        analyzer = Analyzer(page.text, page.url)
        try:
            listed = analyzer.elements(rules["chapterList"])
            chapters = []
            for entry in listed:
                item = Analyzer(entry, page.url)
                name = item.string(rules["chapterName"]) if rules.get("chapterName") else ""
                chapters.append((name, item.url(rules["chapterUrl"])))
            onward = analyzer.urls(rules["nextTocUrl"]) if rules.get("nextTocUrl") else []
        except RuleError as exc:
            self.fail(run, f"table of contents {page.url}: {exc}")
            return
        if not listed:
            self.fail(run, _nothing("ruleToc.chapterList", rules["chapterList"], page, analyzer))
        tally = self.tallies[current.source]
        new = [(n, url) for n, url in chapters if url and url not in current.chapter_urls]
        current.chapter_urls.update(url for _, url in new)
        for name, url in new:
            if tally.chapters >= self.max_chapters:
                self.crawler.stats.inc_value("tracker/booksource/max_chapters")
                break
            tally.chapters += 1
            self.chapter_run[url] = run
            if request := self.source_request(
                run, url, self.parse_chapter, "chapter", cb_kwargs={"name": name, "pages": []}
            ):
                yield request
        for url in onward:
            if url not in current.toc_seen:
                current.toc_seen.add(url)
                if request := self.source_request(run, url, self.parse_toc, "next table page"):
                    yield request

    def parse_chapter(
        self, response: Response, run: int, name: str, pages: list[tuple[TextResponse, str]]
    ) -> Iterator[Any]:
        page = self.read(response, run, "chapter")
        if page is None:
            if pages:  # a later page unread: the chapter as far as it was read
                yield self.chapter_item(run, name, pages)
            return
        rules = self.rules(run, "ruleContent")
        analyzer = Analyzer(page.text, page.url)
        try:
            text = html_to_text(analyzer.string(rules["content"]))
            nexts = analyzer.urls(rules["nextContentUrl"]) if rules.get("nextContentUrl") else []
        except RuleError as exc:
            self.fail(run, f"chapter {page.url}: {exc}")
            text, nexts = "", []
        if not text.strip():
            if not pages:
                self.fail(run, _nothing("ruleContent.content", rules["content"], page, analyzer))
                self.crawler.stats.inc_value("tracker/booksource/content_missed")
                yield self.page_item(page)  # read as a crawl reads a page
                return
            self.outcomes.end(SKIPPED, "without_text")  # a later page the rules read nothing on
        else:
            pages = [*pages, (page, text)]
        current = self.runs[run]
        seen = {p.url for p, _ in pages} | {page.url}
        onward = next(
            (url for url in nexts if url not in seen and url not in current.chapter_urls), None
        )
        if onward and len(pages) < self.max_parts:
            request = self.source_request(
                run, onward, self.parse_chapter, "next chapter page",
                cb_kwargs={"name": name, "pages": pages},
            )  # fmt: skip
            if request is not None:
                yield request
                return
        if pages:
            yield self.chapter_item(run, name, pages)

    def chapter_item(self, run: int, name: str, pages: list[tuple[TextResponse, str]]) -> PageItem:
        """A chapter's item: under its first page's URL, the evidence of every page, and for
        its HTML the text the rules read (``replaceRegex`` applied)."""
        first = pages[0][0]
        source = self.sources[self.runs[run].source]
        text = "\n".join(text for _, text in pages)
        replace = source.rules("ruleContent").get("replaceRegex", "")
        if replace.strip():
            try:
                text = apply_replace(text, replace if replace.startswith("##") else "##" + replace)
            except RuleError as exc:
                self.fail(run, f"ruleContent.replaceRegex: {exc}")
        item = self.page_item(first)
        item.pop("resources", None)  # the page below is the rules' text, not the site's markup
        item["html"] = chapter_page(name, text)
        item["rules"] = {"css": f"#{CONTENT_ID}", "articles": True}
        item["exchanges"] = [exchange_of(page) for page, _ in pages]
        item["found_by"] = f"book source {source.name}"
        if len(pages) > 1:
            item["parts"] = [page.url for page, _ in pages[1:]]
        self.tallies[source.name].read += 1
        self.crawler.stats.inc_value("tracker/booksource/chapters_read")
        return item

    # -- what the pipelines found ----------------------------------------------------------

    def site_tally(self, url: str, run: int) -> SiteTally:
        site = site_key(url)
        if site not in self.site_tallies:
            self.site_tallies[site] = SiteTally(query=self.runs[run].source)
        return self.site_tallies[site]

    def found_copy(self, url: str) -> None:
        run = self.chapter_run.get(url)
        if run is None:
            return
        self.tallies[self.runs[run].source].copies += 1
        tally = self.site_tally(url, run)
        tally.copies += 1
        tally.found_at = tally.found_at or url
        if len(tally.entries) < 20:
            tally.entries.append(url)

    async def closed(self, reason: str) -> None:
        await super().closed(reason)
        for name, tally in self.tallies.items():
            self.logger.info(
                "book source %s: %d run(s), %d searched, %d book(s), %d chapters listed, "
                "%d read, %d copies", name, tally.runs, tally.searched, tally.books,
                tally.chapters, tally.read, tally.copies,
            )  # fmt: skip
        if not self.summary_path:
            return
        summary = {
            "runs": [{"source": r.source, "work": r.work, "outcome": r.outcome} for r in self.runs],
            "sources": {name: asdict(tally) for name, tally in self.tallies.items()},
            "sites": {site: asdict(tally) for site, tally in self.site_tallies.items()},
        }
        Path(self.summary_path).write_text(json.dumps(summary, ensure_ascii=False), "utf-8")


def chapter_page(title: str, text: str) -> str:
    """A page holding a chapter's title and text, built (and escaped) by lxml."""
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    document = builder.HTML(
        builder.HEAD(builder.META(charset="utf-8"), builder.TITLE(title)),
        builder.BODY(
            builder.H1(title), builder.DIV(*(builder.P(line) for line in lines), id=CONTENT_ID)
        ),
    )
    return lxml.html.tostring(document, encoding="unicode", doctype="<!DOCTYPE html>")


def _nothing(what: str, rule: str, page: TextResponse, analyzer: Analyzer) -> str:
    """Why a rule found nothing: the page is not what the rule reads (JSON for HTML, or
    neither), or the rule matches nothing on it."""
    body = " ".join(page.text[:80].split())
    wants_json = rule.lstrip("-+").startswith(("$.", "$[", "@Json:", "@json:"))
    if wants_json and not analyzer.is_json:
        return f"{what} {rule!r}: {page.url} answered something not JSON ({body!r})"
    return f"{what} {rule!r} matched nothing on {page.url} ({body!r})"


def read_runs(path: str) -> tuple[dict[str, BookSource], list[Run]]:
    """The sources and runs of a runs file (ValueError naming what is wrong)."""
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except OSError as exc:
        raise ValueError(f"-a runs={path}: {exc.strerror or exc}") from None
    except ValueError as exc:
        raise ValueError(f"-a runs={path}: not JSON ({exc})") from None
    if not isinstance(data, dict) or not isinstance(data.get("sources"), dict):
        raise ValueError(f'-a runs={path}: expected {{"sources": {{…}}, "runs": […]}}')
    sources = {}
    for name, raw in data["sources"].items():
        source = source_from(raw)
        if not source.runnable:
            raise ValueError(f"-a runs={path}: source {name!r} cannot be run: {source.why_not}")
        source.name = name
        sources[name] = source
    runs = [
        Run(str(entry["source"]), str(entry["work"]))
        for entry in data.get("runs") or ()
        if isinstance(entry, dict) and entry.get("source") in sources and entry.get("work")
    ]
    if not runs:
        raise ValueError(f"-a runs={path}: no run")
    return sources, runs
