"""End-to-end crawl throughput: fetch → extract → fingerprint → match → store, in pages per
second of ``scrapy crawl novel`` against a bare Scrapy spider on the same loopback site, in the
same run.

The default site looks like a pirate site (issue 40, :func:`build_pirate_site`): ``--pages``
chapter pages of ~3,000 characters, ``--copy-share`` of them (1.0 by default) each a copy of a
master of its own, with 2–4 ad lines, an ad above the text, a stylesheet and a script linked
from every page, and chapter lists of 50. It is served on 127.0.0.1 and crawled by one process
per variant, each into a fresh database, with AutoThrottle off and 16 requests in flight
(``--variants``, the first the baseline; by default the bare spider and the full crawl):

* ``bare scrapy``: :mod:`bench.bare_spider`, Scrapy's defaults outside the project: it follows
  the same links and keeps nothing (the framework's own speed);
* ``fetch only``: the tracker's spider with no item pipelines;
* ``+ extract``: the extract pipeline only (in its worker process);
* ``full``: the crawl as a user runs it (extract → unchanged → boilerplate → fingerprint →
  match → evidence → store);
* ``full, extraction in process``: the same with ``TRACKER_EXTRACT_PROCESSES=0``;
* ``full, no rewrite detection``: the full crawl with ``rewrite_detection`` off (what finding
  rewritten copies costs a crawl);
* ``re-crawl unchanged``: the full crawl again over the stored pages (content-hash skip).

The headline is pages/s from process start to exit over the baseline's in the same round
(``--rounds N`` alternates the variants N times; medians; the load average is printed, as the
machine may be shared). Pages/s over the spider's open time and the *steady* rate between the
10th and 90th percentile of the pages' ``stored_at`` are printed too. With ``--cpu``, the CPU
milliseconds per page of every process from start to exit (the crawl process, its extraction
workers, the embedded servers, and this process: the site's server thread), sampled from
``/proc`` every 50 ms, and for the full crawl per matched page.

``--site demo`` is the earlier bench site (half the pages copies of the demo's sample, half
innocent), ``--site corpus`` distinct parts of 红楼梦 and 西游记 with innocent texts of the
development corpus (see :func:`build_corpus_site`).

    python -m bench.crawl_throughput [--pages 1000] [--copy-share 1.0] [--rounds N] [--cpu]
        [--variants "bare scrapy,full"] [--site pirate|demo|corpus] [--out F]
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
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import replace
from pathlib import Path

from bench.corpus import load as load_corpus
from tracker.config import Settings
from tracker.crawling.crawl import run_crawl
from tracker.crawling.outcomes import describe
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


PIRATE_PAGE = """<!DOCTYPE html><html><head><meta charset="utf-8"><title>{title}_笔趣阁</title>
<link rel="stylesheet" href="/css/style.css"><script src="/js/common.js"></script></head>
<body><div class="nav"><a href="/">首页</a> <a href="/list/{list_no}.html">目录</a>
<a href="/list/{list_no}.html#top">章节列表</a></div>
<h1>{title}</h1><div class="ad">{top_ad}</div><div id="content">{body}</div>
<div class="bottem"><a href="/p/{prev}.html">上一章</a> <a href="/list/{list_no}.html">目录</a>
<a href="/p/{next}.html">下一章</a></div>
<div class="footer">本站所有小说均来自网友上传 Copyright 笔趣阁</div></body></html>"""

STYLESHEET = """body{font-family:sans-serif;background:#f6f1e7}
#content{font-size:18px;line-height:2}
.ad{color:#c00}.nav a,.bottem a{margin:0 1em}.footer{font-size:12px;color:#999}"""


def build_pirate_site(
    root: Path, pages: int, copy_share: float = 1.0, seed: int = 1
) -> list[MasterDocument]:
    """Write a site as a pirate site looks (issue 40): ``pages`` chapter pages of about 3,000
    characters, the first ``copy_share`` of every ten a copy of a master of its own (each page
    a different master), the others original prose; 2–4 of the demo's ad lines among the
    paragraphs of each page, an ad above the text, one stylesheet and one script linked from
    every page, chapter lists of 50 linking them. The prose is the tests' jieba-dictionary
    generator (:func:`tests.texts.prose`), not the detector's tables. Returns the masters
    copied (to register)."""
    from tests.texts import prose

    rng = random.Random(seed)
    masters, texts = [], []
    for n in range(pages):
        lines = prose(seed * 1_000_003 + n, 3000).splitlines()
        if (n % 10) < round(10 * copy_share):
            masters.append(
                MasterDocument(f"盗版/{n:06d}", "盗版", f"第{n + 1}章", "\n".join(lines))
            )
            title = f"第{n + 1}章"
        else:
            title = f"第{n + 1}章 原创"
        for _ in range(rng.randint(2, 4)):
            lines.insert(rng.randint(1, len(lines)), rng.choice(AD_LINES))
        texts.append((title, lines))
    write_site(root, texts, template=PIRATE_PAGE)
    (root / "css").mkdir()
    (root / "css" / "style.css").write_text(STYLESHEET, encoding="utf-8")
    (root / "js").mkdir()
    (root / "js" / "common.js").write_text("var site='笔趣阁';\n", encoding="utf-8")
    return masters


def with_ad_line(lines: list[str], rng: random.Random) -> list[str]:
    """``lines`` with one of the demo's ad lines after the third."""
    return [*lines[:3], rng.choice(AD_LINES), *lines[3:]]


def write_site(root: Path, texts: list[tuple[str, list[str]]], template: str = PAGE) -> None:
    """Chapter pages ``p/<n>.html`` of ``texts`` (title, lines), chapter lists of 50 linking
    them, an index and robots.txt."""
    pages = len(texts)
    (root / "p").mkdir(parents=True)
    (root / "list").mkdir()
    for n, (title, lines) in enumerate(texts):
        body = "<br /><br />".join(f"&nbsp;&nbsp;{html.escape(line)}" for line in lines if line)
        (root / "p" / f"{n}.html").write_text(
            template.format(
                title=html.escape(title),
                top_ad=html.escape(AD_LINES[n % len(AD_LINES)]),
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


BARE = "bare scrapy"
VARIANTS = {
    BARE: {},  # bench/bare_spider.py, outside the project: Scrapy alone
    "fetch only": {"ITEM_PIPELINES": "{}"},
    "+ extract": {"ITEM_PIPELINES": json.dumps({"pipelines.extract.ExtractPipeline": 100})},
    "full": {},
    "full, extraction in process": {"TRACKER_EXTRACT_PROCESSES": 0},
    "full, no rewrite detection": {},  # rewrite_detection off (issue 39: its cost, same run)
    "re-crawl unchanged": {},  # over the pages the full crawl stored
}
DEFAULT_VARIANTS = (BARE, "full")
STAGES = ("extract", "unchanged", "boilerplate", "fingerprint", "match", "store")
COMMON = {
    "AUTOTHROTTLE_ENABLED": 0,
    "CONCURRENT_REQUESTS": 16,
    "CONCURRENT_REQUESTS_PER_DOMAIN": 16,
    "CLOSESPIDER_PAGECOUNT": 0,
    "DEPTH_LIMIT": 0,
    "LOG_LEVEL": "INFO",
}


BARE_SPIDER = Path(__file__).with_name("bare_spider.py")
CLOCK_TICKS = os.sysconf("SC_CLK_TCK")
RESCAN = 10  # CPU readings between two walks of the process tree (new processes found)
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
        self._tree: dict[int, list[int]] = {}
        self._readings = 0
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> CPUSampler:
        # the readings as the run starts: a process running before it (this one, the
        # servers) counts only what it uses from now on, not its CPU since it started
        self.samples.append((time.time(), self._read()))
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._done.set()
        self._thread.join()
        self._readings = 0  # the last reading walks the tree again
        self.samples.append((time.time(), self._read()))
        if self.pin:  # the processes that outlive the crawl get every core back
            for pid in (os.getpid(), *self.servers.values()):
                with contextlib.suppress(OSError):
                    os.sched_setaffinity(pid, self.cores)

    def _run(self) -> None:
        while not self._done.is_set():
            self.samples.append((time.time(), self._read()))
            time.sleep(self.interval)

    def _read(self) -> dict[str, float]:
        # This process's tree and the servers only, the tree walked again every RESCAN
        # readings: listing all of /proc every 50 ms (~5 ms of CPU a reading on a machine of
        # 80 processes), or every thread's children of the crawl's processes, cost this
        # process ~9 % of a core, taken from the crawl's two.
        if self._readings % RESCAN == 0:
            self._tree = _children_tree(os.getpid())
        self._readings += 1
        children = self._tree
        pids = {os.getpid(), *self.servers.values(), *(p for c in children.values() for p in c)}
        stats = {pid: st for pid in pids if (st := process_stat(pid))}
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
        first = before[-1] if before else self.samples[0][1]
        last = after[0] if after else self.samples[-1][1]
        return {role: cpu - first.get(role, 0.0) for role, cpu in last.items()}


def _children_tree(root: int) -> dict[int, list[int]]:
    """The children of ``root`` and of each of its descendants (``/proc/PID/task/*/children``),
    by parent."""
    tree: dict[int, list[int]] = {}
    todo = [root]
    while todo:
        pid = todo.pop()
        found: list[int] = []
        with contextlib.suppress(OSError):
            for task in os.listdir(f"/proc/{pid}/task"):
                with contextlib.suppress(OSError):
                    found += map(int, Path(f"/proc/{pid}/task/{task}/children").read_text().split())
        tree[pid] = found
        todo += found
    return tree


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


def run_bare(site_url: str, log_dir: Path) -> dict[str, float]:
    """The bare spider (:mod:`bench.bare_spider`) with the crawl's concurrency, from a
    directory outside the project (no ``scrapy.cfg``: Scrapy's defaults): its pages and the
    wall seconds from process start to exit."""
    log = log_dir / "bare_scrapy.log"
    settings = {k: v for k, v in COMMON.items() if k not in ("DEPTH_LIMIT",)}
    command = [sys.executable, "-m", "scrapy", "runspider", str(BARE_SPIDER), "-a"]
    command += [f"start_url={site_url}", "-s", f"LOG_FILE={log}", "-s", "ROBOTSTXT_OBEY=1"]
    for key, value in settings.items():
        command += ["-s", f"{key}={value}"]
    env = {k: v for k, v in os.environ.items() if not k.startswith("SCRAPY_")}
    start = time.perf_counter()
    code = subprocess.run(command, cwd=log_dir, env=env, check=False).returncode
    wall = time.perf_counter() - start
    exited_at = time.time()
    if code != 0:
        raise SystemExit(f"{BARE}: failed (exit {code}), see {log}")
    found = re.search(r"'response_received_count': (\d+)", log.read_text(encoding="utf-8"))
    pages = int(found[1]) if found else 0
    return {
        "pages": pages,
        "process_seconds": round(wall, 2),
        "process_pages_per_second": round(pages / wall, 1),
        "exited_at": exited_at,
    }


def run_variant(
    name: str,
    settings: Settings,
    site_url: str,
    extra: dict,
    log_dir: Path,
    innocent: Callable[[int], bool] = lambda n: n % 2 == 1,
) -> dict[str, float]:
    """One crawl of ``name``; ``innocent``: whether chapter page ``n`` copies nothing."""
    runtime = Runtime(settings)
    start = time.perf_counter()
    run = crawl_once(name, settings, site_url, {**COMMON, **extra}, log_dir)
    wall = time.perf_counter() - start
    exited_at = time.time()
    seconds = (run["finished_at"] - run["started_at"]).total_seconds()
    stats = run["stats"]
    # An innocent page matched is a false alarm.
    innocent_matched = sum(
        innocent(int(m[1]))
        for url in runtime.db["matches"].distinct("url")
        if (m := re.search(r"/p/(\d+)\.html$", url))
    )
    stored = sorted(
        (doc["stored_at"] - run["started_at"]).total_seconds()
        for doc in runtime.db["pages"].find({"stored_at": {"$gte": run["started_at"]}})
    )
    return {
        "pages": run["pages"]["fetched"],
        "process_seconds": round(wall, 2),
        "process_pages_per_second": round(run["pages"]["fetched"] / wall, 1),
        "seconds": round(seconds, 2),
        "pages_per_second": round(run["pages"]["fetched"] / seconds, 1),
        "open": (run["started_at"].timestamp(), run["finished_at"].timestamp()),
        "stored": run["pages"]["stored"],
        "matched": run["pages"]["matched"],
        "innocent_matched": innocent_matched,
        "unchanged": run["pages"]["unchanged"],
        "exited_at": exited_at,  # the CPU is counted to here (not the bench's queries after)
        "urls": run.get("urls"),  # how each URL fetched ended (tracker.crawling.outcomes)
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
    parser.add_argument("--pages", type=int, default=1000)
    parser.add_argument(
        "--copy-share",
        type=float,
        default=1.0,
        help="pirate site: the share of chapter pages that copy a master (each its own)",
    )
    parser.add_argument(
        "--variants",
        default=",".join(DEFAULT_VARIANTS),
        help=f"comma-separated, of: {', '.join(VARIANTS)} (the first is the baseline)",
    )
    parser.add_argument("--rounds", type=int, default=1, help="runs of every variant, alternated")
    parser.add_argument("--data-dir", type=Path, help="tracker data dir (default: a temporary one)")
    parser.add_argument("--cpu", action="store_true", help="CPU per page of each process")
    parser.add_argument(
        "--site",
        choices=("pirate", "demo", "corpus"),
        default="pirate",
        help="a pirate site (--copy-share), pages of the demo's master sample, or distinct "
        "parts of the development corpus's chapters (../shared/corpus or $BENCH_CORPUS)",
    )
    parser.add_argument(
        "--pin", action="store_true", help="full crawl: its process alone on a core (2+ cores)"
    )
    parser.add_argument("--out", type=Path, help="also write the results (JSON) to this file")
    args = parser.parse_args(argv)
    # a comma then a space belongs to a name ("full, no rewrite detection")
    chosen = [v.strip() for v in re.split(r",(?! )", args.variants) if v.strip()]
    if unknown := set(chosen) - set(VARIANTS):
        parser.error(f"unknown variants: {', '.join(sorted(unknown))}")
    if (
        "re-crawl unchanged" in chosen
        and "full" not in chosen[: chosen.index("re-crawl unchanged")]
    ):
        parser.error("re-crawl unchanged re-crawls the full crawl's pages: name full before it")

    with tempfile.TemporaryDirectory(prefix="tracker-bench-crawl-") as tmp:
        tmp_path = Path(tmp)
        base = Settings.load()
        if args.data_dir or not (base.mongo_url and base.redis_url):
            base = replace(base, data_dir=args.data_dir or tmp_path / "data")
        tag = f"bench_crawl_{int(time.time())}"
        innocent = lambda n: n % 2 == 1  # noqa: E731  (odd pages, demo and corpus sites)
        if args.site == "corpus":
            copies, masters = build_corpus_site(tmp_path / "site", args.pages)
        elif args.site == "demo":
            copies, masters = build_site(tmp_path / "site", args.pages), master_documents()
        else:
            masters = build_pirate_site(tmp_path / "site", args.pages, args.copy_share)
            copies = len(masters)
            copied = {int(m.doc_id.rsplit("/", 1)[1]) for m in masters}
            innocent = lambda n: n not in copied  # noqa: E731
        runs: dict[str, list[dict]] = {name: [] for name in chosen}
        load = [os.getloadavg()[0]]
        with serve(tmp_path / "site") as site:
            for round_no in range(args.rounds):
                for name in chosen:
                    extra = VARIANTS[name]
                    servers: dict[str, int] = {}
                    if name != BARE:
                        # Each crawl into a fresh database and index; the re-crawl into the full's.
                        own = "full" if name == "re-crawl unchanged" else name
                        db = f"{tag}_{round_no}_{list(VARIANTS).index(own)}"
                        settings = replace(base, mongo_db=db, redis_prefix=f"{tag}:{db}:")
                        if name == "full, no rewrite detection":
                            settings = replace(settings, rewrite_detection=False)
                        runtime = Runtime(settings)
                        if name.startswith("full") and not runtime.db["masters"].count_documents(
                            {}
                        ):
                            MasterLibrary.from_runtime(runtime).ingest(masters)
                        servers = {
                            name: state.pid
                            for name in ("mongo", "redis")
                            if not getattr(settings, f"{name}_url")
                            and (state := services.read_state(settings, name)) is not None
                        }
                    sampler = CPUSampler(servers, pin=args.pin and name == "full")
                    # sampling /proc costs CPU too: only when asked
                    measured = args.cpu and name in (BARE, "full")
                    began = time.time()
                    with sampler if measured else contextlib.nullcontext():
                        if name == BARE:
                            result = run_bare(site.url, tmp_path)
                        else:
                            result = run_variant(
                                name, settings, site.url, extra, tmp_path, innocent
                            )
                    exited_at = result.pop("exited_at")
                    if measured:
                        used = sampler.between(began, exited_at)
                        per = result.get("matched") or result["pages"]
                        result["cpu_ms_per_page"] = {
                            role: round(1000 * cpu / result["pages"], 2)
                            for role, cpu in sorted(used.items())
                        }
                        result["cpu_ms_per_matched_page"] = round(
                            1000 * sum(used.values()) / per, 2
                        )
                    runs[name].append(result)
                    print(f"{name:>28}: {result}", file=sys.stderr)
                load.append(os.getloadavg()[0])
        clean_up(base, tag, stop_servers=not args.data_dir)

    baseline = chosen[0]
    baselines = [r["process_pages_per_second"] for r in runs[baseline]]
    title = f"variant ({args.pages} chapter pages, {copies} copies, {args.site} site)"
    print(
        f"{args.rounds} round(s); load average (1 min) before and after each round: "
        + ", ".join(f"{x:.1f}" for x in load)
    )
    print(
        f"| {title} | pages | s, process start to exit | pages/s | vs {baseline} | matched "
        "| pages/s, spider open | steady pages/s |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    results = {}
    for name, rs in runs.items():
        ratios = [r["process_pages_per_second"] / b for r, b in zip(rs, baselines, strict=True)]
        r = results[name] = {
            "pages": rs[0]["pages"],
            "process_seconds": round(statistics.median(x["process_seconds"] for x in rs), 2),
            "process_pages_per_second": round(
                statistics.median(x["process_pages_per_second"] for x in rs), 1
            ),
            f"vs_{baseline.replace(' ', '_')}": round(statistics.median(ratios), 3),
            "matched": rs[0].get("matched"),
            "pages_per_second": _median(x.get("pages_per_second") for x in rs),
            "steady_pages_per_second": _median(x.get("steady_pages_per_second") for x in rs),
            "runs": rs,
        }
        matched = r["matched"] if r["matched"] is not None else "–"
        print(
            f"| {name} | {r['pages']} | {r['process_seconds']} | {r['process_pages_per_second']} "
            f"| {statistics.median(ratios):.2f}× | {matched} "
            f"| {r['pages_per_second'] or '–'} | {r['steady_pages_per_second'] or '–'} |"
        )
    if "full" in runs:
        print(
            "innocent pages matched (full, each round): "
            + ", ".join(str(r["innocent_matched"]) for r in runs["full"])
        )
        for r in runs["full"]:
            if r.get("urls"):
                print("URLs (full): " + describe(r["urls"]))
        batches = runs["full"][0]["mean_batch"]
        if batches:
            print("mean batch (full): " + ", ".join(f"{k} {v}" for k, v in batches.items()))
    if args.cpu:
        for name in (n for n in (BARE, "full") if n in runs):
            roles = sorted({role for r in runs[name] for role in r["cpu_ms_per_page"]})
            print(
                f"| CPU ms a page, {name}, process start to exit | "
                + " | ".join(roles)
                + " | all | per matched page |"
            )
            print("|---|" + "---:|" * (len(roles) + 2))
            for k, r in enumerate(runs[name], start=1):
                cpu = r["cpu_ms_per_page"]
                cells = [f"{cpu.get(role, 0.0):.2f}" for role in roles]
                print(
                    f"| round {k} ({r['process_pages_per_second']} pages/s) | "
                    + " | ".join(cells)
                    + f" | {sum(cpu.values()):.2f} | {r['cpu_ms_per_matched_page']:.2f} |"
                )
    summary = {
        "pages": args.pages,
        "site": args.site,
        "copy_share": args.copy_share if args.site == "pirate" else None,
        "copies": copies,
        "baseline": baseline,
        "load": load,
        "results": results,
    }
    print(json.dumps(summary, ensure_ascii=False))
    if args.out:
        args.out.write_text(
            json.dumps(summary, indent=1, ensure_ascii=False) + "\n", encoding="utf-8"
        )
    return 0


def _median(values: Iterable[float | None]) -> float | None:
    known = [v for v in values if v is not None]
    return round(statistics.median(known), 2) if known else None


if __name__ == "__main__":
    sys.exit(main())
