"""Reading defended pages: recall per technique on the project's own pirate sites.

Each site of :mod:`tests.sites_markup` (chapters split over three pages, CSS-hidden junk and
pseudo-element characters, 12-15 % of the characters drawn by a web font that is served, not
served or not a font, forum threads, chapters over pages written by scripts with hidden junk:
read through Chromium) is served on 127.0.0.1 and crawled by one ``scrapy crawl
novel -a start_url=…`` process into a fresh database with its masters, AutoThrottle off. Per
site:

* **recall**: the (page, master) pairs the site's plan expects that were reported on that page
  (a split chapter counts only when found on its first page, read whole);
* **masters anywhere**: the masters found on any page of the site (what a crawl that reads
  the parts as pages of their own still gets);
* **min coverage**: the lowest coverage of an expected master on its page;
* **wrong ids** (a master reported on a page that does not copy it; pages outside the plan,
  such as the parts of a chapter stored as pages of their own, are counted apart as
  **unplanned pages**) and **innocent flagged** (pages copying nothing, reported);
* **PUA decoded**: the share of the Private-Use characters on the pages that the web font
  decoded; **pages/s**: responses over the spider's open time (small sites: start-up weighs).

With ``--cpu``, the extraction worker's CPU per page (``extract_normalized``, best of three
passes, this process) on the throughput bench's plain chapter pages, on the 73 real saved pages
of ``tests/fixtures/pages`` and on each site's pages: what reading as a reader sees costs.

    python -m bench.anticrawl [--cpu] [--out results.json]
"""

from __future__ import annotations

import argparse
import html
import json
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

from bench.crawl_throughput import clean_up, crawl_once
from tests.sites import SitePlan
from tests.sites_markup import (
    font_available,
    forum_site,
    hidden_site,
    rendered_split_site,
    score,
    split_site,
    webfont_site,
)
from tracker.config import Settings
from tracker.matching.library import MasterLibrary
from tracker.servers.runtime import Runtime

MAX_PARTS = 10
CRAWL = {
    "AUTOTHROTTLE_ENABLED": 0,
    "RETRY_TIMES": 1,
    "RETRY_BACKOFF_BASE": 0.1,
    "DOWNLOAD_TIMEOUT": 10,
    "TRACKER_MAX_PARTS": MAX_PARTS,
    "LOG_LEVEL": "INFO",
}

SITES: dict[str, tuple[Callable[[], SitePlan], bool]] = {  # name: (builder, needs the fonts)
    "split chapters (3 pages; loop, endless chain, next chapter)": (
        lambda: split_site(MAX_PARTS),
        False,
    ),
    "CSS-hidden junk 20 % + pseudo-element characters": (hidden_site, False),
    "web font 12 %, served (WOFF2)": (lambda: webfont_site("font", 0.12), True),
    "web font 15 %, served (WOFF2)": (lambda: webfont_site("font", 0.15, "字体书乙"), True),
    "web font 12 %, not served (404)": (lambda: webfont_site("missing", 0.12), True),
    "web font 15 %, not a font (an HTML error page)": (
        lambda: webfont_site("garbage", 0.15),
        True,
    ),
    "web font 20 %, not served (404)": (lambda: webfont_site("missing", 0.20, "字体书丙"), True),
    "web font 25 %, not served (404)": (lambda: webfont_site("missing", 0.25, "字体书丁"), True),
    "forum threads (Discuz! GBK, 2005 BBS GB2312)": (forum_site, False),
    "script-written chapters over 2 pages, 20 % CSS-hidden junk (rendered)": (
        rendered_split_site,
        False,
    ),
}


def crawl_site(name: str, plan: SitePlan, settings: Settings, log_dir: Path) -> dict:
    runtime = Runtime(settings)
    MasterLibrary.from_runtime(runtime).ingest(plan.masters)
    with plan.site:
        run = crawl_once(name, settings, plan.site.url, CRAWL, log_dir)
    seconds = (run["finished_at"] - run["started_at"]).total_seconds()
    result = score(plan, runtime.db, plan.site.url)
    base = plan.site.url.rstrip("/")
    stored = [doc for doc in runtime.db["pages"].find() if doc["_id"].startswith(base + "/")]
    anywhere = {d for doc in stored for d in doc.get("matched_doc_ids") or ()}
    unplanned = [doc for doc in stored if doc["_id"][len(base) :] not in plan.stored]
    private = sum((doc.get("reading") or {}).get("pua", 0) for doc in stored)
    decoded = sum((doc.get("reading") or {}).get("pua_decoded", 0) for doc in stored)
    return {
        "pages_fetched": run["pages"]["fetched"],
        "pages_stored": len(stored),
        "masters": len(plan.masters),
        "recall": round(result.recall, 3),
        "masters_anywhere": len(anywhere & {m.doc_id for m in plan.masters}),
        "min_coverage": round(min(result.coverages), 3) if result.coverages else None,
        "wrong_ids": result.wrong,
        "innocent_flagged": result.innocent_flagged,
        "unplanned_pages": len(unplanned),
        "unplanned_flagged": sum(bool(doc.get("matched_doc_ids")) for doc in unplanned),
        "pua_decoded": round(decoded / private, 3) if private else None,
        "pages_per_second": round(run["pages"]["fetched"] / seconds, 1),
        "stats": {
            key: value
            for key, value in sorted(run["stats"].items())
            if key.startswith(("tracker__parts", "tracker__reading", "tracker__errors"))
        },
    }


