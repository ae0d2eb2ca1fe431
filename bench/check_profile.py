"""Where a check's work goes against libraries already ingested (issue 40): what grows with the
library. For each library (``--library N MONGO_URL REDIS_URL``, as ``bench.library_scale
--measure-only`` takes them), in this process, one worker, the same queries:

* the start-up (connect, the library's version and verification, the detector) and the first
  query (the tables and dictionaries loaded), wall ms;
* the other queries in batches of 16 (as ``tracker check --jsonl`` sends them to a worker):
  wall ms a query;
* every MongoDB command they sent (pymongo's command listener): calls, client-side ms and the
  documents returned, by command and collection; every Redis command (the server's
  ``INFO commandstats``: calls and server µs, so a server shared with other work counts that
  work too);
* the rewrite stage's candidates (its functions wrapped, not changed): the masters the pages'
  sentence keys name, those ranked (at most ``MAX_CANDIDATES`` a page), bounded (their unit
  sketch read), loaded (their bound allows a rewrite), their units rebuilt;
* with ``--profile``, the cProfile of the batches (the ``tracker`` functions).

    python -m bench.check_profile --queries /tmp/h48-million/work/queries-1-600.jsonl \\
        --library 100000 mongodb://127.0.0.1:27481/ redis://127.0.0.1:26481/0 \\
        --library 1000000 mongodb://127.0.0.1:27482/ redis://127.0.0.1:26482/0

The query file is the one ``bench.library_scale`` writes in its ``--work``
(``queries-SEED-COUNT.jsonl``). The libraries are in ``--db`` and ``--prefix``.
"""

from __future__ import annotations

import argparse
import cProfile
import os
import pstats
import sys
import time
from collections import defaultdict
from pathlib import Path

import orjson
from pymongo.monitoring import CommandListener

from tracker.cli.check import JSONL_BATCH as BATCH  # the batches --jsonl checks


class MongoCommands(CommandListener):
    """pymongo's command listener: calls, ms and documents returned by command:collection."""

    def __init__(self) -> None:
        self.stats: dict[str, list] = defaultdict(lambda: [0, 0.0, 0])
        self._names: dict[int, str] = {}

    def started(self, event) -> None:
        target = event.command.get(event.command_name)
        name = f"{event.command_name}:{target if isinstance(target, str) else ''}"
        self._names[event.request_id] = name

    def succeeded(self, event) -> None:
        row = self.stats[self._names.pop(event.request_id, event.command_name)]
        row[0] += 1
        row[1] += event.duration_micros / 1000
        cursor = event.reply.get("cursor") if hasattr(event.reply, "get") else None
        if cursor:
            row[2] += len(cursor.get("firstBatch", cursor.get("nextBatch", [])))

    def failed(self, event) -> None:
        self._names.pop(event.request_id, None)

    def take(self) -> dict[str, dict]:
        taken = {
            k: {"calls": n, "ms": round(ms, 1), "documents": docs}
            for k, (n, ms, docs) in sorted(self.stats.items(), key=lambda kv: -kv[1][1])
        }
        self.stats.clear()
        return taken


def rewrite_counts() -> dict[str, int]:
    """The rewrite stage's candidates, counted by wrapping two of its module's functions
    (their results unchanged)."""
    import tracker.matching.rewrites as rewrites

    counts: dict[str, int] = defaultdict(int)
    bounds_of, units_of = rewrites.pair_bounds, rewrites.master_sentences

    def pair_bounds(masters, page_units, chosen, skip, hits, opened):
        counts["pages"] += len(chosen)
        counts["named by sentence keys"] += sum(len(h) for h in hits)
        counts["ranked"] += sum(len(c) for c in chosen)
        bounds = bounds_of(masters, page_units, chosen, skip, hits, opened)
        counts["bounded"] += sum(len(b) for b in bounds)
        counts["loaded"] += sum(
            rewrites.could_pair(most, rewrites.least_pairs(near[d]))
            for b, near in zip(bounds, hits, strict=True)
            for d, most in b.items()
        )
        return bounds

    def master_sentences(master):
        counts["units rebuilt"] += 1
        return units_of(master)

    rewrites.pair_bounds, rewrites.master_sentences = pair_bounds, master_sentences
    return counts


def redis_commands(client) -> dict[str, tuple[int, int]]:
    return {k: (v["calls"], v["usec"]) for k, v in client.info("commandstats").items()}


