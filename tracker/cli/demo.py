"""``tracker demo``: the whole loop on a fresh machine, on embedded servers.

Ingests the bundled public-domain master sample, serves a bundled pirate-style site on
127.0.0.1, crawls it with the ``novel`` spider in a ``scrapy crawl`` subprocess, checks that every
planted copy was found and no innocent page flagged, and writes the day's report.

Where: always in a database and Redis key prefix of its own (:func:`apart`: ``tracker_demo``,
``tracker-demo:``), fresh install or not, so nothing the demo writes is ever matched, reported
or rematched with the user's library, nor the other way round. ``tracker serve --demo`` and
``tracker report --demo`` look at it; ``tracker demo --clear`` drops it. A demo of an earlier
version wrote into the user's own database on a fresh install: ``--clear`` also removes that,
while the library holds nothing else (:mod:`tracker.stores.demo` tells).
"""

from __future__ import annotations

import argparse
import tempfile
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING

from tracker.config import Settings
from tracker.servers.services import mask_password

if TYPE_CHECKING:
    from tracker.matching.library import MasterLibrary
    from tracker.servers.runtime import Runtime

SITE_HOST = "127.0.0.1"  # where tracker.demo serves its pirate site (the site its pages are of)


def register(commands: argparse._SubParsersAction) -> None:
    parser = commands.add_parser(
        "demo",
        help="ingest a sample library, crawl a local pirate site, and report what was copied",
        description="The whole loop on this machine: ingest the bundled public-domain sample "
        "library, serve a pirate-style site on 127.0.0.1, crawl it with `scrapy crawl novel`, "
        "check that every planted copy was found and no innocent page flagged, and write the "
        "day's report to <data_dir>/reports/demo-report-DATE.html (its own name: `tracker "
        "report` writes report-DATE.html). It always uses a database and Redis keys of its own "
        "(<mongo_db>_demo, <redis_prefix>-demo:*; tracker_demo and tracker-demo:* by default), "
        "never your library: `tracker serve --demo` and `tracker report --demo` show its "
        "findings. Exit status: 0 every copy found, 1 a copy missed or an innocent page "
        "flagged, 2 error.",
    )
    parser.add_argument(
        "--keep-db",
        action="store_true",
        help="keep the previous demo's data instead of starting from a clean one",
    )
    parser.add_argument(
        "--clear",
        action="store_true",
        help="remove the demo's database and Redis keys (and an earlier version's demo data "
        "from your library, when it holds nothing else) and exit",
    )
    parser.set_defaults(func=run)


def apart(settings: Settings) -> Settings:
    """The database and key prefix of a demo kept apart from the user's library."""
    prefix = settings.redis_prefix.rstrip(":") + "-demo:"
    return replace(settings, mongo_db=f"{settings.mongo_db}_demo", redis_prefix=prefix)


def run(args: argparse.Namespace, settings: Settings) -> int:
    from tracker.crawling.crawl import run_crawl
    from tracker.demo.site import build_site, master_paths, serve
    from tracker.matching.library import MasterLibrary
    from tracker.reading.readers import read_documents
    from tracker.reports.build import build_report, summary_line
    from tracker.reports.render import to_html
    from tracker.servers.runtime import Runtime
    from tracker.stores.pages import PageStore

    if args.clear:
        return _clear(settings)
    documents = [doc for path in master_paths() for doc in read_documents(path)]
    settings = apart(settings)
    runtime = Runtime(settings)
    print(
        f"servers: MongoDB {mask_password(runtime.mongo_url)}  "
        f"Redis {mask_password(runtime.redis_url)}"
    )
    fresh = not args.keep_db
    print(
        f"the demo uses its own database {settings.mongo_db} and Redis keys "
        f"{settings.redis_prefix}*, never your library"
        + (" (the previous demo's data replaced)" if fresh else "")
    )
    look_at = (
        "to look at the demo's data: `tracker serve --demo` (your console users sign in), "
        "`tracker report --demo`; `tracker demo --clear` removes it"
    )
    if fresh:
        runtime.mongo.drop_database(settings.mongo_db)
    # A fresh demo library: the index of the last demo is cleared, not verified against the
    # database just emptied (that would rebuild it, with a warning, only to clear it).
    library = MasterLibrary.from_runtime(runtime, verify=not fresh)
    if fresh:
        _clear_redis(runtime, library)
    summary = library.ingest(documents)
    print(
        f"master library: {summary.added + summary.replaced} documents from "
        f"{len(summary.works)} works"
    )

    with tempfile.TemporaryDirectory(prefix="tracker-demo-site-") as tmp:
        manifest = build_site(Path(tmp))
        with serve(manifest.root) as site:
            print(f"crawling the local pirate site {site.url}")
            log_file = Path(settings.data_dir) / "logs" / "demo-crawl.log"
            log_file.parent.mkdir(parents=True, exist_ok=True)
            code = run_crawl(
                "novel", settings, arguments={"start_url": site.url}, log_file=log_file
            )
            if code != 0:
                print(f"the crawl failed (exit code {code}); see {log_file}")
                print(look_at)
                return 1
            found = {
                url: sorted(doc_ids)
                for url, doc_ids in PageStore(runtime.db).matched_doc_ids().items()
            }
            ok = _verify(manifest, site.url, found)

    report = build_report(runtime.db, datetime.now(UTC).date())
    out = Path(settings.data_dir) / "reports" / f"demo-report-{report['date']}.html"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(to_html(report), encoding="utf-8")
    print(summary_line(report))
    for page in report["pages"]:
        print(
            f"  {page['url']}  copies {', '.join(page['doc_ids'])}  "
            f"score {page['score']:.2f}  coverage {page['coverage']:.0%}"
        )
    print(f"HTML report: {out}")
    print(
        "demo: every planted copy found, no innocent page flagged"
        if ok
        else "demo: FAILED, see above"
    )
    print(look_at)
    return 0 if ok else 1


