"""Book sources in a discovery run: every runnable source searched for each work of the library,
within the day's query budget, through ``scrapy crawl booksource`` (``spiders/booksource.py``).

A search of one source for one work counts as one query against ``discover_queries_per_day``
(recorded in :class:`~tracker.stores.discovery.QueryStore` as ``source ⟶ work``, kind
``source``), and is not run again within ``discover_requery_days`` once its search page
answered; one whose search page could not be read is run again next time. Sources on licensed
or ignored sites are not run. Works take turns as for the search engine's queries
(``discover_priority`` first, then the one searched longest ago), every due source within each.

After the crawl, each source's ``last_run`` is stored, and each site where chapters carried a
copy is registered (:meth:`~tracker.stores.discovery.SiteRegistry.found`) with the source as
what found it, its chapters with copies as its entries.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from tracker.config import Settings
from tracker.discovery.crawls import crawl_for_summary
from tracker.discovery.queries import library_works
from tracker.model import is_licensed
from tracker.stores.book_sources import BookSourceStore
from tracker.stores.discovery import IGNORED, QueryStore, SiteRegistry
from tracker.stores.masters import MasterStore

log = logging.getLogger(__name__)

ARROW = " ⟶ "


@dataclass
class SourcesSummary:
    """What the book sources did in a run."""

    sources: int = 0  # runnable sources
    skipped_sites: int = 0  # sources on licensed or ignored sites
    runs: int = 0  # searches of a source for a work
    failed: int = 0  # runs whose search page could not be read (run again next time)
    books: int = 0
    chapters: int = 0  # chapters listed
    read: int = 0  # chapters read by the rules
    copies: int = 0
    crawl_exit_code: int | None = None
    log_file: str = ""
    by_source: dict[str, dict[str, Any]] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def query_of(source: str, work: str) -> str:
    return f"{source}{ARROW}{work}"


def plan_runs(
    db: Any,
    settings: Settings,
    sources: list[dict[str, Any]],
    only: Iterable[str] | None,
    budget: int,
    now: datetime,
) -> list[tuple[str, str]]:
    """``(source, work)`` pairs due now, up to ``budget``: the ``discover_priority`` works
    first, then works in turn (searched longest ago first), each with every source whose
    search of it is due."""
    queries = QueryStore(db)
    works = library_works(MasterStore(db))
    if only is not None:
        works = {name: works[name] for name in only if name in works}
    searched = queries.searched_at()
    epoch = datetime.min.replace(tzinfo=UTC)
    first = [name for name in dict.fromkeys(settings.discover_priority) if name in works]
    rest = sorted(set(works) - set(first), key=lambda name: (searched.get(name, epoch), name))
    order = first + rest
    pairs = [(doc["_id"], work) for work in order for doc in sources]
    states = queries.states(query_of(source, work) for source, work in pairs)
    requery = timedelta(days=settings.discover_requery_days)
    due = []
    for source, work in pairs:
        done = (states.get(query_of(source, work)) or {}).get("done_at")
        if done is None or done < now - requery:
            due.append((source, work))
    return due[: max(budget, 0)]


def run_sources(
    db: Any,
    settings: Settings,
    *,
    licensed: set[str],
    budget: int,
    now: datetime,
    only: Iterable[str] | None = None,
    crawl: Callable[..., int],
    stop: threading.Event | None = None,
    log_file: Path | None = None,
) -> tuple[SourcesSummary, list[dict[str, Any]]]:
    """Run the due sources (see the module doc): what they did, and the sites where copies
    were found (``{site, query, found_at, copies, new}``)."""
    summary = SourcesSummary()
    store, registry, queries = BookSourceStore(db), SiteRegistry(db), QueryStore(db)
    ignored = {doc["_id"] for doc in registry.with_state(IGNORED)}
    sources = []
    for doc in store.runnable():
        if is_licensed(doc["url"], licensed) or doc["host"] in ignored:
            summary.skipped_sites += 1
            log.info("book source %s not run: its site is licensed or ignored", doc["_id"])
        else:
            sources.append(doc)
    summary.sources = len(sources)
    pairs = plan_runs(db, settings, sources, only, budget, now)
    if not pairs or (stop and stop.is_set()):
        return summary, []
    raws = {doc["_id"]: doc["raw"] for doc in sources}
    used = {source for source, _ in pairs}
    runs = {
        "sources": {name: raw for name, raw in raws.items() if name in used},
        "runs": [{"source": source, "work": work} for source, work in pairs],
    }
    outcome = crawl_for_summary(
        crawl, "booksource", settings, {"runs": runs}, now=now, log_file=log_file, stop=stop
    )
    summary.crawl_exit_code, summary.log_file = outcome.exit_code, str(outcome.log_file)
    crawled = outcome.summary
    if crawled is None:
        return summary, []
    summary.runs = len(pairs)
    for run in crawled.get("runs", []):
        done = run["outcome"] == "searched"
        summary.failed += not done
        about = {"work": run["work"], "kind": "source", "source": run["source"]}
        queries.attempted(query_of(run["source"], run["work"]), about, now, done=done)
    for work in {work for _, work in pairs}:
        queries.searched(work, now)
    for name, tally in crawled.get("sources", {}).items():
        summary.by_source[name] = tally
        for key in ("books", "chapters", "read", "copies"):
            setattr(summary, key, getattr(summary, key) + int(tally.get(key, 0)))
        store.ran(name, tally, now)
    found = []
    for site, tally in sorted(crawled.get("sites", {}).items()):
        if not tally.get("copies"):
            continue
        new = registry.found(
            site,
            query=str(tally.get("query") or ""),
            url=str(tally.get("found_at") or ""),
            entries=list(tally.get("entries") or ()),
            pages=int(tally.get("fetched", 0)),
            copies=int(tally["copies"]),
            now=now,
        )
        found.append(
            {
                "site": site,
                "query": tally.get("query", ""),
                "found_at": tally.get("found_at", ""),
                "copies": int(tally["copies"]),
                "new": new,
            }
        )
    return summary, found
