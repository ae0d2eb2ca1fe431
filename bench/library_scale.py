"""A large library, as a user builds and checks it: ``tracker ingest`` of files of synthetic
chapters, then ``tracker check --jsonl`` of the same queries at each checkpoint, against a
valkey-server and a secantusd-py started as separate servers and given by URL (issue 29).

At each checkpoint (``--points``, then ``--chapters``) this measures:

* **the check**: ``tracker check --jsonl`` of the query file run as a user runs it (a new
  process, default workers), its wall time over the queries *with* its start-up (the issue's
  measure), best and median of ``--rounds`` runs; and amortised, (T(n) − T(n/2)) / (n/2), the
  start-up cancelled; CPU of the command and of both servers per query (``/proc``);
* **recall and wrong ids**: each query's expected master against what the command printed;
* **the same queries against datasketch MinHashLSH** in memory (``bench.baselines``, 128
  permutations, character 5-shingles, Jaccard 0.5), built over the same chapters in this
  process (up to ``--minhash-max`` of them): its mean wall time per query, one at a time;
* **ingest**: chapters per second of ``tracker ingest FILE`` over each step (the files are made
  before, and kept in ``--work`` for the next run), its peak resident memory, and the CPU of
  the command, its workers and the servers;
* **bytes**: Redis ``used_memory`` per chapter (and ``used_memory_rss``), MongoDB BSON per
  chapter (``collStats``).

The queries (``--queries``, 600 by default): a quarter disguised copies of stored chapters
(ad lines, punctuation noise), a quarter copies in Traditional characters with ad lines, a
quarter partial copies (40 % of a chapter inside an unrelated text as long), a quarter
unrelated chapters; all of them copy chapters among the first checkpoint's, so every
checkpoint checks the same texts.

    python -m bench.library_scale --chapters 100000 --points 10000          # ~15 min
    flock /work/notes/bench.lock python -m bench.library_scale --chapters 1000000 \\
        --points 100000 --work /tmp/library-scale                          # ~1.5 h, 12 GB disk

Writes ``bench/results/library-scale.json`` and ``.md`` (``--out``).

``--index-points 100000,1000000`` ingests ``--chapters`` into one library only, then checks
copies of it whose index alone is extended to each point (as ``--extend-index``), in the same
rounds: what grows with the index, where ingesting it all takes too long (issue 40).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import shutil
import socket
import statistics
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

import orjson

from bench import corpus as bench_corpus
from bench.capacity import log, machine_with_memory
from bench.crawl_throughput import process_stat
from bench.disguises import embed, noise, traditional, with_ads
from bench.output import write_result
from bench.scale import sentence_pool, synthetic_chapters

DB, PREFIX = "scale", "scale:"
KINDS = ("ads_noise", "traditional_ads", "partial_40", "innocent")


# ----------------------------------------------------------------------------- the servers


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def listening_pid(url: str) -> int | None:
    """The process of this machine listening on ``url``'s port (its socket in /proc/net/tcp,
    then the process holding it), None if none is seen: the servers given by URL have their CPU
    and memory measured too."""
    port = int(url.rsplit(":", 1)[1].split("/")[0])
    sockets = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            rows = Path(table).read_text().splitlines()[1:]
        except OSError:
            continue
        for row in rows:
            fields = row.split()
            if fields[3] == "0A" and int(fields[1].rsplit(":", 1)[1], 16) == port:  # LISTEN
                sockets.add(f"socket:[{fields[9]}]")
    for entry in filter(str.isdigit, os.listdir("/proc")):
        try:
            fds = os.listdir(f"/proc/{entry}/fd")
        except OSError:
            continue
        for fd in fds:
            try:
                if os.readlink(f"/proc/{entry}/fd/{fd}") in sockets:
                    return int(entry)
            except OSError:
                continue
    return None


class Servers:
    """A valkey-server and a secantusd-py, each started as a separate server with its defaults
    (as an operator starts them), data under ``home``; or the servers at given URLs."""

    def __init__(self, home: Path, mongo_url: str | None, redis_url: str | None) -> None:
        self.procs: dict[str, subprocess.Popen] = {}
        self.mongo_url, self.redis_url = mongo_url, redis_url
        self.found = {  # the servers given by URL, when they run on this machine
            name: pid
            for name, url in (("redis", redis_url), ("mongo", mongo_url))
            if url and (pid := listening_pid(url)) is not None
        }
        if mongo_url and redis_url:
            return
        from tracker.servers.services import valkey_binary

        home.mkdir(parents=True, exist_ok=True)
        if not redis_url:
            port = free_port()
            (home / "valkey").mkdir(exist_ok=True)
            self.procs["redis"] = subprocess.Popen(
                [valkey_binary(), "--port", str(port), "--bind", "127.0.0.1"],
                cwd=home / "valkey",
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
            )
            self.redis_url = f"redis://127.0.0.1:{port}/0"
        if not mongo_url:
            port = free_port()
            exe = Path(sys.executable).parent / "secantusd-py"
            command = [str(exe), "--host", "127.0.0.1", "--port", str(port)]
            self.procs["mongo"] = subprocess.Popen(
                [*command, "--storage-path", str(home / "mongo"), "--log-level", "WARNING"],
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
            )
            self.mongo_url = f"mongodb://127.0.0.1:{port}/"
        deadline = time.monotonic() + 60
        for url in (self.redis_url, self.mongo_url):
            port = int(url.rsplit(":", 1)[1].split("/")[0])
            while True:
                try:
                    socket.create_connection(("127.0.0.1", port), timeout=1).close()
                    break
                except OSError:
                    if time.monotonic() > deadline:
                        raise RuntimeError(f"{url} did not start") from None
                    time.sleep(0.2)

    def pids(self) -> dict[str, int]:
        return {**self.found, **{name: proc.pid for name, proc in self.procs.items()}}

    def stop(self) -> None:
        for proc in self.procs.values():
            proc.terminate()
        for proc in self.procs.values():
            try:
                proc.wait(30)
            except subprocess.TimeoutExpired:
                proc.kill()


def servers_cpu(servers: Servers) -> dict[str, float]:
    found = {}
    for name, pid in servers.pids().items():
        stat = process_stat(pid)
        if stat is not None:
            found[name] = stat[1]
    return found


def servers_rss(servers: Servers) -> dict[str, int]:
    found = {}
    for name, pid in servers.pids().items():
        stat = process_stat(pid)
        if stat is not None:
            found[name] = stat[2] >> 20
    return found


# ------------------------------------------------------------------------------- the inputs


def chapter_file(work: Path, pool: list, start: int, end: int, chars: int, seed: int) -> Path:
    """Chapters ``start`` to ``end`` (of bench.scale's synthetic sequence) as a .jsonl file,
    made once and kept."""
    path = work / f"chapters-{seed}-{chars}-{start}-{end}.jsonl"
    if path.exists():
        return path
    partial = path.with_suffix(".part")
    with partial.open("wb") as out:
        for i, doc in enumerate(synthetic_chapters(end, pool, seed=seed, chars=chars)):
            if i >= start:
                record = {"id": doc.doc_id, "work": doc.work, "title": doc.title, "text": doc.text}
                out.write(orjson.dumps(record) + b"\n")
            if i and i % 100_000 == 0:
                log(f"  {i:,} chapters made")
    partial.rename(path)
    return path


def read_chapters(path: Path, ids: set[str] | None = None) -> dict[str, str]:
    found = {}
    with path.open("rb") as fh:
        for line in fh:
            record = orjson.loads(line)
            if ids is None or record["id"] in ids:
                found[record["id"]] = record["text"]
    return found


def make_queries(
    work: Path,
    first: Path,
    pool: list,
    count: int,
    chars: int,
    seed: int,
    innocents: int | None = None,
) -> tuple[Path, list[dict]]:
    """The query file and, per query, its kind and expected id (None: unrelated).

    ``innocents`` unrelated texts (a quarter of ``count`` unless given), the rest copies split
    evenly over the three copy kinds."""
    rng = random.Random(f"library-scale:{seed}")
    innocent_count = count // len(KINDS) if innocents is None else innocents
    per_kind = (count - innocent_count) // (len(KINDS) - 1)
    stored = sum(1 for _ in first.open("rb"))
    ids = [f"合成/{i + 1:06d}" for i in rng.sample(range(stored), 3 * per_kind)]
    texts = read_chapters(first, set(ids))
    others = [
        d.text
        for d in synthetic_chapters(per_kind + innocent_count, pool, seed=seed + 7919, chars=chars)
    ]
    queries: list[dict] = []
    for k, doc_id in enumerate(ids):
        text = texts[doc_id]
        kind = KINDS[k // per_kind]
        if kind == "ads_noise":
            case = noise(with_ads(text, rng), rng, 0.03)
        elif kind == "traditional_ads":
            case = traditional(with_ads(text, rng), rng)
        else:
            start = rng.randrange(0, int(len(text) * 0.6))
            case = embed(text[start : start + int(len(text) * 0.4)], others.pop(), rng)
        queries.append({"kind": kind, "expected": doc_id, "text": case})
    queries += [{"kind": "innocent", "expected": None, "text": t} for t in others[:innocent_count]]
    rng.shuffle(queries)
    for i, query in enumerate(queries):
        query["id"] = f"q{i:04d}"
    mix = "" if innocents is None else f"-i{innocents}"
    path = work / f"queries-{seed}-{count}{mix}.jsonl"
    with path.open("wb") as out:
        for query in queries:
            out.write(orjson.dumps({"id": query["id"], "text": query["text"]}) + b"\n")
    half = path.with_name(path.stem + "-half.jsonl")
    with half.open("wb") as out:
        for query in queries[: len(queries) // 2]:
            out.write(orjson.dumps({"id": query["id"], "text": query["text"]}) + b"\n")
    return path, queries


# ------------------------------------------------------------------------------- the steps


def env_for(servers: Servers, home: Path, db: str = DB, prefix: str = PREFIX) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("TRACKER_", "SCRAPY"))}
    env.update(
        MONGO_URL=servers.mongo_url or "",
        REDIS_URL=servers.redis_url or "",
        TRACKER_MONGO_DB=db,
        TRACKER_REDIS_PREFIX=prefix,
        TRACKER_DATA_DIR=str(home / "data"),
        TRACKER_CHECK_WARM_S="0",
        HOME=str(home),
    )
    return env


class TreeCPU:
    """CPU seconds of a process and all its descendants (fingerprinting workers, ``tracker
    check``'s worker processes), sampled from ``/proc`` every ``interval`` seconds: a process
    that exited keeps its last reading. ``ru_maxrss`` would miss the workers' own peaks and
    ``RUSAGE_CHILDREN`` the processes never waited for."""

    def __init__(self, root: int, interval: float = 0.2) -> None:
        self.root, self.interval = root, interval
        self.last: dict[int, tuple[float, int]] = {}  # pid -> (cpu seconds, resident bytes)
        self.peak_rss = 0
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._done.is_set():
            self.sample()
            self._done.wait(self.interval)

    def sample(self) -> None:
        stats = {}
        for entry in os.listdir("/proc"):
            if entry.isdigit() and (stat := process_stat(int(entry))) is not None:
                stats[int(entry)] = stat
        tree, frontier = {self.root}, [self.root]
        while frontier:
            pid = frontier.pop()
            for child, (parent, _, _) in stats.items():
                if parent == pid and child not in tree:
                    tree.add(child)
                    frontier.append(child)
        total_rss = 0
        for pid in tree:
            if pid in stats:
                self.last[pid] = (stats[pid][1], stats[pid][2])
                total_rss += stats[pid][2]
        self.peak_rss = max(self.peak_rss, total_rss)

    def stop(self) -> float:
        self._done.set()
        self._thread.join()
        return sum(cpu for cpu, _ in self.last.values())


def timed(command: list[str], env: dict, servers: Servers, out: Path | None = None) -> dict:
    """Run ``tracker …`` as a user does; its wall time, the CPU of it and its descendants
    (sampled), the servers' CPU, the peak resident memory of the whole tree."""
    before_servers = servers_cpu(servers)
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    with (out or Path(os.devnull)).open("wb") as stdout:
        proc = subprocess.Popen(
            [str(Path(sys.executable).parent / "tracker"), *command],
            env=env,
            stdout=stdout,
            stderr=subprocess.PIPE,
        )
        tree = TreeCPU(proc.pid)
        _, err = proc.communicate()
    wall = time.perf_counter() - started
    sampled = tree.stop()
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    # Processes waited for are counted exactly; sampling also sees those that were not.
    waited = (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)
    cpu = max(waited, sampled)
    if proc.returncode not in (0, 1):
        raise RuntimeError(f"tracker {command[0]} failed: {err.decode()[-2000:]}")
    spent = servers_cpu(servers)
    return {
        "wall_s": wall,
        "cpu_s": cpu,
        "servers_cpu_s": {k: spent[k] - before_servers.get(k, 0.0) for k in spent},
        "max_rss_mb": tree.peak_rss >> 20,
        "stderr_tail": err.decode()[-400:],
    }


def redis_memory(url: str) -> tuple[int, int]:
    import redis

    info = redis.Redis.from_url(url).info("memory")
    return int(info["used_memory"]), int(info["used_memory_rss"])


def index_tables(url: str, prefix: str = PREFIX) -> str:
    """The index's tables as ``tracker index stats`` shows them (their buckets, grown by
    splits)."""
    import redis

    from tracker.index.master_index import MasterIndex
    from tracker.index.storage import RedisStorage

    return str(MasterIndex.open(RedisStorage(redis.Redis.from_url(url), prefix + "ix:")).tables)


def mongo_masters(url: str, db: str = DB) -> dict:
    from pymongo import MongoClient

    client = MongoClient(url)
    try:
        raw = client[db].command("collStats", "masters")
        return {k: int(raw.get(k, 0) or 0) for k in ("count", "size", "totalIndexSize")}
    finally:
        client.close()


def ingest(path: Path, env: dict, servers: Servers, chapters: int) -> dict:
    log(f"tracker ingest {path.name}")
    run = timed(["ingest", str(path)], env, servers)
    run["chapters"] = chapters
    run["per_second"] = round(chapters / run["wall_s"], 1)
    # CPU a chapter in each process: the command with its fingerprinting workers, each server.
    spent = {"command": run["cpu_s"], **run["servers_cpu_s"]}
    run["cpu_ms_per_chapter"] = {k: round(1000 * v / chapters, 3) for k, v in spent.items()}
    run["cpu_ms_per_chapter"]["all"] = round(1000 * sum(spent.values()) / chapters, 3)
    return run


@dataclass
class Library:
    """A library on servers of its own, and the runs of ``tracker check`` made against it."""

    name: str
    servers: Servers
    env: dict
    runs: list[dict] = field(default_factory=list)
    halves: list[float] = field(default_factory=list)
    startups: list[dict] = field(default_factory=list)  # the check of one query: start-up


def check_round(library: Library, queries: Path, half: Path, work: Path) -> None:
    """One ``tracker check --jsonl`` of the queries, one of their first half, and one of the
    first query alone (its wall time is the command's start-up: process, imports,
    connections, opening and verifying the library, the tables and dictionaries loaded)."""
    out = work / f"answers-{library.name}.jsonl"
    library.runs.append(
        timed(["check", "--jsonl", str(queries)], library.env, library.servers, out)
    )
    library.halves.append(
        timed(["check", "--jsonl", str(half)], library.env, library.servers)["wall_s"]
    )
    one = queries.with_name(queries.stem + "-one.jsonl")
    if not one.exists():
        with queries.open("rb") as fh:
            one.write_bytes(fh.readline())
    library.startups.append(timed(["check", "--jsonl", str(one)], library.env, library.servers))


def interleaved(libraries: list[Library], queries: Path, half: Path, rounds: int, work: Path):
    """``rounds`` rounds of checks of every library in turn (each checked once first, untimed,
    as a user's first check warms the servers' caches), in an order that alternates from round
    to round, so that the machine's state (other work shares it) weighs on all of them alike."""
    for library in libraries:
        timed(["check", "--jsonl", str(half)], library.env, library.servers)
        library.runs, library.halves, library.startups = [], [], []
    for k in range(rounds):
        for library in libraries if k % 2 == 0 else libraries[::-1]:
            check_round(library, queries, half, work)


def summary(library: Library, expected: list[dict], work: Path) -> dict:
    """What the checks of ``library`` found and cost: the best and median run, amortised."""
    runs, halves = library.runs, library.halves
    n = len(expected)
    answers = {}
    with (work / f"answers-{library.name}.jsonl").open("rb") as fh:
        for line in fh:
            record = orjson.loads(line)
            answers[record["id"]] = [m["doc_id"] for m in record.get("matches", [])]
    found, wrong, by_kind = 0, 0, {}
    for query in expected:
        got = answers.get(query["id"], [])
        kind = by_kind.setdefault(query["kind"], {"n": 0, "found": 0, "wrong": 0})
        kind["n"] += 1
        if query["expected"] is not None and query["expected"] in got:
            found += 1
            kind["found"] += 1
        extra = [d for d in got if d != query["expected"]]
        wrong += len(extra)
        kind["wrong"] += len(extra)
    walls = [r["wall_s"] for r in runs]
    ordered = sorted(walls)
    copies = sum(1 for q in expected if q["expected"] is not None)
    best = min(runs, key=lambda r: r["wall_s"])
    amortised = 1000 * (ordered[0] - min(halves)) / (n - n // 2)
    startup = statistics.median(r["wall_s"] for r in library.startups)
    startup_cpu = statistics.median(
        r["cpu_s"] + sum(r["servers_cpu_s"].values()) for r in library.startups
    )
    cpu = statistics.median(r["cpu_s"] + sum(r["servers_cpu_s"].values()) for r in runs)
    return {
        # start-up (the check of one query) and the rest, per query, medians of the rounds;
        # CPU of the command, its workers and both servers (the machine may be shared)
        "startup_s": round(startup, 3),
        "ms_per_query_after_startup": round(
            1000 * (statistics.median(walls) - startup) / (n - 1), 2
        ),
        "startup_cpu_s": round(startup_cpu, 3),
        "cpu_ms_per_query_after_startup": round(1000 * (cpu - startup_cpu) / (n - 1), 2),
        "cpu_ms_per_query_with_startup": round(1000 * cpu / n, 2),
        "queries": n,
        "ms_per_query_with_startup": round(1000 * ordered[0] / n, 2),
        "ms_per_query_with_startup_median": round(1000 * statistics.median(walls) / n, 2),
        "runs_s": [round(w, 2) for w in walls],
        # each run's CPU, command and servers (s): the rounds' spread, not only their median
        "cpu_s_runs": [
            [round(r["cpu_s"], 2), round(sum(r["servers_cpu_s"].values()), 2)] for r in runs
        ],
        "ms_per_query_amortised": round(amortised, 2),
        "startup_s_estimate": round(ordered[0] - amortised * n / 1000, 2),
        "cpu_ms_per_query": round(1000 * best["cpu_s"] / n, 2),
        "servers_cpu_ms_per_query": {
            k: round(1000 * v / n, 2) for k, v in best["servers_cpu_s"].items()
        },
        "recall": round(found / copies, 4),
        "wrong_ids": wrong,
        "by_kind": by_kind,
    }


def against(library: Library, first: Library) -> dict:
    """The checks of ``library`` over the first library's, made in the same rounds."""
    pairs = [b["wall_s"] / a["wall_s"] for a, b in zip(first.runs, library.runs, strict=True)]
    return {
        "ratio_best": round(
            min(r["wall_s"] for r in library.runs) / min(r["wall_s"] for r in first.runs), 3
        ),
        "ratio_median_of_rounds": round(statistics.median(pairs), 3),
        "ratio_per_round": [round(x, 3) for x in pairs],
    }


def minhash(files: list[Path], expected: list[dict], most: int) -> dict:
    """datasketch MinHashLSH over the chapters of ``files`` (at most ``most``), in memory; its
    mean wall time per query, one at a time."""
    from bench.baselines import MinHashLSHBaseline
    from tracker.model import MasterDocument

    lsh = MinHashLSHBaseline()
    started, built = time.perf_counter(), 0
    for path in files:
        with path.open("rb") as fh:
            docs = []
            for line in fh:
                if built >= most:
                    break
                record = orjson.loads(line)
                docs.append(
                    MasterDocument(record["id"], record["work"], record["title"], record["text"])
                )
                built += 1
                if len(docs) == 10_000:
                    lsh.add(docs)
                    docs = []
            lsh.add(docs)
    build_s = time.perf_counter() - started
    lsh.check(expected[0]["text"])
    times, found, wrong = [], 0, 0
    for query in expected:
        start = time.perf_counter()
        got = lsh.check(query["text"])
        times.append(time.perf_counter() - start)
        found += query["expected"] in got
        wrong += len([d for d in got if d != query["expected"]])
    copies = sum(1 for q in expected if q["expected"] is not None)
    return {
        "chapters": built,
        "build_s": round(build_s, 1),
        "ms_per_query": round(1000 * statistics.mean(times), 2),
        "ms_per_query_p50": round(1000 * statistics.median(times), 2),
        "recall": round(found / copies, 4),
        "wrong_ids": wrong,
    }


def extended(
    target: int, stored: int, full: Library, first: Library, expected: list, args, work: Path
) -> dict:
    """The index alone extended to ``target`` chapters (bench.index_extend), checked with the
    same queries in rounds with the first library."""
    import redis

    from bench.index_extend import extend
    from tracker.index.storage import RedisStorage

    log(f"extending the index to {target:,} chapters (salted copies)")
    client = redis.Redis.from_url(full.servers.redis_url)
    before = redis_memory(full.servers.redis_url)[0]
    started = time.perf_counter()
    done = extend(RedisStorage(client, PREFIX + "ix:"), stored, target)
    seconds = time.perf_counter() - started
    used, rss = redis_memory(full.servers.redis_url)
    queries = work / f"queries-{args.seed}-{args.queries}.jsonl"
    half = queries.with_name(queries.stem + "-half.jsonl")
    log(f"checking {len(expected)} queries at {target:,} chapters (index only)")
    interleaved([first, full], queries, half, args.rounds, work)
    return {
        "chapters": target,
        "index_only": True,
        "extension": {**done, "seconds": round(seconds, 1)},
        "redis_bytes_per_chapter": round(used / target),
        "redis_growth_bytes_per_copied_chapter": round((used - before) / (target - stored)),
        "redis_rss_per_chapter": round(rss / target),
        "servers_rss_mb": servers_rss(full.servers),
        "tables": index_tables(full.servers.redis_url),
        "check": summary(full, expected, work),
        "first_library_check_same_rounds": summary(first, expected, work),
        "against_first": against(full, first),
    }


def start_library(name: str, home: Path, args) -> Library:
    """A library on servers of its own (on configured servers, a database and key prefix of
    its own: the Redis bytes then count both libraries)."""
    servers = Servers(home / name / "servers", args.mongo_url, args.redis_url)
    if name == "full":
        return Library(name, servers, env_for(servers, home / name))
    return Library(name, servers, env_for(servers, home / name, f"{DB}_{name}", f"{name}:"))


# -------------------------------------------------------------------------------- the run


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--chapters", type=int, default=100_000)
    parser.add_argument("--points", default="10000", help="checkpoints below --chapters")
    parser.add_argument("--chars", type=int, default=1500)
    parser.add_argument("--queries", type=int, default=600)
    parser.add_argument(
        "--innocents",
        type=int,
        help="of --queries, this many unrelated texts, the rest copies of the three kinds "
        "(default: a quarter; issue 40's mix is --queries 600 --innocents 300)",
    )
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument(
        "--minhash-max",
        type=int,
        default=100_000,
        help="build MinHashLSH at the checkpoints up to this many chapters (~10 KB of memory "
        "each: a million takes ~10 GB)",
    )
    parser.add_argument("--work", type=Path, default=Path("/tmp/tracker-library-scale"))
    parser.add_argument("--keep", action="store_true", help="keep the servers' data")
    parser.add_argument(
        "--extend-index",
        type=int,
        default=0,
        metavar="N",
        help="then extend the index alone to N chapters (bench.index_extend) and check again",
    )
    parser.add_argument(
        "--index-points",
        default="",
        metavar="N,M,…",
        help="ingest --chapters chapters into one library only, then check copies of it whose "
        "index alone is extended to each of N, M, … chapters (bench.index_extend), in the "
        "same interleaved rounds: what grows with the index, without ingesting it all "
        "(written to results/library-scale-index-points.json unless --out)",
    )
    parser.add_argument(
        "--ingest-only",
        action="store_true",
        help="only ingest the files (one library, no checks, no MinHashLSH): the ingest rate "
        "and CPU a chapter of each process at every checkpoint and over the whole library "
        "(written to results/library-ingest.json unless --out)",
    )
    parser.add_argument(
        "--baseline-tree",
        type=Path,
        metavar="DIR",
        help="with --index-points or --measure-only: also check each point or library with the "
        "code in DIR (a checkout, or `git archive REV | tar -x -C DIR`), on PYTHONPATH, in the "
        "same rounds: before and after side by side",
    )
    parser.add_argument(
        "--rewrite-off",
        action="store_true",
        help="with --index-points: also check each point with rewrite detection off, in the "
        "same rounds: the rewrite stage's cost is the difference",
    )
    parser.add_argument(
        "--measure-only",
        action="store_true",
        help="only check the libraries of --library, already ingested, in the same interleaved "
        "rounds (written to results/library-measured.json unless --out)",
    )
    parser.add_argument(
        "--library",
        action="append",
        nargs=3,
        default=[],
        metavar=("N", "MONGO_URL", "REDIS_URL"),
        help="with --measure-only, once per library: its chapters (the first N of the synthetic "
        "sequence) and its servers, the library in --db and --prefix",
    )
    parser.add_argument("--mongo-url")
    parser.add_argument("--redis-url")
    parser.add_argument(
        "--db", default=DB, help="with --ingest-only, --measure-only: the library's database"
    )
    parser.add_argument(
        "--prefix", default=PREFIX, help="with --ingest-only, --measure-only: its Redis key prefix"
    )
    parser.add_argument(
        "--resume-from",
        type=int,
        default=0,
        metavar="N",
        help="with --ingest-only on servers by URL that already hold the first N chapters of "
        "the sequence (an earlier --ingest-only --keep, or a copy of its data): ingest only "
        "the chapters after N",
    )
    parser.add_argument("--out", type=Path)
    args = parser.parse_args(argv)
    if args.resume_from and not (args.ingest_only and args.mongo_url and args.redis_url):
        parser.error("--resume-from needs --ingest-only, --mongo-url and --redis-url")
    if args.out is None:
        name = "library-ingest.json" if args.ingest_only else "library-scale.json"
        if args.index_points:
            name = "library-scale-index-points.json"
        if args.measure_only:
            name = "library-measured.json"
        args.out = Path(__file__).parent / "results" / name

    points = sorted({int(p) for p in args.points.split(",") if p} | {args.chapters})
    if args.index_points:  # one library, of --chapters: the points extend its index
        points = [args.chapters]
    points = [p for p in points if p > args.resume_from]
    work = args.work
    work.mkdir(parents=True, exist_ok=True)
    pool = sentence_pool(
        d.text for d in bench_corpus.load(bench_corpus.default_corpus_dir()).masters
    )
    if args.measure_only:
        return measure_only(args, argv, work, pool)
    log(f"making the chapter files in {work}")
    files, start = [], args.resume_from
    for point in points:
        files.append(chapter_file(work, pool, start, point, args.chars, args.seed))
        start = point
    home = work / "home"
    shutil.rmtree(home, ignore_errors=True)
    load_before = os.getloadavg()
    if args.ingest_only:
        return ingest_only(args, argv, points, files, home, load_before)
    queries, expected = make_queries(
        work, files[0], pool, args.queries, args.chars, args.seed, args.innocents
    )
    half = queries.with_name(queries.stem + "-half.jsonl")
    if args.index_points:
        return index_points(args, argv, files[-1], home, queries, half, expected, load_before)
    # The first checkpoint's library is kept beside the growing one: every comparison is made
    # of rounds that check both in turn, under the same load.
    first = full = None
    results = []
    try:
        first = start_library("first", home, args)
        full = start_library("full", home, args)
        base_used, base_rss = redis_memory(full.servers.redis_url)
        first_ingest = ingest(files[0], first.env, first.servers, points[0])
        stored = 0
        for point, path in zip(points, files, strict=True):
            step = ingest(path, full.env, full.servers, point - stored)
            stored = point
            used, rss = redis_memory(full.servers.redis_url)
            masters = mongo_masters(full.servers.mongo_url)
            log(f"checking {len(expected)} queries at {stored:,} chapters and at {points[0]:,}")
            interleaved([first, full], queries, half, args.rounds, work)
            point_result = {
                "chapters": stored,
                "ingest": step,
                "redis_bytes_per_chapter": round((used - base_used) / stored),
                "redis_rss_per_chapter": round((rss - base_rss) / stored),
                "mongo_bson_bytes_per_chapter": round(masters["size"] / max(1, masters["count"])),
                "servers_rss_mb": servers_rss(full.servers),
                "tables": index_tables(full.servers.redis_url),
                "check": summary(full, expected, work),
                "first_library_check_same_rounds": summary(first, expected, work),
                "against_first": against(full, first),
            }
            if stored <= args.minhash_max:
                log(f"MinHashLSH over {stored:,} chapters")
                point_result["minhash_lsh"] = minhash(
                    files[: len(results) + 1], expected, args.minhash_max
                )
            results.append(point_result)
            log(json.dumps(point_result))
        if args.extend_index:
            results.append(extended(args.extend_index, stored, full, first, expected, args, work))
            log(json.dumps(results[-1]))
    finally:
        for library in (first, full):
            if library is not None:
                library.servers.stop()
        if not args.keep:
            shutil.rmtree(home, ignore_errors=True)
    ingest_s = sum(p["ingest"]["wall_s"] for p in results if "ingest" in p)
    result = {
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "machine": machine_with_memory(),
        "load_before": [round(x, 2) for x in load_before],
        "command": "python -m bench.library_scale " + " ".join(argv or sys.argv[1:]),
        "servers": "configured" if args.mongo_url else "valkey-server and secantusd-py, defaults",
        "chars_per_chapter": args.chars,
        "points": results,
        "ingest_per_second_overall": round(args.chapters / ingest_s, 1),
        "first_library_ingest": first_ingest,
        "check_ratio_to_first": {
            f"{p['chapters']:,}": p["against_first"]["ratio_median_of_rounds"] for p in results
        },
    }
    write_result(args.out, result, render(result))
    return 0


def copy_library(base: Library, name: str, home: Path) -> Library:
    """A library on servers of its own, started on a copy of ``base``'s data (its servers
    stopped)."""
    source = home / base.name / "servers"
    target = home / name / "servers"
    shutil.rmtree(home / name, ignore_errors=True)
    shutil.copytree(source, target)
    servers = Servers(target, None, None)
    import redis

    client = redis.Redis.from_url(servers.redis_url)
    while True:  # valkey answers LOADING while it reads the copied dump
        try:
            if not client.info("persistence")["loading"]:
                break
        except redis.exceptions.BusyLoadingError:
            pass
        time.sleep(0.2)
    return Library(name, servers, env_for(servers, home / name))


def answers(library: Library, work: Path) -> dict[str, list]:
    """What the last check of ``library`` printed, by query id."""
    with (work / f"answers-{library.name}.jsonl").open("rb") as fh:
        return {r["id"]: r.get("matches", []) for r in map(orjson.loads, fh)}


def code_variants(libraries: list[Library], args) -> list[list[tuple[str, Library]]]:
    """Per library, the same servers checked by other code: that of ``--baseline-tree`` (on
    PYTHONPATH) and, with ``--rewrite-off``, this code without rewrite detection."""
    envs: list[tuple[str, dict]] = []
    if args.baseline_tree:
        envs.append((args.baseline_tree.name, {"PYTHONPATH": str(args.baseline_tree)}))
    if args.rewrite_off:
        envs.append(("rewrite off", {"TRACKER_REWRITE_DETECTION": "false"}))
    return [
        [
            (label, Library(f"{library.name}-{k}", library.servers, {**library.env, **extra}))
            for k, (label, extra) in enumerate(envs)
        ]
        for library in libraries
    ]


def index_points(
    args, argv, path: Path, home: Path, queries: Path, half: Path, expected: list, load_before
) -> int:
    """``--index-points``: one library of ``--chapters`` ingested, then a copy of it per point
    with its index extended to that many chapters (MongoDB keeps the ingested masters: the
    copies' numbers name none, as in :func:`extended`), all checked in the same rounds."""
    import redis

    from bench.index_extend import extend
    from tracker.index.storage import RedisStorage

    if args.mongo_url or args.redis_url:
        raise SystemExit("--index-points starts servers of its own")
    points = sorted(int(p) for p in args.index_points.split(",") if p)
    base = start_library("full", home, args)
    libraries: list[Library] = []
    results = []
    try:
        step = ingest(path, base.env, base.servers, args.chapters)
        redis.Redis.from_url(base.servers.redis_url).save()
        base.servers.stop()
        for point in points:
            library = copy_library(base, f"index-{point}", home)
            libraries.append(library)
            log(f"extending a copy's index to {point:,} chapters")
            client = redis.Redis.from_url(library.servers.redis_url)
            started = time.perf_counter()
            done = extend(RedisStorage(client, PREFIX + "ix:"), args.chapters, point)
            used, rss = redis_memory(library.servers.redis_url)
            results.append(
                {
                    "chapters": point,
                    "index_only": True,
                    "extension": {**done, "seconds": round(time.perf_counter() - started, 1)},
                    "redis_bytes_per_chapter": round(used / point),
                    "redis_rss_per_chapter": round(rss / point),
                    "tables": index_tables(library.servers.redis_url),
                }
            )
        variants = code_variants(libraries, args)
        log(f"checking {len(expected)} queries at {', '.join(f'{p:,}' for p in points)}")
        interleaved(
            [*libraries, *(v for vs in variants for _, v in vs)],
            queries,
            half,
            args.rounds,
            args.work,
        )
        for result, library, others in zip(results, libraries, variants, strict=True):
            result["servers_rss_mb"] = servers_rss(library.servers)
            result["check"] = summary(library, expected, args.work)
            result["against_first"] = against(library, libraries[0])
            result["variants"] = {
                label: {
                    **summary(variant, expected, args.work),
                    "answers_identical": answers(library, args.work) == answers(variant, args.work),
                }
                for label, variant in others
            }
    finally:
        for library in [base, *libraries]:
            library.servers.stop()
        if not args.keep:
            shutil.rmtree(home, ignore_errors=True)
    result = {
        **run_facts(args, argv, load_before),
        "servers": "valkey-server and secantusd-py, defaults",
        "ingested": args.chapters,
        "ingest": step,
        "points": results,
    }
    write_result(args.out, result, render_points(result))
    return 0


def run_facts(args, argv: list[str] | None, load_before) -> dict:
    """What a run's result begins with: when, where, under what load, by which command."""
    return {
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "machine": machine_with_memory(),
        "load_before": [round(x, 2) for x in load_before],
        "load_after": [round(x, 2) for x in os.getloadavg()],
        "command": "python -m bench.library_scale " + " ".join(argv or sys.argv[1:]),
        "chars_per_chapter": args.chars,
    }


def check_cells(c: dict, a: dict) -> str:
    """A check's cells of a table row: ms a query with start-up, best (median); the ratio to
    the first library (per round); start-up; ms a query after it."""
    return (
        f"{c['ms_per_query_with_startup']} ({c['ms_per_query_with_startup_median']}) | "
        f"×{a['ratio_median_of_rounds']} ({a['ratio_per_round']}) | "
        f"{c['startup_s']}, CPU {c['startup_cpu_s']} | {c['ms_per_query_after_startup']}, "
        f"CPU {c['cpu_ms_per_query_after_startup']}"
    )


def render_points(r: dict) -> str:
    rows = []
    for p in r["points"]:
        c, a = p["check"], p["against_first"]
        rows.append(
            f"| {p['chapters']:,} | {p['redis_bytes_per_chapter']} "
            f"({p['redis_rss_per_chapter']}) | {check_cells(c, a)} | "
            f"{c['cpu_ms_per_query_with_startup']} | "
            f"{c['recall']} | {c['wrong_ids']} |"
        )
        for label, v in p.get("variants", {}).items():
            rows.append(
                f"| {p['chapters']:,}, {label} | | {v['ms_per_query_with_startup']} "
                f"({v['ms_per_query_with_startup_median']}) | | {v['startup_s']}, CPU "
                f"{v['startup_cpu_s']} | {v['ms_per_query_after_startup']}, CPU "
                f"{v['cpu_ms_per_query_after_startup']} | {v['cpu_ms_per_query_with_startup']} | "
                f"{v['recall']} | {v['wrong_ids']} (answers identical: "
                f"{v['answers_identical']}) |"
            )
    return (
        f"### Library scale, the index extended ({r['date']}, {r['machine']})\n\n"
        f"`{r['command']}`; servers: {r['servers']}; load average before: {r['load_before']}, "
        f"after: {r['load_after']}; {r['ingested']:,} chapters of {r['chars_per_chapter']:,} "
        f"characters ingested ({r['ingest']['per_second']}/s), then each point a copy of that "
        f"library with its index alone extended to that many chapters (salted copies of every "
        f"table's postings, the sentence keys' included: `bench/index_extend.py`; MongoDB holds "
        f"the ingested masters), all checked in the same interleaved rounds.\n\n"
        "| chapters in the index | Redis B/chapter (RSS) | check ms/query with start-up, best "
        "(median) | ratio to the first point (per round) | start-up s | ms/query after "
        "start-up | CPU ms/query with start-up, command + servers | recall | wrong ids |\n"
        "|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n" + "\n".join(rows) + "\n"
    )


def ingest_only(
    args, argv: list[str] | None, points: list[int], files: list[Path], home: Path, load_before
) -> int:
    """``--ingest-only``: the files ingested into one library, step by step, nothing checked."""
    servers = Servers(home / "full" / "servers", args.mongo_url, args.redis_url)
    library = Library("full", servers, env_for(servers, home / "full", args.db, args.prefix))
    steps, stored = [], args.resume_from
    try:
        base_used, _ = redis_memory(library.servers.redis_url)
        for point, path in zip(points, files, strict=True):
            step = ingest(path, library.env, library.servers, point - stored)
            stored = point
            used, _ = redis_memory(library.servers.redis_url)
            step["chapters_after"] = stored
            added = stored - args.resume_from
            step["redis_bytes_per_chapter"] = round((used - base_used) / added)
            step["servers_rss_mb"] = servers_rss(library.servers)
            steps.append(step)
            log(json.dumps({k: v for k, v in step.items() if k != "stderr_tail"}))
    finally:
        library.servers.stop()
        if not args.keep:
            shutil.rmtree(home, ignore_errors=True)
    wall = sum(s["wall_s"] for s in steps)
    spent: dict[str, float] = {}
    for step in steps:
        for name, ms in step["cpu_ms_per_chapter"].items():
            spent[name] = spent.get(name, 0.0) + ms * step["chapters"]
    result = {
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "machine": machine_with_memory(),
        "load_before": [round(x, 2) for x in load_before],
        "command": "python -m bench.library_scale " + " ".join(argv or sys.argv[1:]),
        "servers": "configured" if args.mongo_url else "valkey-server and secantusd-py, defaults",
        "chars_per_chapter": args.chars,
        "steps": steps,
        "resumed_from": args.resume_from,
        "ingest_per_second_overall": round((args.chapters - args.resume_from) / wall, 1),
        "ingest_s": round(wall, 1),
        "cpu_ms_per_chapter_overall": {
            k: round(v / (args.chapters - args.resume_from), 3) for k, v in spent.items()
        },
    }
    write_result(args.out, result, render_ingest(result))
    return 0


def render_ingest(r: dict) -> str:
    rows = []
    for s in r["steps"]:
        cpu = s["cpu_ms_per_chapter"]
        rows.append(
            f"| {s['chapters_after'] - s['chapters']:,}–{s['chapters_after']:,} | "
            f"{s['per_second']} | {s['wall_s']:.0f} | {cpu['command']} | {cpu.get('redis', '—')} | "
            f"{cpu.get('mongo', '—')} | {cpu['all']} | {s['max_rss_mb']} | "
            f"{s['redis_bytes_per_chapter']} |"
        )
    cpu = r["cpu_ms_per_chapter_overall"]
    return (
        f"### Library ingest ({r['date']}, {r['machine']})\n\n`{r['command']}`; servers: "
        f"{r['servers']}; load average before: {r['load_before']}; chapters of "
        f"{r['chars_per_chapter']:,} characters.\n\n"
        "| chapters | ingest /s | s | CPU ms/chapter: command + workers | valkey | SecantusDB | "
        "all | peak RSS MB | Redis B/chapter |\n|---|---:|---:|---:|---:|---:|---:|---:|---:|\n"
        + "\n".join(rows)
        + f"\n\nIngest over the whole library: {r['ingest_per_second_overall']} chapters/s "
        f"({r['ingest_s']} s); CPU a chapter: command and workers {cpu['command']} ms, valkey "
        f"{cpu.get('redis', '—')}, SecantusDB {cpu.get('mongo', '—')}, all {cpu['all']} ms.\n"
    )


def render(r: dict) -> str:
    head = (
        "| chapters | ingest /s (peak RSS) | Redis B/chapter (RSS) | check ms/query with start-up "
        "(median) | the first library's in the same rounds | ratio (median of rounds) | "
        "start-up s (the first library's) | ms/query after start-up (the first library's) | "
        "amortised | CPU ms/query: command + servers | recall | wrong ids | MinHashLSH ms/query "
        "(recall) |\n|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|---:|---:|---:|\n"
    )
    rows = []
    for p in r["points"]:
        c, f, a = p["check"], p["first_library_check_same_rounds"], p["against_first"]
        i = p.get("ingest") or {"per_second": "index only", "max_rss_mb": 0}
        servers = " + ".join(f"{k} {v}" for k, v in c["servers_cpu_ms_per_query"].items())
        m = p.get("minhash_lsh")
        lsh = f"{m['ms_per_query']} ({m['recall']}, {m['chapters']:,} chapters)" if m else "—"
        rows.append(
            f"| {p['chapters']:,} | {i['per_second']} ({i['max_rss_mb']} MB) | "
            f"{p['redis_bytes_per_chapter']} ({p['redis_rss_per_chapter']}) | "
            f"{c['ms_per_query_with_startup']} ({c['ms_per_query_with_startup_median']}) | "
            f"{f['ms_per_query_with_startup']} ({f['ms_per_query_with_startup_median']}) | "
            f"×{a['ratio_median_of_rounds']} ({a['ratio_per_round']}) | "
            f"{c['startup_s']}, CPU {c['startup_cpu_s']} ({f['startup_s']}, CPU "
            f"{f['startup_cpu_s']}) | {c['ms_per_query_after_startup']}, CPU "
            f"{c['cpu_ms_per_query_after_startup']} ({f['ms_per_query_after_startup']}, CPU "
            f"{f['cpu_ms_per_query_after_startup']}) | "
            f"{c['ms_per_query_amortised']} | {c['cpu_ms_per_query']} + {servers} | "
            f"{c['recall']} | {c['wrong_ids']} | {lsh} |"
        )
    first = r["first_library_ingest"]
    return (
        f"### Library scale ({r['date']}, {r['machine']})\n\n`{r['command']}`; servers: "
        f"{r['servers']}; load average before: {r['load_before']}; chapters of "
        f"{r['chars_per_chapter']:,} characters. Each check is compared with the same queries' "
        f"check of a library of the first checkpoint's chapters, kept on servers of its own and "
        f"checked in turn in the same rounds.\n\n"
        + head
        + "\n".join(rows)
        + f"\n\nIngest over the library's chapters: {r['ingest_per_second_overall']} "
        f"chapters/s (the first library's: {first['per_second']}/s); the check against the "
        f"first library's: {r['check_ratio_to_first']}.\n"
    )


def measure_only(args, argv: list[str] | None, work: Path, pool: list) -> int:
    """``--measure-only``: the libraries of ``--library``, already ingested on servers of
    their own (by ``--ingest-only --keep``, or by hand), checked in the same interleaved rounds
    with the queries of the smallest one, each compared with it."""
    if not args.library:
        raise SystemExit("--measure-only needs --library N MONGO_URL REDIS_URL, once per library")
    specs = sorted((int(n), mongo, redis) for n, mongo, redis in args.library)
    load_before = os.getloadavg()
    first = chapter_file(work, pool, 0, specs[0][0], args.chars, args.seed)
    queries, expected = make_queries(
        work, first, pool, args.queries, args.chars, args.seed, args.innocents
    )
    half = queries.with_name(queries.stem + "-half.jsonl")
    home = work / "home-measured"
    libraries = []
    for n, mongo_url, redis_url in specs:
        servers = Servers(home, mongo_url, redis_url)
        env = env_for(servers, home / str(n), args.db, args.prefix)
        libraries.append(Library(str(n), servers, env))
    variants = code_variants(libraries, args)
    log(f"checking {len(expected)} queries at {', '.join(f'{s[0]:,}' for s in specs)}")
    interleaved(
        [*libraries, *(v for vs in variants for _, v in vs)], queries, half, args.rounds, work
    )
    results = []
    for (n, mongo_url, redis_url), library in zip(specs, libraries, strict=True):
        masters = mongo_masters(mongo_url, args.db)
        used, rss = redis_memory(redis_url)
        results.append(
            {
                "chapters": n,
                "servers": {"pids": library.servers.pids(), "rss_mb": servers_rss(library.servers)},
                "stored_masters": masters["count"],
                "mongo_bson_bytes_per_chapter": round(masters["size"] / max(1, masters["count"])),
                "redis_bytes_per_chapter": round(used / n),
                "redis_rss_per_chapter": round(rss / n),
                "tables": index_tables(redis_url, args.prefix),
                "check": summary(library, expected, work),
                "against_first": against(library, libraries[0]),
            }
        )
    for result, library, others in zip(results, libraries, variants, strict=True):
        # this code against the other code on the same library, round by round
        result["variants"] = {
            label: {
                **summary(variant, expected, work),
                "against_first": against(variant, libraries[0]),
                "this_against_it": against(library, variant),
                "answers_identical": answers(library, work) == answers(variant, work),
            }
            for label, variant in others
        }
    result = {**run_facts(args, argv, load_before), "libraries": results}
    write_result(args.out, result, render_measured(result))
    return 0


def render_measured(r: dict) -> str:
    rows = []
    for p in r["libraries"]:
        c, a = p["check"], p["against_first"]
        servers = " + ".join(f"{k} {v}" for k, v in c["servers_cpu_ms_per_query"].items())
        rows.append(
            f"| {p['chapters']:,} ({p['stored_masters']:,} stored) | "
            f"{p['redis_bytes_per_chapter']} ({p['redis_rss_per_chapter']}) | "
            f"{check_cells(c, a)} | {c['cpu_ms_per_query']} + {servers} | "
            f"{c['recall']} | {c['wrong_ids']} |"
        )
        for label, v in p.get("variants", {}).items():
            a = v["this_against_it"]
            rows.append(
                f"| {p['chapters']:,}, the code of `{label}` | | "
                f"{check_cells(v, v['against_first'])} | "
                f"{v['cpu_ms_per_query']} | {v['recall']} | {v['wrong_ids']} |"
            )
            rows.append(
                f"| this code over `{label}`: ×{a['ratio_median_of_rounds']} (median of the "
                f"rounds; per round {a['ratio_per_round']}), answers identical: "
                f"{v['answers_identical']} | | | | | | | | |"
            )
    return (
        f"### Libraries checked ({r['date']}, {r['machine']})\n\n"
        f"`{r['command']}`; each library on a valkey and a SecantusDB of its own, by URL; load "
        f"average before: {r['load_before']}, after: {r['load_after']}; chapters of "
        f"{r['chars_per_chapter']:,} characters, all ingested; every library checked with the "
        f"same queries in the same interleaved rounds.\n\n"
        "| chapters | Redis B/chapter (RSS) | check ms/query with start-up, best (median) | "
        "ratio to the first (per round) | start-up s | ms/query after start-up | CPU ms/query "
        "with start-up: command + servers | recall | wrong ids |\n"
        "|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n" + "\n".join(rows) + "\n"
    )


if __name__ == "__main__":
    sys.exit(main())
