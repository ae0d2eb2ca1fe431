"""Capacity: what the servers hold and the cores do per chapter, check and page, measured at
scale, for ``deploy/CAPACITY.md``.

A fresh library on the embedded servers (or ``--mongo-url``/``--redis-url``) is filled with
synthetic chapters (:mod:`bench.scale`: 3,000 characters of shuffled corpus sentences each,
as distinct from each other as a large library's chapters), and at each checkpoint (10,000
then ``--masters``; ``--full``: 10,000, 100,000 and 1,000,000) this measures:

* **Redis bytes per chapter**: ``INFO memory`` ``used_memory`` over the ingest, divided by the
  chapters (and the resident size, ``used_memory_rss``, for fragmentation);
* **MongoDB bytes per chapter**: ``collStats`` of ``masters`` (the documents' BSON size,
  their indexes as the server reports them) and, for the embedded server, the growth of its
  data directory on disk;
* **ingest rate**: chapters per second through :meth:`MasterLibrary.ingest` (making the
  synthetic text is timed apart and left out);
* **checks per second per core**: the in-process detector on batches of 16 chapter-sized
  texts, as ``tracker check --jsonl`` batches them (half copies of stored chapters with ad
  lines and punctuation noise, half synthetic chapters not in the library); the CPU seconds of
  this process and, for embedded servers, of the Redis and MongoDB processes (``/proc``), per
  check. The copies found are counted as a sanity check.

At the last checkpoint, one ``scrapy crawl novel`` process crawls the site of
:mod:`bench.crawl_throughput` (``--pages`` chapter pages, half copies of the bundled sample,
whose masters are in the library too) with every pipeline on:

* **pages per second per crawl worker** (the spider's open time, from its ``crawl_runs``
  record) and the CPU seconds per page of the crawl process and the servers;
* **MongoDB bytes per page**: ``collStats`` of ``pages``, ``matches``, ``page_days`` and
  ``cluster_members`` per page stored, and the data directory's growth;
* **Redis bytes per page**: the page-anchor index ``tracker rematch`` reads.

    python -m bench.capacity                      # 100,000 masters (~15 min on 2 cores)
    python -m bench.capacity --full               # 1,000,000 masters (hours; 10+ GB of disk)
    python -m bench.capacity --masters 20000      # quick
    python -m bench.capacity --bucket-bits 19     # the index with 2^19 buckets a table

Writes ``bench/results/capacity.json`` and ``.md`` (``capacity-full.*`` with ``--full``).
"""

from __future__ import annotations

import argparse
import contextlib
import itertools
import json
import os
import random
import resource
import signal
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path

from bson.codec_options import CodecOptions
from bson.raw_bson import RawBSONDocument

from bench import corpus as bench_corpus
from bench.crawl_throughput import build_site, process_stat, run_variant
from bench.disguises import noise, with_ads
from bench.output import write_result
from bench.run import machine
from bench.scale import sentence_pool, synthetic_chapters
from tracker.batching import batches
from tracker.config import Settings
from tracker.demo.site import master_documents, serve
from tracker.matching.library import MasterLibrary
from tracker.model import MasterDocument
from tracker.servers import services
from tracker.servers.runtime import Runtime

DB, PREFIX = "capacity", "capacity:"
BATCH = 16  # texts per detector call, as `tracker check --jsonl` batches them
PAGE_COLLECTIONS = ("pages", "matches", "page_days", "cluster_members")


# ------------------------------------------------------------------------------ measuring


def server_processes(settings: Settings) -> dict[str, tuple[float, int]]:
    """CPU seconds (user + system) used so far and resident bytes of the embedded servers;
    {} when the servers are configured ones (their processes are elsewhere)."""
    found = {}
    for name in ("redis", "mongo"):
        if getattr(settings, f"{name}_url"):
            continue
        state = services.read_state(settings, name)
        stat = process_stat(state.pid) if state is not None else None
        if stat is not None:
            found[name] = stat[1:]
    return found