def profile_library(n: int, mongo_url: str, redis_url: str, args) -> dict:
    """One library, in a child process of its own (a fresh interpreter: start-up included)."""
    import subprocess

    env = {
        **os.environ,
        "MONGO_URL": mongo_url,
        "REDIS_URL": redis_url,
        "TRACKER_MONGO_DB": args.db,
        "TRACKER_REDIS_PREFIX": args.prefix,
        "TRACKER_CHECK_WARM_S": "0",
    }
    command = [sys.executable, "-m", "bench.check_profile", "--one", str(args.queries)]
    command += ["--count", str(args.count)] + (["--profile"] if args.profile else [])
    done = subprocess.run(command, env=env, capture_output=True)
    sys.stderr.write(done.stderr.decode())
    if done.returncode:
        raise RuntimeError(f"the profile of the library of {n:,} chapters failed")
    return {"chapters": n, **orjson.loads(done.stdout)}


def one(queries: Path, count: int, profile: bool) -> dict:
    """The measure of one library (the servers of this process's environment)."""
    import pymongo.monitoring
    import redis

    listener = MongoCommands()
    pymongo.monitoring.register(listener)
    counts = rewrite_counts()
    from tracker.config import Settings
    from tracker.matching.checking import CheckingService

    texts = [orjson.loads(line)["text"] for line in queries.open("rb")][:count]
    client = redis.Redis.from_url(os.environ["REDIS_URL"])
    result: dict = {}

    def step(name: str, run) -> None:
        before, started = redis_commands(client), time.perf_counter()
        run()
        ms = 1000 * (time.perf_counter() - started)
        after = redis_commands(client)
        result[name] = {
            "ms": round(ms, 1),
            "mongo": listener.take(),
            "redis": {
                k: {
                    "calls": c - before.get(k, (0, 0))[0],
                    "server_ms": (u - before.get(k, (0, 0))[1]) / 1e3,
                }
                for k, (c, u) in after.items()
                if c - before.get(k, (0, 0))[0] > 0
            },
        }

    service = CheckingService(Settings.load())
    step("start-up", service.ensure_masters)
    step("first query", lambda: service.check_texts(texts[:1]))
    counts.clear()
    profiler = cProfile.Profile()

    def batches() -> None:
        if profile:
            profiler.enable()
        for i in range(1, len(texts), BATCH):
            service.check_texts(texts[i : i + BATCH])
        if profile:
            profiler.disable()

    step("queries", batches)
    result["queries"]["ms_a_query"] = round(result["queries"]["ms"] / max(1, len(texts) - 1), 2)
    result["rewrite stage"] = dict(counts)
    service.close()
    if profile:
        stats = pstats.Stats(profiler, stream=sys.stderr)
        stats.sort_stats("cumulative").print_stats("tracker", 40)
    return result


def render(rows: list[dict]) -> str:
    lines = []
    for row in rows:
        q = row["queries"]
        lines.append(
            f"## {row['chapters']:,} chapters: start-up {row['start-up']['ms']} ms, first query "
            f"{row['first query']['ms']} ms, then {q['ms_a_query']} ms a query"
        )
        for name, m in q["mongo"].items():
            lines.append(
                f"- MongoDB {name}: {m['calls']} calls, {m['ms']} ms, {m['documents']} documents"
            )
        for name, r in q["redis"].items():
            lines.append(
                f"- Redis {name}: {r['calls']} calls, {r['server_ms']:.1f} ms on the server"
            )
        lines.append(f"- rewrite stage: {row['rewrite stage']}")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--queries", type=Path)
    parser.add_argument("--count", type=int, default=600)
    parser.add_argument(
        "--library", action="append", nargs=3, default=[], metavar=("N", "MONGO_URL", "REDIS_URL")
    )
    parser.add_argument("--db", default="scale")
    parser.add_argument("--prefix", default="scale:")
    parser.add_argument("--profile", action="store_true", help="print cProfile of the batches")
    parser.add_argument("--one", type=Path, help=argparse.SUPPRESS)  # a child: one library
    parser.add_argument("--out", type=Path)
    args = parser.parse_args(argv)
    if args.one:
        sys.stdout.write(orjson.dumps(one(args.one, args.count, args.profile)).decode())
        return 0
    if not (args.queries and args.library):
        parser.error("give --queries and at least one --library")
    rows = [
        profile_library(int(n), mongo, redis, args)
        for n, mongo, redis in sorted(args.library, key=lambda s: int(s[0]))
    ]
    text = f"load average: {[round(x, 2) for x in os.getloadavg()]}\n\n" + render(rows)
    print(text)
    if args.out:
        args.out.write_bytes(orjson.dumps(rows, option=orjson.OPT_INDENT_2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