def _clear_redis(runtime: Runtime, library: MasterLibrary) -> None:
    """Empty what the demo keeps in Redis: the master index, the stored pages' index, the
    mirror groups' centres and what is known of the local site's lines."""
    from tracker.index.page_index import PageIndex
    from tracker.reports.clustering import PageClusterer
    from tracker.text.site_boilerplate import SiteBoilerplate

    library.index.clear()
    PageIndex.from_runtime(runtime).clear()
    PageClusterer.from_runtime(runtime).index.clear()
    SiteBoilerplate(runtime.redis, runtime.settings.redis_prefix).forget(SITE_HOST)


def _clear(settings: Settings) -> int:
    """``tracker demo --clear``: the demo's database and Redis keys dropped; in the user's own
    database, what an earlier version's demo wrote there, only while it holds nothing else
    (its masters kept for ``master_trash_days`` all the same)."""
    from tracker.matching.library import MasterLibrary
    from tracker.servers.runtime import Runtime
    from tracker.stores.demo import DemoStore, Holds
    from tracker.stores.master_trash import MasterTrash
    from tracker.stores.masters import MasterStore

    demo = apart(settings)
    runtime = Runtime(demo)
    try:
        held = MasterStore(runtime.db).count_stored()
        runtime.mongo.drop_database(demo.mongo_db)
        _clear_redis(runtime, MasterLibrary.from_runtime(runtime, verify=False))
    finally:
        runtime.close()
    print(
        f"removed the demo's database {demo.mongo_db} ({held} sample masters; `tracker demo` "
        f"makes it again) and its Redis keys {demo.redis_prefix}*"
    )
    runtime = Runtime(settings)
    try:
        store = DemoStore(runtime.db)
        if store.holds() is Holds.DEMO:
            masters = MasterStore(runtime.db)
            kept = MasterTrash(runtime.db, settings.master_trash_days).keep(
                masters.texts(store.marked_masters()).values(), "demo --clear"
            )
            store.clear()
            _clear_redis(runtime, MasterLibrary.from_runtime(runtime, verify=False))
            print(
                f"removed an earlier demo's data from your library (database "
                f"{settings.mongo_db}): {kept} sample masters, kept for "
                f"{settings.master_trash_days} days (`tracker index restore-deleted --all`)"
            )
        else:
            print(f"your library (database {settings.mongo_db}) was not touched")
    finally:
        runtime.close()
    return 0


def _verify(manifest, base_url: str, found: dict[str, list[str]]) -> bool:
    ok = True
    for path, doc_ids in manifest.expected.items():
        got = found.get(base_url + path)
        if got is None:
            print(f"  missed: {path} was not crawled")
            ok = False
        elif sorted(doc_ids) != got:
            print(f"  wrong: {path} matched {got}, expected {sorted(doc_ids)}")
            ok = False
    for path in manifest.innocent:
        got = found.get(base_url + path)
        if got:
            print(f"  false positive: {path} matched {got}")
            ok = False
    return ok