def disk_bytes(path: Path) -> int:
    """Bytes a directory takes on disk (allocated blocks, as ``du`` counts them)."""
    total = 0
    for root, _, files in os.walk(path):
        for name in files:
            with contextlib.suppress(OSError):  # removed meanwhile
                total += os.lstat(os.path.join(root, name)).st_blocks * 512
    return total


class Meter:
    """Snapshots of what the servers hold and the processes used."""

    def __init__(self, runtime: Runtime, settings: Settings) -> None:
        self.runtime = runtime
        self.settings = settings
        self.mongo_dir = services.services_dir(settings) / "mongo"

    def snapshot(self) -> dict:
        memory = self.runtime.redis.info("memory")
        usage = resource.getrusage(resource.RUSAGE_SELF)
        children = resource.getrusage(resource.RUSAGE_CHILDREN)
        servers = server_processes(self.settings)
        return {
            "wall": time.perf_counter(),
            "cpu": usage.ru_utime + usage.ru_stime,
            "children_cpu": children.ru_utime + children.ru_stime,
            "servers_cpu": {name: cpu for name, (cpu, _) in servers.items()},
            "servers_rss": {name: rss for name, (_, rss) in servers.items()},
            "redis_used": int(memory["used_memory"]),
            "redis_rss": int(memory["used_memory_rss"]),
            "mongo_disk": None if self.settings.mongo_url else disk_bytes(self.mongo_dir),
        }

    def collections(self, names: tuple[str, ...]) -> dict[str, dict]:
        """``collStats`` figures as the server reports them: document count, BSON size,
        storage size, index size."""
        stats = {}
        for name in names:
            raw = self.runtime.db.command("collStats", name)
            stats[name] = {
                key: int(raw.get(key, 0) or 0)
                for key in ("count", "size", "storageSize", "totalIndexSize")
            }
        return stats


def compressed(collection, ids: list | None = None, block: int = 32 * 1024) -> dict[str, float]:
    """How small a MongoDB (WiredTiger) data file would hold these documents: the documents
    ``ids`` (None: the whole collection) as raw BSON, packed into 32 KiB blocks (WiredTiger's
    largest leaf page) and each block compressed with snappy (its default block compressor)
    and zstd; the ratios compressed / BSON. An estimate of the disk a real MongoDB needs, which
    SecantusDB's own storage (no compression, its log) does not tell.

    A sample is read by ``_id`` equality: SecantusDB answers a ``find().limit(n)`` by reading
    every document first, which at 1,000,000 chapters (10 GB of BSON) ran it out of memory."""
    import cramjam  # bench extra

    raw = collection.with_options(codec_options=CodecOptions(document_class=RawBSONDocument))
    blocks, current = [], b""
    for doc in raw.find({} if ids is None else {"_id": {"$in": ids}}):
        current += doc.raw
        if len(current) >= block:
            blocks.append(current)
            current = b""
    if current:
        blocks.append(current)
    size = sum(len(b) for b in blocks) or 1
    return {
        "snappy": round(sum(len(cramjam.snappy.compress_raw(b)) for b in blocks) / size, 3),
        "zstd": round(sum(len(cramjam.zstd.compress(b)) for b in blocks) / size, 3),
    }


def delta(before: dict, after: dict) -> dict:
    servers = {
        name: round(after["servers_cpu"][name] - before["servers_cpu"].get(name, 0.0), 2)
        for name in after["servers_cpu"]
    }
    mongo_disk = (
        after["mongo_disk"] - before["mongo_disk"] if after["mongo_disk"] is not None else None
    )
    return {
        "wall_s": after["wall"] - before["wall"],
        "cpu_s": after["cpu"] - before["cpu"],
        "children_cpu_s": after["children_cpu"] - before["children_cpu"],
        "servers_cpu_s": servers,
        "redis_used": after["redis_used"] - before["redis_used"],
        "redis_rss": after["redis_rss"] - before["redis_rss"],
        "mongo_disk": mongo_disk,
    }


