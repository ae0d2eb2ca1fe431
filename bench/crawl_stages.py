"""Where a crawl's time goes: the cost of each step of the spider and of each pipeline stage
per page, in CPU of the crawl process and of the servers, on the crawl-throughput bench's
pirate site (``--copy-share`` of its chapter pages copies, 1.0 by default: every page matched).

The spider's steps run as its ``parse`` runs them, one step over all the pages before the
next: decoding (:meth:`spiders.base.TrackerSpider.read_page`), the HTML parsed (once a page:
the selector every later step shares), the defended-site checks (challenge, render candidate,
a later part's first page, the next part's link), the links followed, and the item with its
evidence exchange and linked resources (stylesheets, Private-Use code points).

Each stage runs as the crawl runs it (the pipelines' own ``process_batch`` on batches of
``--batch`` pages, extraction through :func:`tracker.reading.extract.extract_normalized`), one stage
after the other over all the pages, so each is timed alone: wall time, CPU time of this
process (all its threads: the detector's jieba and I/O threads too), and CPU time of the
embedded SecantusDB and valkey (read from ``/proc``; Linux, embedded servers only). A second
pass of the first two stages over the stored pages is the unchanged re-crawl.

The sum says how many pages per second the machine's cores can carry: the crawl process's
work beside the downloads (Scrapy's own cost is the fetch-only crawl of
:mod:`bench.crawl_throughput`) and the servers' on other cores.

    python -m bench.crawl_stages --pages 300 [--copy-share 1.0]
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

from scrapy.http import HtmlResponse, Request
from scrapy.utils.test import get_crawler

from bench.crawl_throughput import build_pirate_site
from bench.output import process_cpu_s
from pipelines.boilerplate import SiteBoilerplatePipeline
from pipelines.evidence import EvidencePipeline
from pipelines.fingerprint import FingerprintPipeline
from pipelines.match import MatchPipeline
from pipelines.store import StorePipeline
from pipelines.unchanged import UnchangedPagePipeline
from tracker.batching import batches
from tracker.config import Settings
from tracker.crawling.context import TrackerContext
from tracker.crawling.items import PageItem
from tracker.enforcement.capture import exchange_of
from tracker.matching.library import MasterLibrary
from tracker.reading.extract import extract_normalized
from tracker.reading.locator import BodyLocators
from tracker.servers import services
from tracker.servers.runtime import Runtime


def server_cpu(settings: Settings, name: str) -> float:
    """CPU seconds used so far by the embedded server ``name`` (0 when unknown)."""
    state = services.read_state(settings, name)
    try:
        return process_cpu_s(state.pid)  # type: ignore[union-attr]
    except (AttributeError, OSError):
        return 0.0


def measure(settings: Settings, pages: int, work: Callable[[], object]) -> dict[str, float]:
    """Milliseconds per page of ``work``: wall, this process's CPU, the servers' CPU."""
    before = (
        time.perf_counter(),
        time.process_time(),
        *(server_cpu(settings, n) for n in ("mongo", "redis")),
    )
    work()
    after = (
        time.perf_counter(),
        time.process_time(),
        *(server_cpu(settings, n) for n in ("mongo", "redis")),
    )
    wall, crawl, mongo, redis_ = (
        1000 * (b - a) / pages for a, b in zip(before, after, strict=True)
    )
    return {"wall": wall, "crawl": crawl, "mongo": mongo, "redis": redis_}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pages", type=int, default=300)
    parser.add_argument(
        "--batch",
        type=int,
        default=16,
        help="pages per batch (the crawl's mean batch: 8-16 with TRACKER_BATCH_SIZE 16, 25-55 "
        "with 128 since h50)",
    )
    parser.add_argument("--copy-share", type=float, default=1.0)
    args = parser.parse_args(argv)

    with tempfile.TemporaryDirectory(prefix="tracker-bench-stages-") as tmp:
        base = Settings.load()
        if not (base.mongo_url and base.redis_url):
            base = replace(base, data_dir=Path(tmp) / "data")
        tag = f"bench_stages_{int(time.time())}"
        settings = replace(base, mongo_db=tag, redis_prefix=f"{tag}:")
        runtime = Runtime(settings)
        masters = build_pirate_site(Path(tmp) / "site", args.pages, args.copy_share)
        MasterLibrary.from_runtime(runtime).ingest(masters)
        files = sorted((Path(tmp) / "site" / "p").glob("*.html"), key=lambda p: int(p.stem))
        bodies = [(f"http://127.0.0.1/p/{p.stem}.html", p.read_bytes()) for p in files]
        from spiders.novel import NovelSpider

        crawler = get_crawler(NovelSpider, settings_dict={"TRACKER_BATCH_SIZE": args.batch})
        crawler.stats.open_spider()
        spider = NovelSpider.from_crawler(crawler, start_url="http://127.0.0.1/")
        crawler.spider = spider
        context = crawler._tracker_context = TrackerContext(runtime)
        responses = [
            HtmlResponse(
                url,
                body=body,
                headers={"Content-Type": "text/html"},
                request=Request(url, meta={"depth": 1}),
            )
            for url, body in bodies
        ]
        pages: list = []
        html: list[tuple[str, str]] = []

        def decode() -> None:
            for response in responses:
                page, _ = spider.read_page(response)
                pages.append(page)
                html.append((page.url, page.text))

        def parse() -> None:
            for page in pages:
                page.selector  # noqa: B018  (the one parse, cached on the response)

        def checks() -> None:
            for page in pages:
                spider.challenge(page)
                text, links = spider.text_counts(page)
                spider.render_candidate(page, text, links)
                spider.first_part(page)
                if spider.keeps(page):
                    spider.next_part(page)

        def links() -> None:
            for page in pages:
                list(spider.follow(page))

        def item() -> None:
            for page in pages:
                spider.page_item(page)

        spider_rows = {
            "spider: decoding": (decode, len(bodies)),
            "spider: HTML parsed (once)": (parse, len(bodies)),
            "spider: defended-site checks": (checks, len(bodies)),
            "spider: links followed": (links, len(bodies)),
            "spider: item, exchange, resources": (item, len(bodies)),
        }
        context.detector.check("预热")  # connections, tables and caches warm, as mid-crawl
        stages = [
            UnchangedPagePipeline(crawler),
            SiteBoilerplatePipeline(crawler),
            FingerprintPipeline(crawler),
            MatchPipeline(crawler),
            EvidencePipeline(crawler),
            StorePipeline(crawler),
        ]
        items: list[PageItem] = []

        locators = BodyLocators() if settings.extract_learned_body else None

        def extract() -> None:
            for (url, page), response in zip(html, pages, strict=True):
                read = extract_normalized(page, url, locators=locators)  # as the crawl's worker
                items.append(
                    PageItem(
                        url=url,
                        text=read.extracted.text,
                        title=read.extracted.title,
                        extractor=read.extracted.extractor,
                        normalized=read.normalized,
                        simhash_votes=read.votes,
                        simhash=read.simhash,
                        content_hash=read.content_hash,
                        status=200,
                        exchanges=[exchange_of(response)],  # the evidence of a match
                    )
                )

        def run(stage) -> Callable[[], None]:
            def batched() -> None:
                for batch in batches(items, args.batch):
                    for result in stage.process_batch(batch):  # a Tally, or (drop, Tally)
                        (result[1] if isinstance(result, tuple) else result).apply(crawler.stats)

            return batched

        rows = {name: measure(settings, n, work) for name, (work, n) in spider_rows.items()}
        rows["extract (worker process)"] = measure(settings, len(html), extract)
        for stage in stages:
            rows[stage.stage] = measure(settings, len(items), run(stage))
        again = UnchangedPagePipeline(crawler)
        rows["re-crawl: unchanged"] = measure(settings, len(items), run(again))
        assert crawler.stats.get_value("tracker/pages_unchanged") == len(items)
        matched = crawler.stats.get_value("tracker/pages_matched")

        runtime.mongo.drop_database(tag)
        for key in runtime.redis.scan_iter(match=f"{tag}:*"):
            runtime.redis.delete(key)
        runtime.close()
        if not (Settings.load().mongo_url and Settings.load().redis_url):
            services.stop(replace(base, mongo_url=None, redis_url=None))

    load = os.getloadavg()[0]
    print(
        f"{len(items)} pages ({matched} matched), batches of {args.batch}; load average {load:.1f}"
    )
    print("| stage | wall ms/page | crawl process CPU | SecantusDB CPU | valkey CPU |")
    print("|---|---:|---:|---:|---:|")
    columns = ("wall", "crawl", "mongo", "redis")
    full = dict.fromkeys(columns, 0.0)
    for name, row in rows.items():
        print(f"| {name} | " + " | ".join(f"{row[k]:.2f}" for k in columns) + " |")
        if not name.startswith("re-crawl"):
            full = {k: full[k] + row[k] for k in columns}
    print("| **all stages** | " + " | ".join(f"{full[k]:.2f}" for k in columns) + " |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
