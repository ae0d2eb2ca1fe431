"""One discovery run: the day's queries sent to the search engine, their result URLs checked
through a crawl, the sites carrying copies registered and crawled; then the watched sites
crawled again.

:func:`discover` does, in order:

1. **plan** (:class:`~tracker.discovery.queries.QueryPlanner`): works in turn, each with up to
   ``discover_queries_per_work`` queries not run within ``discover_requery_days``, until the
   day's ``discover_queries_per_day`` are spent;
2. **search** (:mod:`tracker.discovery.engines`): each answer recorded; a query that failed
   (timeout, malformed or empty page, server error, every engine unresponsive) is logged,
   kept due and run again next time, and the run goes on; a rate limit that outlasts the
   back-off, an engine that cannot be reached, or :data:`MAX_FAILURES_IN_A_ROW` failures in a
   row end the searching for the run (the day's budget is not spent on a failing engine);
3. **sift** the result URLs: licensed sites (``licensed_sites``, ``licensed: true`` in a site
   file, or marked licensed in the console), sites marked ignored, and URLs checked within
   ``discover_requery_days`` are left out, each counted;
4. **check and crawl** what is left: ``scrapy crawl discover`` (``spiders/discover.py``) in its
   own process, the same download, extraction and pipelines as every crawl, each page stored
   with ``found_by`` the query; it follows the sites where a copy is found, up to
   ``discover_max_pages`` pages a site;
5. **register** (:class:`~tracker.stores.discovery.SiteRegistry`) each site with a copy: a new
   one as a ``candidate``, with the query that found it; every checked URL is recorded
   (``copy`` or ``read``; an unread one is fetched again next time).

6. **book sources** (:mod:`tracker.booksources.run`): every runnable imported source searched
   for each work within what is left of the day's budget (``scrapy crawl booksource``), the
   sites where its chapters carry copies registered with the source that found them. With no
   ``search_url``, discovery is the book sources alone.

:func:`crawl_watched` crawls each ``watched`` site from its pages with copies (``scrapy crawl
novel``, ``discover_max_pages`` pages), as a configured site is crawled; the ``discover``
scheduler job runs it after :func:`discover`.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from tracker.booksources.run import run_sources
from tracker.config import ConfigError, Settings, parse_site
from tracker.crawling.crawl import run_crawl
from tracker.discovery.crawls import CRAWL_TIMEOUT_S, crawl_for_summary
from tracker.discovery.engines import (
    CONNECTION,
    RATE_LIMITED,
    SearchEngine,
    SearchError,
    engine_for,
)
from tracker.discovery.queries import QueryPlanner
from tracker.matching.library import MasterLibrary
from tracker.model import is_licensed, site_key
from tracker.servers.runtime import Runtime
from tracker.stores.book_sources import BookSourceStore
from tracker.stores.discovery import (
    IGNORED,
    LICENSED,
    WATCHED,
    QueryStore,
    ResultStore,
    SiteRegistry,
)
from tracker.stores.masters import MasterStore

log = logging.getLogger(__name__)


class NothingToDiscover(ConfigError):
    """Neither a search engine nor a runnable book source: nothing to discover with."""


#: Queries failing in a row that end the searching for the run (the engine is failing).
MAX_FAILURES_IN_A_ROW = 5


@dataclass
class DiscoverySummary:
    """What a run did, for the command's output and the job's ledger."""

    works: int = 0
    queries: int = 0
    failed: int = 0  # queries without an answer that counts: run again next time
    budget_left: int = 0
    rate_limited: bool = False
    engine_down: bool = False  # unreachable, or failing MAX_FAILURES_IN_A_ROW queries in a row
    results: int = 0  # distinct result URLs
    skipped_licensed: int = 0
    skipped_ignored: int = 0
    skipped_checked: int = 0
    checked: int = 0  # result URLs sent to the crawl
    fetched: int = 0  # pages the crawl fetched (results, probes and followed pages)
    copies: int = 0  # pages found carrying a copy
    unread: int = 0  # result pages that could not be read
    crawl_exit_code: int | None = None
    log_file: str = ""
    seconds: float = 0.0
    search_seconds: float = 0.0  # planning and searching, the rest is the crawl
    errors: list[str] = field(default_factory=list)
    unresponsive: dict[str, int] = field(default_factory=dict)  # engine -> answers it missed
    new_sites: list[dict[str, Any]] = field(default_factory=list)  # {site, query, found_at}
    sites: list[dict[str, Any]] = field(default_factory=list)  # every site with a copy
    book_sources: dict[str, Any] = field(default_factory=dict)  # what the book sources did

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


# ------------------------------------------------------------------------- licensed sites


def licensed_sites(settings: Settings, registry: SiteRegistry | None = None) -> set[str]:
    """The sites discovery never checks: ``licensed_sites``, the configured site files marked
    ``licensed: true`` (their allowed domains), and the sites marked licensed in the
    console."""
    found = set(settings.licensed_sites)
    for position, raw in enumerate(settings.sites):
        arguments = raw.get("arguments") if isinstance(raw, dict) else None
        if not isinstance(arguments, dict) or not arguments.get("config"):
            continue
        from spiders.siteconfig import SiteConfigError, load_site_config

        try:
            config = load_site_config(str(arguments["config"]))
        except (OSError, SiteConfigError) as exc:
            raise ConfigError(f"sites[{position}]: {exc}") from None
        if config.licensed:
            # Its allowed domains; a start page naming a port: that host on that port only
            # (as its crawl is confined).
            ported = {parse_site(url) for url in config.start_urls if urlsplit(url).port}
            hosts = {site.split(":")[0] for site in ported}
            found |= ported | {parse_site(d) for d in config.allowed_domains if d not in hosts}
    if registry is not None:
        found |= {doc["_id"] for doc in registry.with_state(LICENSED)}
    return found


# ------------------------------------------------------------------------------------ run


def discover(
    runtime: Runtime,
    settings: Settings,
    *,
    works: Iterable[str] | None = None,
    engine: SearchEngine | None = None,
    now: datetime | None = None,
    stop: threading.Event | None = None,
    log_file: Path | None = None,
    crawl: Callable[..., int] = run_crawl,
) -> DiscoverySummary:
    """One discovery run (see the module doc); ``works`` limits it to those works."""
    db = runtime.db
    has_sources = bool(BookSourceStore(db).runnable())
    if engine is None and settings.search_url:
        engine = engine_for(settings)
    if engine is None and not has_sources:
        raise NothingToDiscover(
            "search_url (TRACKER_SEARCH_URL) is not set and no book source can be run: "
            "discovery needs a SearXNG instance (see deploy/compose.yaml) or book sources "
            "(tracker sources import FILE)"
        )
    started = time.monotonic()
    now = now or datetime.now(UTC)
    summary = DiscoverySummary()
    queries, results, registry = QueryStore(db), ResultStore(db), SiteRegistry(db)
    licensed = licensed_sites(settings, registry)
    works = list(works) if works is not None else None

    found = {}
    if engine is not None:
        found = _search(runtime, settings, engine, queries, summary, works, now, stop)
    else:
        day = now.astimezone(UTC).date().isoformat()
        summary.budget_left = max(0, settings.discover_queries_per_day - queries.spent(day))
    if has_sources and not (stop and stop.is_set()):
        _run_sources(runtime, settings, summary, licensed, works, now, stop, crawl)
    summary.results = len(found)
    summary.search_seconds = round(time.monotonic() - started, 3)

    ignored = {doc["_id"] for doc in registry.with_state(IGNORED)}
    recent = results.checked_since(found, now - timedelta(days=settings.discover_requery_days))
    to_check: dict[str, str] = {}
    for url, query in found.items():
        if is_licensed(url, licensed):
            summary.skipped_licensed += 1
        elif site_key(url) in ignored:
            summary.skipped_ignored += 1
        elif url in recent:
            summary.skipped_checked += 1
        else:
            to_check[url] = query
    summary.checked = len(to_check)
    log.info(
        "%d result URL(s): %d to check, %d on licensed sites, %d on ignored sites, "
        "%d checked within %d days",
        len(found), len(to_check), summary.skipped_licensed, summary.skipped_ignored,
        summary.skipped_checked, settings.discover_requery_days,
    )  # fmt: skip
    if to_check and not (stop and stop.is_set()):
        _check(settings, to_check, licensed, summary, results, registry, now, log_file, crawl, stop)
    summary.seconds = round(time.monotonic() - started, 3)
    return summary


def _run_sources(
    runtime: Runtime,
    settings: Settings,
    summary: DiscoverySummary,
    licensed: set[str],
    works: list[str] | None,
    now: datetime,
    stop: threading.Event | None,
    crawl: Callable[..., int],
) -> None:
    """The book sources' runs (:mod:`tracker.booksources.run`) within what is left of the
    day's budget; their sites with copies counted with the search engine's."""
    ran, sites = run_sources(
        runtime.db, settings, licensed=licensed, budget=summary.budget_left, now=now,
        only=works, crawl=crawl, stop=stop,
    )  # fmt: skip
    summary.book_sources = ran.to_dict()
    summary.budget_left = max(0, summary.budget_left - ran.runs)
    summary.failed += ran.failed
    summary.copies += ran.copies
    if ran.crawl_exit_code not in (None, 0):
        summary.errors.append(f"the book-source crawl exited with {ran.crawl_exit_code}")
        summary.crawl_exit_code = summary.crawl_exit_code or ran.crawl_exit_code
    for entry in sites:
        new = entry.pop("new")
        summary.sites.append(entry)
        if new:
            summary.new_sites.append(entry)


def _search(
    runtime: Runtime,
    settings: Settings,
    engine: SearchEngine,
    store: QueryStore,
    summary: DiscoverySummary,
    only: Iterable[str] | None,
    now: datetime,
    stop: threading.Event | None,
) -> dict[str, str]:
    """Run the due queries within the day's budget; ``result URL → query`` (the first query
    that returned it)."""
    library = MasterLibrary.from_runtime(runtime)
    planner = QueryPlanner(
        MasterStore(runtime.db),
        library.index,
        store,
        now=now,
        requery_days=settings.discover_requery_days,
        per_work=settings.discover_queries_per_work,
        priority=settings.discover_priority,
    )
    day = now.astimezone(UTC).date().isoformat()
    budget = settings.discover_queries_per_day - store.spent(day)
    found: dict[str, str] = {}
    failing = 0  # queries failed in a row
    for work in planner.ordered_works(only):
        if budget <= 0 or summary.rate_limited or summary.engine_down or (stop and stop.is_set()):
            break
        planned = planner.for_work(work, limit=budget)
        if not planned:
            continue
        summary.works += 1
        for query in planned:
            if stop and stop.is_set():
                break
            budget -= 1
            summary.queries += 1
            try:
                answer = engine.search(query.text)
            except SearchError as exc:
                summary.failed += 1
                summary.errors.append(f"{query.text}: {exc}")
                log.error("query %r failed, to be run again next time: %s", query.text, exc)
                store.attempted(query.text, query.about(), now, done=False, error=str(exc))
                failing += 1
                if exc.kind == RATE_LIMITED:
                    summary.rate_limited = True
                    log.error("the search engine is rate-limiting: no more queries this run")
                    break
                if exc.kind == CONNECTION or failing >= MAX_FAILURES_IN_A_ROW:
                    summary.engine_down = True
                    log.error("the search engine is failing: no more queries this run")
                    break
                continue
            failing = 0
            for engine_name, _reason in answer.unresponsive:
                summary.unresponsive[engine_name] = summary.unresponsive.get(engine_name, 0) + 1
            urls = [result.url for result in answer.results]
            if not urls and answer.unresponsive:
                # Nothing, because the engines behind it failed: not an answer, asked again.
                reasons = ", ".join(f"{name} ({why})" for name, why in answer.unresponsive)
                error = f"no result: unresponsive engines {reasons}"
                summary.failed += 1
                summary.errors.append(f"{query.text}: {error}")
                log.error("query %r: %s; to be run again next time", query.text, error)
                store.attempted(query.text, query.about(), now, done=False, error=error)
                continue
            if answer.unresponsive:
                log.warning(
                    "query %r: engines did not answer: %s",
                    query.text,
                    ", ".join(f"{name} ({why})" for name, why in answer.unresponsive),
                )
            store.attempted(query.text, query.about(), now, done=True, results=urls, empty=not urls)
            for url in urls:
                found.setdefault(url, query.text)
        store.searched(work.name, now)
    summary.budget_left = max(0, budget)
    return found


def _check(
    settings: Settings,
    to_check: dict[str, str],
    licensed: set[str],
    summary: DiscoverySummary,
    results: ResultStore,
    registry: SiteRegistry,
    now: datetime,
    log_file: Path | None,
    crawl: Callable[..., int],
    stop: threading.Event | None,
) -> None:
    """``scrapy crawl discover`` over ``to_check`` (``url → query``); record what it found."""
    outcome = crawl_for_summary(
        crawl,
        "discover",
        settings,
        {"results": [{"url": url, "query": query} for url, query in to_check.items()]},
        now=now,
        arguments={"licensed": ",".join(sorted(licensed))},
        scrapy_settings={"TRACKER_DISCOVER_MAX_PAGES": settings.discover_max_pages},
        log_file=log_file,
        stop=stop,
    )
    summary.crawl_exit_code, summary.log_file = outcome.exit_code, str(outcome.log_file)
    crawled = outcome.summary
    if crawled is None:
        summary.errors.append(outcome.error)
        return
    outcomes: dict[str, str] = crawled.get("results", {})
    checked = [
        (url, site_key(url), to_check[url], outcome)
        for url, outcome in outcomes.items()
        if url in to_check and outcome != "unread"
    ]
    summary.unread = sum(1 for outcome in outcomes.values() if outcome == "unread")
    results.checked(checked, now)
    for site, tally in sorted(crawled.get("sites", {}).items()):
        summary.fetched += int(tally.get("fetched", 0))
        copies = int(tally.get("copies", 0))
        if not copies:
            continue
        summary.copies += copies
        query, found_at = str(tally.get("query") or ""), str(tally.get("found_at") or "")
        new = registry.found(
            site,
            query=query,
            url=found_at,
            entries=list(tally.get("entries") or ()),
            pages=int(tally.get("fetched", 0)),
            copies=copies,
            now=now,
        )
        entry = {"site": site, "query": query, "found_at": found_at, "copies": copies}
        summary.sites.append(entry)
        if new:
            summary.new_sites.append(entry)
            log.info("new site %s: %d copies, found by %r at %s", site, copies, query, found_at)


def crawl_watched(
    settings: Settings,
    registry: SiteRegistry,
    *,
    now: datetime | None = None,
    stop: threading.Event | None = None,
    crawl: Callable[..., int] = run_crawl,
) -> list[dict[str, Any]]:
    """Crawl every watched site from its pages with copies (``scrapy crawl novel``, up to
    ``discover_max_pages`` pages); what each crawl did."""
    now = now or datetime.now(UTC)
    stamp = now.astimezone(UTC).strftime("%Y%m%dT%H%M%S")
    done = []
    for doc in registry.with_state(WATCHED):
        if stop and stop.is_set():
            break
        starts = list(doc.get("entries") or ()) or [doc.get("found_at")]
        starts = [url for url in starts if url]
        if not starts:
            continue
        name = doc["_id"].replace(":", "_")
        log_file = Path(settings.data_dir) / "logs" / f"crawl-watched-{name}-{stamp}.log"
        log_file.parent.mkdir(parents=True, exist_ok=True)
        try:
            code = crawl(
                "novel",
                settings,
                arguments={
                    "start_url": ",".join(starts),
                    "max_pages": settings.discover_max_pages,
                },
                log_file=log_file,
                timeout=CRAWL_TIMEOUT_S,
                stop=stop,
            )
        except Exception as exc:  # subprocess.TimeoutExpired, OSError
            log.error("crawl of watched site %s did not complete: %s", doc["_id"], exc)
            code = None
        done.append({"site": doc["_id"], "exit_code": code, "log_file": str(log_file)})
    return done