# ------------------------------------------------------------------------------- the steps


class Timed:
    """An iterator whose own time (making synthetic chapters), wall and CPU, is summed apart."""

    def __init__(self, items: Iterator[MasterDocument]) -> None:
        self.items = items
        self.seconds = 0.0
        self.cpu_seconds = 0.0

    def __iter__(self) -> Iterator[MasterDocument]:
        return self

    def __next__(self) -> MasterDocument:
        start, cpu = time.perf_counter(), time.thread_time()  # the ingest's writer aside
        try:
            return next(self.items)
        finally:
            self.seconds += time.perf_counter() - start
            self.cpu_seconds += time.thread_time() - cpu


def ingest(library: MasterLibrary, meter: Meter, docs: Iterator, count: int, total: int) -> dict:
    """Ingest ``count`` more synthetic chapters; what they cost."""
    made = Timed(itertools.islice(docs, count))
    before = meter.snapshot()

    def progress() -> Iterator[MasterDocument]:
        for i, doc in enumerate(made, 1):
            if i % 10_000 == 0:
                log(f"  {total - count + i:,} chapters ingested")
            yield doc

    library.ingest(progress())
    spent = delta(before, meter.snapshot())
    seconds = spent["wall_s"] - made.seconds
    return {
        "chapters": count,
        "seconds": round(seconds, 1),
        "per_second": round(count / seconds, 1),
        "making_s": round(made.seconds, 1),
        "redis_used": spent["redis_used"],
        "redis_rss": spent["redis_rss"],
        "mongo_disk": spent["mongo_disk"],
        "servers_cpu_s": spent["servers_cpu_s"],
        "client_cpu_s": round(spent["cpu_s"] - made.cpu_seconds, 1),
    }


def synthetic_ids(stored: int, count: int, seed: int | random.Random) -> list[str]:
    """``count`` ids drawn from the first ``stored`` synthetic chapters (bench.scale's ids)."""
    rng = seed if isinstance(seed, random.Random) else random.Random(f"ids:{seed}:{stored}")
    return [f"合成/{i + 1:06d}" for i in rng.sample(range(stored), min(count, stored))]


