"""``tracker discover [--work NAME …] [--json]``: find the sites that carry the library's works
through the search engine at ``search_url`` and the imported book sources (``tracker sources
import``; either suffices; see :mod:`tracker.discovery.run`);
``tracker discover sites [--state STATE] [--json]`` lists the site registry, reading only;
``tracker discover mark SITE STATE`` sets a site's state.

Exit status: 0 done, 1 some queries failed (they are run again next time) or the crawl did not
finish cleanly, 2 on any error.
"""

from __future__ import annotations

import argparse
import json
import sys
from datetime import UTC, datetime

from tracker.config import Settings

#: The settings a run reads, for its --help.
SETTINGS_HELP = """settings:
  search_url                 the SearXNG instance asked (its JSON API); unset: no discovery
  search_timeout_s           seconds the engine is given per query
  search_retries             a query answered 429 or 503 is asked again this many times
  licensed_sites             hosts never checked (also licensed: true in a site file)
  discover_queries_per_day   queries sent a UTC day, at most
  discover_queries_per_work  queries a work gets a run, at most
  discover_priority          works searched first; then new works, then the least recent
  discover_requery_days      days before a query is sent, a result URL fetched, again
  discover_max_pages         pages of a site crawled from the page found (and of a watched one)
  discover_cron              when the scheduler's discover job runs (tracker schedule)"""


def register(commands: argparse._SubParsersAction) -> None:
    parser = commands.add_parser(
        "discover",
        help="find pirate sites through the search engine (search_url) and the book sources; "
        "list and mark them",
        description="Search for the library's works (titles with the words pirate sites use, "
        "chapter titles, distinctive sentences) within the day's query budget, check every "
        "result page but those of licensed sites and those checked recently, and crawl the "
        "sites carrying copies from the page found. Every runnable book source (tracker "
        "sources import) searches its site for each work, and its chapters are checked, with "
        "or without a search engine. New sites are registered as candidates. "
        "Exit status: 0 done, 1 some queries failed (run again next time) or the crawl did "
        "not finish cleanly, 2 error (no search_url included).",
        epilog=SETTINGS_HELP,
    )
    parser.add_argument(
        "--work", action="append", metavar="NAME", help="only this work (repeatable)"
    )
    parser.add_argument("--json", action="store_true", help="print what the run did as JSON")
    parser.set_defaults(func=run)
    actions = parser.add_subparsers(dest="action", metavar="ACTION")
    sites = actions.add_parser("sites", help="the registered sites (reading only)")
    sites.add_argument("--state", help="only sites in this state")
    sites.add_argument("--json", action="store_true", help="print them as JSON")
    sites.set_defaults(func=run_sites)
    mark = actions.add_parser("mark", help="set a site's state")
    mark.add_argument("site", metavar="SITE", help="host or host:port, as listed")
    mark.add_argument("state", choices=("candidate", "watched", "ignored", "licensed"))
    mark.set_defaults(func=run_mark)


def run(args: argparse.Namespace, settings: Settings) -> int:
    from tracker.discovery.run import discover
    from tracker.servers.connect import connect

    runtime = connect(settings)
    try:
        summary = discover(runtime, settings, works=args.work)
    finally:
        runtime.close()
    sources = summary.book_sources
    if args.json:
        print(json.dumps(summary.to_dict(), ensure_ascii=False, default=str))
    else:
        if not summary.queries and not summary.errors and not sources.get("runs"):
            print(
                "no query was due: the library is empty (tracker ingest), every query ran "
                "within discover_requery_days, or today's discover_queries_per_day are spent"
            )
        for site in summary.new_sites:
            print(f"new site {site['site']}: {site['copies']} copies, found by {site['query']!r}")
        engine = (
            f"{summary.works} work(s), {summary.queries} queries ({summary.failed} failed), "
            f"{summary.results} result URLs: {summary.checked} checked, "
            f"{summary.skipped_licensed} licensed, {summary.skipped_checked} checked recently, "
            f"{summary.skipped_ignored} on ignored sites; {summary.fetched} pages fetched, "
            f"{summary.copies} copies on {len(summary.sites)} site(s), "
            f"{len(summary.new_sites)} new; {summary.budget_left} queries left today"
        )
        if not settings.search_url:  # the book sources alone
            engine = (
                f"no search engine (search_url): {summary.copies} copies on "
                f"{len(summary.sites)} site(s), {len(summary.new_sites)} new; "
                f"{summary.budget_left} queries left today"
            )
        print(engine)
        if sources.get("runs"):
            print(
                f"book sources: {sources['runs']} search(es) by {sources['sources']} source(s) "
                f"({sources['failed']} unread), {sources['books']} book(s) found, "
                f"{sources['read']} of {sources['chapters']} chapters read, "
                f"{sources['copies']} copies; see tracker sources list"
            )
    for error in summary.errors:
        print(f"tracker: {error}", file=sys.stderr)
    if summary.failed or summary.crawl_exit_code not in (None, 0):
        return 1
    return 0


def run_sites(args: argparse.Namespace, settings: Settings) -> int:
    from tracker.cli._output import print_listing
    from tracker.servers.connect import connect
    from tracker.stores.discovery import STATES, SiteRegistry

    if args.state and args.state not in STATES:
        print(f"tracker: error: --state must be one of {', '.join(STATES)}", file=sys.stderr)
        return 2
    runtime = connect(settings, redis=False)
    try:
        registry = SiteRegistry(runtime.read_db)
        docs = registry.with_state(args.state) if args.state else registry.all()
    finally:
        runtime.close()
    print_listing(
        docs,
        args.json,
        "no site has been discovered yet (tracker discover)",
        ["site", "state", "first seen", "copies", "pages", "found by"],
        lambda d: (
            d["_id"], d.get("state", ""), str(d.get("first_day", "")),
            d.get("copies", 0), d.get("pages", 0), d.get("found_by", ""),
        ),
        numeric=("copies", "pages"),
    )  # fmt: skip
    return 0


def run_mark(args: argparse.Namespace, settings: Settings) -> int:
    from tracker.servers.connect import connect
    from tracker.stores.discovery import SiteRegistry

    runtime = connect(settings, redis=False)
    try:
        doc = SiteRegistry(runtime.db).mark(args.site, args.state, "cli", datetime.now(UTC))
    finally:
        runtime.close()
    if doc is None:
        print(f"tracker: error: {args.site} is not a discovered site", file=sys.stderr)
        return 2
    print(f"{args.site}: {args.state}")
    return 0
