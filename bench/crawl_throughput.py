"""End-to-end crawl throughput: fetch → extract → fingerprint → match → store, in pages per
second per ``scrapy crawl`` process, on a loopback site.

A site of ``--pages`` chapter pages (half copy chapters of the bundled master sample with ad
lines, half innocent text, ~3,000–9,000 characters each, chapter lists linking them) is served
on 127.0.0.1 and crawled by one ``scrapy crawl novel`` process per variant, each into a fresh
database, with AutoThrottle off and 16 requests in flight:

* ``fetch only``: no item pipelines (the baseline: Scrapy, the spider, decoding, link
  extraction);
* ``+ extract``: the extract pipeline only (in its worker process);
* ``full``: extract → unchanged check → site boilerplate → fingerprint → match → store, the
  server work in worker threads, batched; extraction in a worker process;
* ``full, extraction in process``: the same with ``TRACKER_EXTRACT_PROCESSES=0``;
* ``full, no rewrite detection``: the full crawl with ``rewrite_detection`` off (what finding
  rewritten copies costs a crawl);
* ``re-crawl unchanged``: the full crawl again over the stored pages (content-hash skip).

Pages/s is responses over the spider's open time (from the run record in ``crawl_runs``, so
process start-up is excluded). The pages' ``stored_at`` give two more figures: how long after
the spider opened the first page was stored, and the *steady* rate between the 10th and the
90th percentile of the pages stored, the pace of a long crawl. Ratios are against the
baseline measured in the same round; with ``--rounds N`` the variants run N times,
alternated, and the medians are reported (the machine is shared: the load average is printed
too). The mean batch of each stage comes from
the full crawl's stats. With ``--cpu``, the CPU milliseconds per page of every process during
the full crawl's open time: the crawl process, its extraction workers, the embedded servers,
and this process (the site's server thread), sampled from ``/proc`` every 50 ms.

With ``--site corpus`` the pages are instead distinct parts of the 220 chapters of 红楼梦 and
西游记 (all registered as masters) and innocent texts of the development corpus (see
:func:`build_corpus_site`): a larger index, and no line repeated across the site but its own.

    python -m bench.crawl_throughput --pages 300 --rounds 3 [--cpu] [--site corpus] [--out F]
"""

from __future__ import annotations

import argparse
import contextlib
import html
import json
import os
import random
import re
import statistics
import sys
import tempfile
import threading
import time
from collections.abc import Iterable
from dataclasses import replace
from pathlib import Path

from bench.corpus import load as load_corpus
from tracker.config import Settings
from tracker.crawling.crawl import run_crawl
from tracker.demo.site import AD_LINES, master_documents, serve
from tracker.matching.library import MasterLibrary
from tracker.model import MasterDocument
from tracker.servers import services
from tracker.servers.runtime import Runtime

PAGE = """<!DOCTYPE html><html><head><meta charset="utf-8"><title>{title}_笔趣阁</title></head>
<body><div class="nav"><a href="/">首页</a> <a href="/list/{list_no}.html">目录</a></div>
<h1>{title}</h1><div id="content">{body}</div>
<div class="bottem"><a href="/p/{prev}.html">上一章</a> <a href="/p/{next}.html">下一章</a></div>
<div class="footer">本站所有小说均来自网友上传 Copyright 笔趣阁</div></body></html>"""


