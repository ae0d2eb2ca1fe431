"""The web console at 100,000 stored pages: how fast the dashboard and the lists answer.

Fills a fresh database through the real stores (``MatchStore.record_many`` and
``PageStore.save_many``, bulk writes): ``--pages`` crawled pages on 40 sites over ``--days``
days (each page carrying one match of one of 300 chapters of 50 works, with its evidence
passage, and the day's ``page_days`` record), and the stored report figures of every past day
(``ReportStore``, as the scheduler's report job leaves them). Then times the console in process
(FastAPI's TestClient, HTTP Basic, ``console_cache_s`` = 60):

* the **baseline**, in the same run: ``find_one`` of one page by ``_id`` (an indexed read);
* building today's report (what the first request of the day waits for, then kept);
* the dashboard, the pages list (first and last page, a site filter), ``/api/pages``, a page's
  evidence and ``/api/page``: the median of repeated requests, and its ratio to the baseline.

    python -m bench.console                   # 100,000 pages (~10 min on SecantusDB)
    python -m bench.console --pages 10000     # quick
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
import warnings
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path

from tracker.batching import batches
from tracker.config import Settings
from tracker.reports.build import build_report
from tracker.servers import services
from tracker.servers.runtime import Runtime
from tracker.stores.pages import MatchStore, PageRecord, PageStore
from tracker.stores.reports import ReportStore

SITES, WORKS, CHAPTERS = 40, 50, 300
BATCH = 2000  # pages per PageStore.save_many
MATCH_BATCH = 100  # pages per MatchStore.record_many: SecantusDB slows down on larger bulk
# writes of upserts (2,000 pages a call: ~20 ms a page; 100: ~5)
REPEAT = 15
USER = ("bench", "bench-password")
PASSAGE = "萧炎望着那测验魔石碑，面无表情，三十年河东，三十年河西，莫欺少年穷。" * 4


def url_of(i: int) -> str:
    return f"https://pirate{i % SITES}.example/book/{i // SITES}/{i}.html"


def fill(runtime: Runtime, pages: int, days: int, now: datetime, workers: int = 4) -> float:
    """Store the pages, their matches and page_days, a day per thread (SecantusDB syncs every
    commit: writers side by side keep the disk busier); returns the seconds it took."""
    PageStore(runtime.db).ensure_indexes()
    MatchStore(runtime.db).ensure_indexes()
    started = time.perf_counter()
    per_day = -(-pages // days)
    done = 0

    def one_day(day: int) -> None:
        nonlocal done
        ids = range(day * per_day, min(pages, (day + 1) * per_day))
        fill_day(runtime, ids, now - timedelta(days=day))
        done += len(ids)
        print(f"  stored {done:,} pages", file=sys.stderr, end="\r")

    with ThreadPoolExecutor(workers) as pool:
        list(pool.map(one_day, range(days)))
    print(file=sys.stderr)
    return time.perf_counter() - started


def fill_day(runtime: Runtime, ids: range, when: datetime) -> None:
    """Pages ``ids`` crawled at ``when``, through the stores as a crawl writes them."""
    page_store, match_store = PageStore(runtime.db), MatchStore(runtime.db)
    for chunk in batches(ids, BATCH):
        found, records = {}, []
        for i in chunk:
            chapter = i % CHAPTERS
            match = {
                "doc_id": f"work{chapter % WORKS}/{chapter:04d}",
                "work": f"work{chapter % WORKS}",
                "title": f"第{chapter}章",
                "score": round(0.5 + (i % 50) / 100, 2),
                "coverage": round(0.2 + (i % 80) / 100, 2),
                "method": "shingle+dna",
                "spans": [
                    {
                        "page_start": 40,
                        "page_end": 40 + len(PASSAGE),
                        "master_start": 0,
                        "master_end": len(PASSAGE),
                        "text": PASSAGE,
                    }
                ],
            }
            found[url_of(i)] = [match]
            records.append(
                PageRecord(
                    url=url_of(i),
                    text=f"第{chapter}章 " + PASSAGE * 3,
                    title=f"第{chapter}章 盗版",
                    matched=[match["doc_id"]],
                )
            )
        for part in batches(found.items(), MATCH_BATCH):  # matches first, then the pages
            match_store.record_many(dict(part), when)
        page_store.save_many(records, when)


def store_reports(runtime: Runtime, days: int, now: datetime) -> float:
    """The stored figures of every past day (the report job's), oldest first."""
    started = time.perf_counter()
    store = ReportStore(runtime.db)
    for day in range(days - 1, 0, -1):
        store.save(build_report(runtime.db, (now - timedelta(days=day)).date()))
        print(f"  report {day} days ago stored", file=sys.stderr, end="\r")
    print(file=sys.stderr)
    return time.perf_counter() - started


def median_ms(call, repeat: int = REPEAT) -> float:
    times = []
    for _ in range(repeat):
        started = time.perf_counter()
        call()
        times.append(time.perf_counter() - started)
    return statistics.median(times) * 1000


def measure(settings: Settings, runtime: Runtime, pages: int) -> dict:
    from fastapi.testclient import TestClient

    from tracker.console import create_app
    from tracker.console.users import Users

    Users(runtime.db).add(USER[0], "viewer", USER[1], replace=True)
    app = create_app(replace(settings, console_cache_s=60), runtime)
    today = datetime.now(UTC).date()
    some_url = url_of(pages // 2)
    first_today = url_of(0)
    results: dict = {}
    results["baseline_find_one_ms"] = median_ms(
        lambda: runtime.db["pages"].find_one({"_id": some_url}, {"title": 1}), 50
    )
    started = time.perf_counter()
    build_report(runtime.db, today)
    results["report_build_s"] = time.perf_counter() - started
    with TestClient(app) as client:

        def get(path: str, **params) -> None:
            answer = client.get(path, params=params, auth=USER)
            assert answer.status_code == 200, (path, answer.status_code, answer.text[:200])

        started = time.perf_counter()
        get("/")  # the first request of the day, waiting for the build started at start
        results["dashboard_first_ms"] = (time.perf_counter() - started) * 1000
        last_page = -(-app.state.console.reports.get(today).report["summary"]["pages"] // 50)
        routes = {
            "dashboard": ("/", {}),
            "pages list, page 1": ("/pages", {}),
            "pages list, last page": ("/pages", {"page": last_page}),
            "pages list, one site": ("/pages", {"site": "pirate7.example"}),
            "api/pages, 100": ("/api/pages", {}),
            "api/pages, score >= 0.9": ("/api/pages", {"min_score": 0.9}),
            "evidence page": ("/page", {"url": first_today}),
            "api/page": ("/api/page", {"url": first_today}),
            "sites": ("/sites", {}),
            "works": ("/works", {}),
        }
        timings = {}
        for name, (path, params) in routes.items():
            timings[name] = median_ms(lambda p=path, q=params: get(p, **q))
        results["routes_ms"] = timings
        # A kept report past its age is served at once while it is built again.
        app.state.console.reports.max_age = 0.001
        results["dashboard_stale_ms"] = median_ms(lambda: get("/"), 3)
        app.state.console.reports.max_age = 60
        app.state.console.reports.wait_idle(120)
    results["pages_today"] = app.state.console.reports.get(today).report["summary"]["pages"]
    return results


def render(r: dict) -> str:
    base = r["baseline_find_one_ms"]
    lines = [
        f"Console at {r['pages']:,} stored pages ({r['days']} days, {r['pages_today']:,} "
        f"pages today; SecantusDB), {r['date']}:",
        "",
        "| request | median ms | × baseline |",
        "|---|---:|---:|",
        f"| baseline: `find_one` of a page by `_id` | {base:.2f} | 1 |",
    ]
    for name, ms in r["routes_ms"].items():
        lines.append(f"| {name} | {ms:.1f} | {ms / base:.0f} |")
    lines += [
        f"| dashboard while its kept report is rebuilt | {r['dashboard_stale_ms']:.1f} | "
        f"{r['dashboard_stale_ms'] / base:.0f} |",
        "",
        f"Building today's report (what the first request of a day waits for; the console "
        f"builds today's at start and keeps each day's for `console_cache_s`): "
        f"{r['report_build_s']:.2f} s. First dashboard request after start: "
        f"{r['dashboard_first_ms']:.0f} ms. Filling the database: {r['fill_s']:.0f} s, "
        f"storing {r['days'] - 1} past reports: {r['reports_s']:.0f} s.",
    ]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--pages", type=int, default=100_000)
    parser.add_argument("--days", type=int, default=30)
    parser.add_argument("--out", default="bench/results/console")
    args = parser.parse_args(argv)
    warnings.filterwarnings("ignore", message="Using `httpx`")
    with tempfile.TemporaryDirectory(prefix="bench-console-") as folder:
        settings = Settings(data_dir=Path(folder), mongo_db="bench", redis_prefix="bench:")
        runtime = Runtime(settings)
        settings = replace(settings, mongo_url=runtime.mongo_url, redis_url=runtime.redis_url)
        try:
            now = datetime.now(UTC)
            fill_s = fill(runtime, args.pages, args.days, now)
            reports_s = store_reports(runtime, args.days, now)
            results = measure(settings, runtime, args.pages)
        finally:
            runtime.close()
            services.stop(replace(settings, mongo_url=None, redis_url=None))
    results.update(
        pages=args.pages,
        days=args.days,
        fill_s=fill_s,
        reports_s=reports_s,
        date=datetime.now(UTC).date().isoformat(),
    )
    text = render(results)
    print(text)
    Path(f"{args.out}.json").write_text(json.dumps(results, indent=2) + "\n")
    Path(f"{args.out}.md").write_text(text + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