def check_texts(
    library: MasterLibrary, pool: list[list[str]], stored: int, checks: int, seed: int
) -> tuple[list[str], list[str | None]]:
    """``checks`` chapter-sized texts and the master each copies (None: innocent)."""
    rng = random.Random(f"capacity:{seed}:{stored}")
    ids = synthetic_ids(stored, checks // 2, rng)
    copies = list(library.store.masters.find({"_id": {"$in": ids}}, {"text": 1}))
    texts: list[str] = [noise(with_ads(d["text"], rng), rng, 0.03) for d in copies]
    expected: list[str | None] = [d["_id"] for d in copies]
    innocents = synthetic_chapters(checks - len(texts), pool, seed=seed + 7919)
    for doc in innocents:  # another seed: never ingested
        texts.append(doc.text)
        expected.append(None)
    order = list(range(len(texts)))
    rng.shuffle(order)
    return [texts[i] for i in order], [expected[i] for i in order]


def check_throughput(
    library: MasterLibrary, meter: Meter, settings: Settings, texts: list, expected: list
) -> dict:
    detector = library.detector(settings)
    detector.check_many(texts[:BATCH])  # warm: jieba, tables, connections
    before = meter.snapshot()
    found = []
    for batch in batches(texts, BATCH):
        found += detector.check_many(batch)
    spent = delta(before, meter.snapshot())
    copies = [doc_id for doc_id in expected if doc_id is not None]
    hits = sum(
        1
        for doc_id, matches in zip(expected, found, strict=True)
        if doc_id is not None and doc_id in {m.doc_id for m in matches}
    )
    false = sum(
        1 for doc_id, matches in zip(expected, found, strict=True) if not doc_id and matches
    )
    servers = sum(spent["servers_cpu_s"].values())
    n = len(texts)
    return {
        "checks": n,
        "wall_ms_per_check": round(1000 * spent["wall_s"] / n, 2),
        "client_cpu_ms_per_check": round(1000 * spent["cpu_s"] / n, 2),
        "servers_cpu_ms_per_check": {
            name: round(1000 * s / n, 2) for name, s in spent["servers_cpu_s"].items()
        },
        "checks_per_s_one_process": round(n / spent["wall_s"], 1),
        "checks_per_s_per_core": round(n / (spent["cpu_s"] + servers), 1),
        "checks_per_s_per_client_core": round(n / spent["cpu_s"], 1),
        "copies_found": f"{hits}/{len(copies)}",
        "innocents_flagged": false,
    }


def crawl(meter: Meter, settings: Settings, pages: int, tmp: Path) -> dict:
    """One crawl worker over the bench site, against the library at scale. Its CPU per page
    leaves out the process's start-up (imports, tables, connections: what a one-page crawl
    into another database costs), which a crawl of thousands of pages spreads thin."""
    stats_before = meter.collections(PAGE_COLLECTIONS)
    copies = build_site(tmp / "site", pages)
    aside = replace(settings, mongo_db=DB + "_startup", redis_prefix=PREFIX + "startup:")
    with serve(tmp / "site") as site:
        before = meter.snapshot()
        small = run_variant("startup", aside, site.url, {"CLOSESPIDER_PAGECOUNT": 1}, tmp)
        startup = delta(before, meter.snapshot())
        before = meter.snapshot()
        run = run_variant("full", settings, site.url, {}, tmp)
        spent = delta(before, meter.snapshot())
    meter.runtime.mongo.drop_database(aside.mongo_db)
    stats = meter.collections(PAGE_COLLECTIONS)
    stored = run["stored"] or 1
    lengths = [len(doc.get("text", "")) for doc in meter.runtime.db["pages"].find({}, {"text": 1})]
    per_page = {
        name: {
            key: round((stats[name][key] - stats_before[name][key]) / stored)
            for key in ("size", "storageSize", "totalIndexSize")
        }
        | {
            "documents_per_page": round(
                (stats[name]["count"] - stats_before[name]["count"]) / stored, 2
            )
        }
        for name in PAGE_COLLECTIONS
    }
    servers = spent["servers_cpu_s"]
    return {
        **run,
        "copies_on_site": copies,
        "chars_per_page": round(sum(lengths) / max(1, len(lengths))),
        "crawl_startup_cpu_s": round(startup["children_cpu_s"], 1),
        "crawl_cpu_ms_per_page": round(
            1000
            * (spent["children_cpu_s"] - startup["children_cpu_s"])
            / (run["pages"] - small["pages"]),
            1,
        ),
        "servers_cpu_ms_per_page": {
            name: round(1000 * s / run["pages"], 1) for name, s in servers.items()
        },
        "mongo_per_page": per_page,
        "pages_compressed": compressed(meter.runtime.db["pages"]),  # one crawl's pages
        "mongo_bson_bytes_per_page": sum(v["size"] for v in per_page.values()),
        "mongo_index_bytes_per_page": sum(v["totalIndexSize"] for v in per_page.values()),
        "mongo_disk_bytes_per_page": (
            round(spent["mongo_disk"] / stored) if spent["mongo_disk"] is not None else None
        ),
        "redis_bytes_per_page": round(spent["redis_used"] / stored),
    }


# -------------------------------------------------------------------------------- the run


def checkpoints(masters: int, full: bool) -> list[int]:
    target = 1_000_000 if full else masters
    return sorted({n for n in (10_000, 100_000, target) if n <= target})


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--masters", type=int, default=100_000)
    parser.add_argument("--full", action="store_true", help="1,000,000 masters")
    parser.add_argument("--checks", type=int, default=256, help="texts checked per checkpoint")
    parser.add_argument("--pages", type=int, default=1000, help="pages of the crawled site")
    parser.add_argument("--chars", type=int, default=3000, help="characters per chapter")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--mongo-url")
    parser.add_argument("--redis-url")
    parser.add_argument("--out", type=Path, help="default bench/results/capacity[-full].json")
    parser.add_argument(
        "--bucket-bits", type=int, default=16, help="the index layout's buckets a table (2^N)"
    )
    args = parser.parse_args(argv)
    signal.signal(signal.SIGTERM, _interrupt)  # stopped: the servers are stopped too
    out = args.out or Path(__file__).parent / "results" / (
        "capacity-full.json" if args.full else "capacity.json"
    )

    load_before = os.getloadavg()
    pool_source = bench_corpus.default_corpus_dir()
    if pool_source.is_dir():
        texts = (d.text for d in bench_corpus.load(pool_source).masters)
    else:  # the bundled sample: fewer sentences, the same statistics per chapter
        pool_source = Path("tracker/demo/data")
        texts = (d.text for d in master_documents())
    pool = sentence_pool(texts)
    log(f"sentence pool: {len(pool):,} sentences from {pool_source}")

    with tempfile.TemporaryDirectory(prefix="tracker-bench-capacity-") as tmp_name:
        tmp = Path(tmp_name)
        settings = Settings(
            data_dir=tmp / "data",
            mongo_url=args.mongo_url,
            redis_url=args.redis_url,
            mongo_db=DB,
            redis_prefix=PREFIX,
            index_bucket_bits=args.bucket_bits,
        )
        runtime = Runtime(settings)
        try:
            runtime.mongo.drop_database(DB)
            for chunk in batches(runtime.redis.scan_iter(match=PREFIX + "*", count=5000), 5000):
                runtime.redis.unlink(*chunk)
            meter = Meter(runtime, settings)
            library = MasterLibrary.from_runtime(runtime)
            library.ingest(master_documents())  # the crawled site copies these
            docs = synthetic_chapters(10**8, pool, seed=args.seed, chars=args.chars)
            results, stored = [], 0
            base = meter.snapshot()
            for target in checkpoints(args.masters, args.full):
                log(f"ingesting up to {target:,} chapters")
                step = ingest(library, meter, docs, target - stored, target)
                stored = target
                now = meter.snapshot()
                masters = meter.collections(("masters",))["masters"]
                point = {
                    "masters": masters["count"],
                    "servers_rss_mb": {k: v >> 20 for k, v in now["servers_rss"].items()},
                    "ingest": step,
                    "redis_bytes_per_chapter": round(
                        (now["redis_used"] - base["redis_used"]) / stored
                    ),
                    "redis_rss_per_chapter": round((now["redis_rss"] - base["redis_rss"]) / stored),
                    "mongo_masters": masters,
                    "mongo_bson_bytes_per_chapter": round(masters["size"] / masters["count"]),
                    "masters_compressed": compressed(
                        runtime.db["masters"], synthetic_ids(stored, 2000, args.seed)
                    ),
                    "mongo_index_bytes_per_chapter": round(
                        masters["totalIndexSize"] / masters["count"]
                    ),
                    "mongo_disk_bytes_per_chapter": (
                        round((now["mongo_disk"] - base["mongo_disk"]) / stored)
                        if now["mongo_disk"] is not None
                        else None
                    ),
                }
                log(f"checking {args.checks} texts at {stored:,} chapters")
                texts, expected = check_texts(library, pool, stored, args.checks, args.seed)
                point["checks"] = check_throughput(library, meter, settings, texts, expected)
                results.append(point)
                log(json.dumps(point))
            log(f"crawling {args.pages} pages with one worker")
            crawled = crawl(meter, settings, args.pages, tmp)
        finally:
            runtime.close()
            if not (args.mongo_url or args.redis_url):
                services.stop(replace(settings, mongo_url=None, redis_url=None))

    result = {
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "machine": machine_with_memory(),
        "load_before": [round(x, 2) for x in load_before],
        "servers": "configured" if args.mongo_url else "embedded SecantusDB 0.7.0b3 + valkey",
        "command": "python -m bench.capacity " + " ".join(argv or sys.argv[1:]),
        "chars_per_chapter": args.chars,
        "checkpoints": results,
        "crawl": crawled,
    }
    write_result(out, result, render(result))
    return 0


HEADER = (
    "chapters",
    "Redis bytes per chapter (RSS)",
    "MongoDB bytes per chapter: BSON + index (disk)",
    "ingest /s",
    "ms per check (wall)",
    "CPU ms per check: client + servers",
    "checks/s per core",
    "copies found, innocents flagged",
)


def render(r: dict) -> str:
    rows = [HEADER, ("---:",) * (len(HEADER) - 1) + ("---",)]
    for p in r["checkpoints"]:
        c = p["checks"]
        servers = ", ".join(f"{k} {v}" for k, v in c["servers_cpu_ms_per_check"].items())
        rows.append(
            (
                f"{p['masters']:,}",
                f"{p['redis_bytes_per_chapter']:,} ({p['redis_rss_per_chapter']:,})",
                f"{p['mongo_bson_bytes_per_chapter']:,} + {p['mongo_index_bytes_per_chapter']:,}"
                f" ({p['mongo_disk_bytes_per_chapter'] or 0:,})",
                str(p["ingest"]["per_second"]),
                str(c["wall_ms_per_check"]),
                f"{c['client_cpu_ms_per_check']} + {servers}",
                str(c["checks_per_s_per_core"]),
                f"{c['copies_found']}, {c['innocents_flagged']}",
            )
        )
    table = "\n".join("| " + " | ".join(row) + " |" for row in rows)
    w = r["crawl"]
    servers = ", ".join(f"{k} {v}" for k, v in w["servers_cpu_ms_per_page"].items())
    pages = "\n".join(
        f"| `{name}` | {v['documents_per_page']} | {v['size']:,} | {v['totalIndexSize']:,} |"
        for name, v in w["mongo_per_page"].items()
    )
    pc, mc = w["pages_compressed"], r["checkpoints"][-1]["masters_compressed"]
    return f"""### Capacity ({r["date"]}, {r["machine"]})

`{r["command"]}`; servers: {r["servers"]}; load average before: {r["load_before"]}.
Chapters of {r["chars_per_chapter"]:,} characters.

{table}

One crawl worker, {w["pages"]} pages ({w["copies_on_site"]} copies; text of
{w["chars_per_page"]:,} characters a page on average), every pipeline, library of
{r["checkpoints"][-1]["masters"]:,}: **{w["pages_per_second"]} pages/s**, {w["stored"]} stored,
{w["matched"]} matched; CPU per page: crawl process {w["crawl_cpu_ms_per_page"]} ms (after
{w["crawl_startup_cpu_s"]} s of start-up), servers
{servers} ms. Redis (page-anchor index) {w["redis_bytes_per_page"]:,} bytes per page; MongoDB
per page stored: {w["mongo_bson_bytes_per_page"]:,} bytes BSON +
{w["mongo_index_bytes_per_page"]:,} index ({w["mongo_disk_bytes_per_page"] or 0:,} on disk);
BSON compressed in 32 KiB blocks: snappy {pc["snappy"]}, zstd {pc["zstd"]} (masters at the last
checkpoint: snappy {mc["snappy"]}, zstd {mc["zstd"]}):

| collection | documents per page | BSON bytes per page | index bytes per page |
|---|---:|---:|---:|
{pages}
"""


def machine_with_memory() -> str:
    memory = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30
    return f"{machine()}, {memory:.0f} GB"


def _interrupt(signum: int, _frame: object) -> None:
    raise KeyboardInterrupt(f"signal {signum}")


def log(message: str) -> None:
    print(f"[{datetime.now().strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


if __name__ == "__main__":
    sys.exit(main())
