"""``tracker demo``: the whole loop on a fresh machine, on embedded servers.

Ingests the bundled public-domain master sample, serves a bundled pirate-style site on
127.0.0.1, crawls it with the ``novel`` spider in a ``scrapy crawl`` subprocess, checks that every
planted copy was found and no innocent page flagged, and writes the day's report.
"""

from __future__ import annotations

import argparse
import tempfile
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path

from tracker.config import Settings
from tracker.servers.services import mask_password


def register(commands: argparse._SubParsersAction) -> None:
    parser = commands.add_parser(
        "demo",
        help="ingest a sample library, crawl a local pirate site, and report what was copied",
        description="The whole loop on this machine: ingest the bundled public-domain sample "
        "library, serve a pirate-style site on 127.0.0.1, crawl it with `scrapy crawl novel`, "
        "check that every planted copy was found and no innocent page flagged, and write the "
        "day's report to <data_dir>/reports/demo-report-DATE.html (its own name: `tracker "
        "report` writes report-DATE.html). It uses its own database (tracker_demo) and Redis "
        "keys (tracker-demo:*). Exit status: 0 every copy found, 1 a copy missed or an "
        "innocent page flagged, 2 error.",
    )
    parser.add_argument(
        "--keep-db",
        action="store_true",
        help="keep the demo database instead of starting from a clean one",
    )
    parser.set_defaults(func=run)


def run(args: argparse.Namespace, settings: Settings) -> int:
    from tracker.crawling.crawl import run_crawl
    from tracker.demo.site import build_site, master_paths, serve
    from tracker.matching.library import MasterLibrary
    from tracker.reading.readers import read_documents
    from tracker.reports.build import build_report, summary_line
    from tracker.reports.render import to_html
    from tracker.servers.runtime import Runtime

    # The demo has a database and key prefix of its own, so it never mixes with real data.
    settings = replace(settings, mongo_db="tracker_demo", redis_prefix="tracker-demo:")
    runtime = Runtime(settings)
    print(
        f"servers: MongoDB {mask_password(runtime.mongo_url)}  "
        f"Redis {mask_password(runtime.redis_url)}"
    )
    print(
        f"the demo uses database {settings.mongo_db} and Redis keys {settings.redis_prefix}*, "
        "apart from your own library"
    )
    if not args.keep_db:
        runtime.mongo.drop_database(settings.mongo_db)
    # A fresh demo library: the index of the last demo is cleared, not verified against the
    # database just dropped (that would rebuild it, with a warning, only to clear it).
    library = MasterLibrary.from_runtime(runtime, verify=args.keep_db)
    if not args.keep_db:
        library.index.clear()
    documents = [doc for path in master_paths() for doc in read_documents(path)]
    summary = library.ingest(documents)
    print(
        f"master library: {summary.added + summary.replaced} documents from "
        f"{len(summary.works)} works"
    )
    look = f"TRACKER_MONGO_DB={settings.mongo_db} TRACKER_REDIS_PREFIX={settings.redis_prefix}"
    look_at = (
        f"to look at the demo's data: {look} tracker index list  (or report, check…); "
        "without them, tracker commands use your own library"
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
                doc["_id"]: sorted(doc.get("matched_doc_ids", []))
                for doc in runtime.db["pages"].find({}, {"matched_doc_ids": 1})
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