def build_site(root: Path, pages: int, seed: int = 1) -> int:
    """Write the bench site of the demo's master sample; returns the number of pages that copy
    a master."""
    rng = random.Random(seed)
    masters = [d for d in master_documents() if "/" in d.doc_id]  # the book's chapters
    innocent_pool = [line for d in master_documents() for line in d.text.splitlines() if line]
    rng.shuffle(innocent_pool)
    texts = []
    for n in range(pages):
        if n % 2 == 0:
            master = masters[(n // 2) % len(masters)]
            title, lines = master.title, master.text.splitlines()
        else:  # innocent: lines of the sample reshuffled (no passage long enough to match)
            lines = rng.sample(innocent_pool, 40)
            lines = ["".join(rng.sample(line, len(line))) for line in lines]
            title = f"第{n}章 无关"
        texts.append((title, with_ad_line(lines, rng)))
    write_site(root, texts)
    return (pages + 1) // 2


def build_corpus_site(
    root: Path, pages: int, corpus_dir: Path | None = None, seed: int = 1
) -> tuple[int, list[MasterDocument]]:
    """Write a bench site from the development corpus (``../shared/corpus``, see
    :mod:`bench.corpus`). The even pages copy the chapters of 红楼梦 and 西游记 split into
    parts of about 3,000 characters, as pirate sites split chapters over pages (a last part
    under 1,000 joins the one before: a copy shorter than the detector's passage is not one
    to find; parts of 1,000–5,500 characters, 488 distinct ones in the first 500 copies). The
    odd ones are innocent texts of about the same length (People's Daily, 呐喊, 古文观止, none
    of them a master here). Each page has an ad line. Returns the number of copies and the
    masters to register (every chapter)."""
    corpus = load_corpus(corpus_dir)
    parts: list[tuple[str, list[str]]] = []
    for chapter in corpus.novel_chapters:
        split: list[list[str]] = [[]]
        for line in chapter.text.splitlines():
            if sum(map(len, split[-1])) >= 3000:
                split.append([])
            split[-1].append(line)
        if len(split) > 1 and sum(map(len, split[-1])) < 1000:
            tail = split.pop()  # no page of a chapter's last few lines
            split[-1] += tail
        parts += [(f"{chapter.title}（{k}）", lines) for k, lines in enumerate(split, start=1)]
    innocents: list[tuple[str, list[str]]] = []
    part, title = [], ""
    for innocent in corpus.innocents:
        title = title or innocent.title
        part += innocent.text.splitlines()
        if sum(map(len, part)) >= 3000:
            innocents.append((title, part))
            part, title = [], ""
    rng = random.Random(seed)
    texts = []
    for n in range(pages):
        pool = parts if n % 2 == 0 else innocents
        title, lines = pool[(n // 2) % len(pool)]
        texts.append((title, with_ad_line(lines, rng)))
    write_site(root, texts)
    return (pages + 1) // 2, corpus.novel_chapters


def with_ad_line(lines: list[str], rng: random.Random) -> list[str]:
    """``lines`` with one of the demo's ad lines after the third."""
    return [*lines[:3], rng.choice(AD_LINES), *lines[3:]]


def write_site(root: Path, texts: list[tuple[str, list[str]]]) -> None:
    """Chapter pages ``p/<n>.html`` of ``texts`` (title, lines), chapter lists of 50 linking
    them, an index and robots.txt."""
    pages = len(texts)
    (root / "p").mkdir(parents=True)
    (root / "list").mkdir()
    for n, (title, lines) in enumerate(texts):
        body = "<br /><br />".join(f"&nbsp;&nbsp;{html.escape(line)}" for line in lines if line)
        (root / "p" / f"{n}.html").write_text(
            PAGE.format(
                title=html.escape(title),
                body=body,
                list_no=n // 50,
                prev=max(n - 1, 0),
                next=min(n + 1, pages - 1),
            ),
            encoding="utf-8",
        )
    for list_no in range((pages + 49) // 50):
        links = "".join(
            f'<li><a href="/p/{n}.html">第{n}章</a></li>'
            for n in range(list_no * 50, min(pages, (list_no + 1) * 50))
        )
        (root / "list" / f"{list_no}.html").write_text(
            f'<html><head><meta charset="utf-8"></head><body><ul>{links}</ul></body></html>',
            encoding="utf-8",
        )
    lists = "".join(f'<a href="/list/{i}.html">目录{i}</a> ' for i in range((pages + 49) // 50))
    (root / "index.html").write_text(
        f'<html><head><meta charset="utf-8"></head><body>{lists}</body></html>', encoding="utf-8"
    )
    (root / "robots.txt").write_text("User-agent: *\nAllow: /\n", encoding="ascii")


VARIANTS = {
    "fetch only": {"ITEM_PIPELINES": "{}"},
    "+ extract": {"ITEM_PIPELINES": json.dumps({"pipelines.extract.ExtractPipeline": 100})},
    "full": {},
    "full, extraction in process": {"TRACKER_EXTRACT_PROCESSES": 0},
    "full, no rewrite detection": {},  # rewrite_detection off (issue 39: its cost, same run)
    "re-crawl unchanged": {},  # over the pages the full crawl stored
}
STAGES = ("extract", "unchanged", "boilerplate", "fingerprint", "match", "store")
COMMON = {
    "AUTOTHROTTLE_ENABLED": 0,
    "CONCURRENT_REQUESTS": 16,
    "CONCURRENT_REQUESTS_PER_DOMAIN": 16,
    "CLOSESPIDER_PAGECOUNT": 0,
    "DEPTH_LIMIT": 0,
    "LOG_LEVEL": "INFO",
}


CLOCK_TICKS = os.sysconf("SC_CLK_TCK")
PAGE_SIZE = os.sysconf("SC_PAGE_SIZE")


def process_stat(pid: int) -> tuple[int, float, int] | None:
    """Parent pid, CPU seconds used (user + system) and resident bytes of process ``pid``;
    None once it has gone."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return (
        int(fields[1]),
        (int(fields[11]) + int(fields[12])) / CLOCK_TICKS,
        int(fields[21]) * PAGE_SIZE,
    )


class CPUSampler:
    """CPU seconds of the processes a crawl runs on, sampled every ``interval`` seconds: this
    process (the site's server thread), its children (the crawl process), their descendants
    (extraction workers) and the embedded servers by name. A process that exited keeps its last
    reading. With ``pin``, the crawl process gets the last core to itself and every other
    process the first one (as if the servers and the site were on other machines, the
    extraction worker beside them)."""

    def __init__(self, servers: dict[str, int], interval: float = 0.05, pin: bool = False) -> None:
        self.servers = servers
        self.pin = pin
        self.cores = os.sched_getaffinity(0)
        self.interval = interval
        self.samples: list[tuple[float, dict[str, float]]] = []
        self._last: dict[int, tuple[str, float]] = {}
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> CPUSampler:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._done.set()
        self._thread.join()
        if self.pin:  # the processes that outlive the crawl get every core back
            for pid in (os.getpid(), *self.servers.values()):
                with contextlib.suppress(OSError):
                    os.sched_setaffinity(pid, self.cores)

    def _run(self) -> None:
        while not self._done.is_set():
            self.samples.append((time.time(), self._read()))
            time.sleep(self.interval)

    def _read(self) -> dict[str, float]:
        stats = {
            int(p): st for p in os.listdir("/proc") if p.isdigit() and (st := process_stat(int(p)))
        }
        children: dict[int, list[int]] = {}
        for pid, (parent, _, _) in stats.items():
            children.setdefault(parent, []).append(pid)
        roles = {pid: name for name, pid in self.servers.items()}
        roles[os.getpid()] = "bench and site"
        for crawl in children.get(os.getpid(), []):
            if crawl in roles:
                continue
            roles[crawl] = "crawl process"
            below = list(children.get(crawl, []))
            while below:
                pid = below.pop()
                roles[pid] = "extraction workers"
                below += children.get(pid, [])
        for pid, role in roles.items():
            if pid in stats:
                self._last[pid] = (role, stats[pid][1])
                if self.pin:
                    alone = {max(self.cores)} if role == "crawl process" else {min(self.cores)}
                    with contextlib.suppress(OSError):  # gone meanwhile
                        os.sched_setaffinity(pid, alone)
        totals: dict[str, float] = {}
        for role, cpu in self._last.values():
            totals[role] = totals.get(role, 0.0) + cpu
        return totals

    def between(self, start: float, end: float) -> dict[str, float]:
        """CPU seconds each role used from the last sample before ``start`` to the first after
        ``end`` (epoch seconds)."""
        before = [values for moment, values in self.samples if moment <= start]
        after = [values for moment, values in self.samples if moment >= end]
        first = before[-1] if before else {}
        last = after[0] if after else self.samples[-1][1]
        return {role: cpu - first.get(role, 0.0) for role, cpu in last.items()}


def clean_up(base: Settings, tag: str, stop_servers: bool = True) -> None:
    """Drop the bench's databases and keys (named from ``tag``); stop the embedded servers it
    started (``stop_servers``, when no server URLs are configured)."""
    cleanup = Runtime(replace(base, redis_prefix=f"{tag}:"))
    for name in cleanup.mongo.list_database_names():
        if name.startswith(tag):
            cleanup.mongo.drop_database(name)
    for key in cleanup.redis.scan_iter(match=f"{tag}:*"):
        cleanup.redis.delete(key)
    cleanup.close()
    configured = Settings.load()
    if stop_servers and not (configured.mongo_url and configured.redis_url):
        services.stop(replace(base, mongo_url=None, redis_url=None))


def crawl_once(
    name: str, settings: Settings, site_url: str, scrapy_settings: dict, log_dir: Path
) -> dict:
    """``scrapy crawl novel -a start_url=site_url`` in a subprocess; its run record
    (``crawl_runs``). A crawl that fails ends the bench, naming its log."""
    code = run_crawl(
        "novel",
        settings,
        arguments={"start_url": site_url},
        scrapy_settings=scrapy_settings,
        log_file=log_dir / f"{re.sub(r'[^A-Za-z0-9]+', '_', name)}.log",
        timeout=3600,
    )
    if code != 0:
        raise SystemExit(f"{name}: crawl failed (exit {code}), see {log_dir}")
    return Runtime(settings).db["crawl_runs"].find_one(sort=[("finished_at", -1)])


def run_variant(
    name: str, settings: Settings, site_url: str, extra: dict, log_dir: Path
) -> dict[str, float]:
    runtime = Runtime(settings)
    run = crawl_once(name, settings, site_url, {**COMMON, **extra}, log_dir)
    seconds = (run["finished_at"] - run["started_at"]).total_seconds()
    stats = run["stats"]
    # Odd pages are innocent: one matched is a false alarm.
    innocent_matched = sum(
        int(m[1]) % 2 == 1
        for url in runtime.db["matches"].distinct("url")
        if (m := re.search(r"/p/(\d+)\.html$", url))
    )
    stored = sorted(
        (doc["stored_at"] - run["started_at"]).total_seconds()
        for doc in runtime.db["pages"].find({"stored_at": {"$gte": run["started_at"]}})
    )
    return {
        "pages": run["pages"]["fetched"],
        "seconds": round(seconds, 2),
        "pages_per_second": round(run["pages"]["fetched"] / seconds, 1),
        "open": (run["started_at"].timestamp(), run["finished_at"].timestamp()),
        "stored": run["pages"]["stored"],
        "matched": run["pages"]["matched"],
        "innocent_matched": innocent_matched,
        "unchanged": run["pages"]["unchanged"],
        **steady_rate(stored),
        "mean_batch": {
            stage: round(stats[f"tracker__batches__{stage}__pages"] / stats[key], 1)
            for stage in STAGES
            if (key := f"tracker__batches__{stage}") in stats
        },
    }


def steady_rate(stored: list[float]) -> dict[str, float | None]:
    """From the seconds after the spider opened at which each page was stored (sorted): when
    the first was, and the rate between the 10th and the 90th percentile, the crawl's pace
    once started and before its tail (a short crawl's open time is mostly its start-up: the
    workers' imports, the first connections, the first pages through every stage)."""
    if len(stored) < 20:
        return {"first_stored_s": stored[0] if stored else None, "steady_pages_per_second": None}
    low, high = len(stored) // 10, len(stored) * 9 // 10
    return {
        "first_stored_s": round(stored[0], 2),
        "steady_pages_per_second": round((high - low) / (stored[high] - stored[low]), 1),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pages", type=int, default=300)
    parser.add_argument("--rounds", type=int, default=1, help="runs of every variant, alternated")
    parser.add_argument("--data-dir", type=Path, help="tracker data dir (default: a temporary one)")
    parser.add_argument("--cpu", action="store_true", help="CPU per page of each process (full)")
    parser.add_argument(
        "--site",
        choices=("demo", "corpus"),
        default="demo",
        help="pages of the demo's master sample, or distinct parts of the development corpus's "
        "chapters (../shared/corpus or $BENCH_CORPUS) with innocent texts",
    )
    parser.add_argument(
        "--pin", action="store_true", help="full crawl: its process alone on a core (2+ cores)"
    )
    parser.add_argument("--out", type=Path, help="also write the results (JSON) to this file")
    args = parser.parse_args(argv)

    with tempfile.TemporaryDirectory(prefix="tracker-bench-crawl-") as tmp:
        tmp_path = Path(tmp)
        base = Settings.load()
        if args.data_dir or not (base.mongo_url and base.redis_url):
            base = replace(base, data_dir=args.data_dir or tmp_path / "data")
        tag = f"bench_crawl_{int(time.time())}"
        if args.site == "corpus":
            copies, masters = build_corpus_site(tmp_path / "site", args.pages)
        else:
            copies, masters = build_site(tmp_path / "site", args.pages), master_documents()
        runs: dict[str, list[dict]] = {name: [] for name in VARIANTS}
        load = [os.getloadavg()[0]]
        with serve(tmp_path / "site") as site:
            for round_no in range(args.rounds):
                for name, extra in VARIANTS.items():
                    # Each crawl into a fresh database and index; the re-crawl into the full's.
                    own = "full" if name == "re-crawl unchanged" else name
                    db = f"{tag}_{round_no}_{list(VARIANTS).index(own)}"
                    settings = replace(base, mongo_db=db, redis_prefix=f"{tag}:{db}:")
                    if name == "full, no rewrite detection":
                        settings = replace(settings, rewrite_detection=False)
                    runtime = Runtime(settings)
                    if name.startswith("full") and not runtime.db["masters"].count_documents({}):
                        MasterLibrary.from_runtime(runtime).ingest(masters)
                    servers = {
                        name: state.pid
                        for name in ("mongo", "redis")
                        if not getattr(settings, f"{name}_url")
                        and (state := services.read_state(settings, name)) is not None
                    }
                    sampler = CPUSampler(servers, pin=args.pin)
                    # sampling /proc costs CPU too: only when asked, and for the full crawl
                    measured = (args.cpu or args.pin) and name == "full"
                    with sampler if measured else contextlib.nullcontext():
                        result = run_variant(name, settings, site.url, extra, tmp_path)
                    if args.cpu and name == "full":
                        used = sampler.between(*result["open"])
                        result["cpu_ms_per_page"] = {
                            role: round(1000 * cpu / result["pages"], 2)
                            for role, cpu in sorted(used.items())
                        }
                    runs[name].append(result)
                    print(f"{name:>28}: {result}", file=sys.stderr)
                load.append(os.getloadavg()[0])
        clean_up(base, tag, stop_servers=not args.data_dir)

    baselines = [r["pages_per_second"] for r in runs["fetch only"]]
    title = f"variant ({args.pages} chapter pages, {copies} copies, {args.site} site)"
    print(
        f"{args.rounds} round(s); load average (1 min) before and after each round: "
        + ", ".join(f"{x:.1f}" for x in load)
    )
    print(
        f"| {title} | pages | s | pages/s | vs fetch only | matched "
        "| first stored after s | steady pages/s |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    results = {}
    for name, rs in runs.items():
        ratios = [r["pages_per_second"] / b for r, b in zip(rs, baselines, strict=True)]
        r = results[name] = {
            "pages": rs[0]["pages"],
            "seconds": round(statistics.median(x["seconds"] for x in rs), 2),
            "pages_per_second": round(statistics.median(x["pages_per_second"] for x in rs), 1),
            "vs_fetch_only": round(statistics.median(ratios), 3),
            "matched": rs[0]["matched"],
            "first_stored_s": _median(x["first_stored_s"] for x in rs),
            "steady_pages_per_second": _median(x["steady_pages_per_second"] for x in rs),
            "runs": rs,
        }
        print(
            f"| {name} | {r['pages']} | {r['seconds']} | {r['pages_per_second']} | "
            f"{r['vs_fetch_only']:.2f}× | {r['matched']} | {r['first_stored_s'] or '–'} | "
            f"{r['steady_pages_per_second'] or '–'} |"
        )
    print(
        "innocent pages matched (full, each round): "
        + ", ".join(str(r["innocent_matched"]) for r in runs["full"])
    )
    batches = runs["full"][0]["mean_batch"]
    if batches:
        print("mean batch (full): " + ", ".join(f"{k} {v}" for k, v in batches.items()))
    if args.cpu:
        roles = sorted({role for r in runs["full"] for role in r["cpu_ms_per_page"]})
        print("| CPU ms a page, full crawl's open time | " + " | ".join(roles) + " | all |")
        print("|---|" + "---:|" * (len(roles) + 1))
        for k, r in enumerate(runs["full"], start=1):
            cpu = r["cpu_ms_per_page"]
            cells = [f"{cpu.get(role, 0.0):.2f}" for role in roles]
            print(
                f"| round {k} ({r['pages_per_second']} pages/s) | "
                + " | ".join(cells)
                + f" | {sum(cpu.values()):.2f} |"
            )
    summary = {
        "pages": args.pages,
        "site": args.site,
        "copies": copies,
        "load": load,
        "results": results,
    }
    print(json.dumps(summary))
    if args.out:
        args.out.write_text(json.dumps(summary, indent=1) + "\n", encoding="utf-8")
    return 0


def _median(values: Iterable[float | None]) -> float | None:
    known = [v for v in values if v is not None]
    return round(statistics.median(known), 2) if known else None


if __name__ == "__main__":
    sys.exit(main())