def extraction_cpu(pages: list[str], passes: int = 3) -> float:
    """CPU milliseconds a page of ``extract_normalized``, best of ``passes`` passes."""
    from tracker.reading.extract import extract_normalized

    for page in pages[:3]:
        extract_normalized(page)
    best = float("inf")
    for _ in range(passes):
        start = time.process_time()
        for page in pages:
            extract_normalized(page)
        best = min(best, (time.process_time() - start) / len(pages) * 1000)
    return round(best, 2)


def cpu_table() -> list[tuple[str, int, float]]:
    from bench.crawl_throughput import PAGE
    from bench.extraction import load, page_bytes
    from spiders.base import decode_page
    from tracker.demo.site import master_documents

    chapters = [d for d in master_documents() if "/" in d.doc_id][:40]
    plain = [
        PAGE.format(
            title=d.title,
            list_no=1,
            body="<br>".join(html.escape(line) for line in d.text.splitlines()),
            prev=1,
            next=2,
        )
        for d in chapters
    ]
    real = [decode_page(page_bytes(e), "text/html").html for e in load()]
    rows = [
        ("plain chapter pages (bench.crawl_throughput's)", len(plain), extraction_cpu(plain)),
        ("real saved pages (tests/fixtures/pages)", len(real), extraction_cpu(real)),
    ]
    for name, (build, needs_font) in SITES.items():
        if needs_font and not font_available():
            continue
        plan = build()
        plan.site.close()
        own = [
            decode_page(page.body, page.content_type).html
            for path, page in plan.site.pages.items()
            if page.content_type.startswith("text/html") and path in plan.stored
        ]
        rows.append((name, len(own), extraction_cpu(own)))
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cpu", action="store_true", help="extraction CPU per page too")
    parser.add_argument("--out", type=Path, help="also write the results (JSON) to this file")
    args = parser.parse_args(argv)
    results: dict[str, dict] = {}
    with tempfile.TemporaryDirectory(prefix="tracker-bench-anticrawl-") as tmp:
        tmp_path = Path(tmp)
        base = Settings.load()
        if not (base.mongo_url and base.redis_url):
            base = replace(base, data_dir=tmp_path / "data")
        tag = f"bench_anticrawl_{int(time.time())}"
        for k, (name, (build, needs_font)) in enumerate(SITES.items()):
            if needs_font and not font_available():
                print(f"{name}: skipped, no Noto CJK font to build the web font", file=sys.stderr)
                continue
            settings = replace(base, mongo_db=f"{tag}_{k}", redis_prefix=f"{tag}:{k}:")
            results[name] = crawl_site(name, build(), settings, tmp_path)
            print(f"{name}: {results[name]}", file=sys.stderr)
        clean_up(base, tag)

    print(
        "| site (technique) | pages fetched | stored | recall | masters anywhere | min coverage "
        "| wrong ids | innocent flagged | unplanned pages (flagged) | PUA decoded | pages/s |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for name, r in results.items():
        coverage = "–" if r["min_coverage"] is None else f"{r['min_coverage']:.2f}"
        decoded = "–" if r["pua_decoded"] is None else f"{r['pua_decoded']:.2f}"
        print(
            f"| {name} | {r['pages_fetched']} | {r['pages_stored']} | {r['recall']:.2f} | "
            f"{r['masters_anywhere']}/{r['masters']} | {coverage} | {r['wrong_ids']} | "
            f"{r['innocent_flagged']} | {r['unplanned_pages']} ({r.get('unplanned_flagged', 0)}) | "
            f"{decoded} | "
            f"{r['pages_per_second']} |"
        )
    summary: dict = {"sites": results, "load": os.getloadavg()[0]}
    if args.cpu:
        rows = cpu_table()
        print("\n| extraction CPU, pages of | pages | ms a page |\n|---|---:|---:|")
        for name, count, ms in rows:
            print(f"| {name} | {count} | {ms} |")
        summary["extraction_cpu_ms"] = {name: ms for name, _, ms in rows}
    recalls = [r["recall"] for r in results.values()]
    if recalls:
        print(f"\nrecall: lowest {min(recalls):.2f}, median {statistics.median(recalls):.2f}")
    if args.out:
        args.out.write_text(json.dumps(summary, indent=1, default=str) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
