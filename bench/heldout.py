"""Held-out defended sites (tests/sites_heldout.py): the techniques of issue 25 in templates,
encodings, pagination schemes, hiding rules, script loaders, font formats, ban answers, walls
and decoys the crawler was not written against. Each site is served on 127.0.0.1 and crawled
by one ``scrapy crawl novel -a start_url=…`` process into a fresh database with its masters;
per site: recall (pages carrying exactly their masters), the lowest coverage of a found
master, wrong pages (a master on a page that does not copy it: the parts of a split chapter
stored as pages of their own), innocent pages flagged, walled URLs missing from the report's
``unread`` (and unread URLs not planned), and the crawl's seconds.

    python -m bench.heldout [SITE-SUBSTRING …] [--out results.json]
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path

from bench.crawl_throughput import clean_up, crawl_once
from tests.sites_heldout import SITES, measure
from tracker.config import Settings
from tracker.matching.library import MasterLibrary
from tracker.servers.runtime import Runtime

CRAWL = {
    "AUTOTHROTTLE_ENABLED": 0,
    "RETRY_TIMES": 1,
    "RETRY_BACKOFF_BASE": 0.1,
    "DOWNLOAD_TIMEOUT": 10,
    "LOG_LEVEL": "INFO",
}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("sites", nargs="*", help="only the sites whose name has one of these")
    parser.add_argument("--out", type=Path, help="also write the results (JSON) to this file")
    args = parser.parse_args(argv)
    results: dict[str, dict] = {}
    with tempfile.TemporaryDirectory(prefix="tracker-bench-heldout-") as tmp:
        tmp_path = Path(tmp)
        base = Settings.load()
        if not (base.mongo_url and base.redis_url):
            base = replace(base, data_dir=tmp_path / "data")
        tag = f"bench_heldout_{int(time.time())}"
        for k, (name, build) in enumerate(SITES.items()):
            if args.sites and not any(part in name for part in args.sites):
                continue
            settings = replace(base, mongo_db=f"{tag}_{k}", redis_prefix=f"{tag}:{k}:")
            runtime = Runtime(settings)
            plan = build()
            MasterLibrary.from_runtime(runtime).ingest(plan.masters)
            start = time.monotonic()
            with plan.site:
                crawl_once(name, settings, plan.site.url, CRAWL, tmp_path)
            result = measure(plan, runtime.db, plan.site.url)
            result["seconds"] = round(time.monotonic() - start, 1)
            results[name] = result
            print(f"{name}: {result}", file=sys.stderr)
        clean_up(base, tag)
    print(
        "| site | recall | min coverage | wrong pages | innocent flagged "
        "| walled not unread | unread not walled | s |"
    )
    print("|---|---:|---:|---|---|---|---|---:|")
    for name, r in results.items():
        coverage = "–" if r["min_coverage"] is None else f"{r['min_coverage']:.2f}"
        print(
            f"| {name} | {r['recall']:.2f} | {coverage} | {r['wrong']} | "
            f"{r['innocent_flagged']} | {r['unread_missing']} | {r['unread_extra']} | "
            f"{r['seconds']} |"
        )
    if args.out:
        args.out.write_text(json.dumps(results, indent=1) + "\n", encoding="utf-8")
    failing = [
        name
        for name, r in results.items()
        if r["recall"] < 0.95 or r["wrong"] or r["innocent_flagged"] or r["unread_missing"]
    ]
    print(f"\nsites failing issue 25's bar: {len(failing)} of {len(results)} {failing}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
