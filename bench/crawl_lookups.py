"""The check's index lookups on the pirate site's pages: CPU a page of the lookups alone and of
the whole check, as a crawl's extraction worker runs them (issue 40).

The crawl-throughput bench's pirate site (:func:`bench.crawl_throughput.build_pirate_site`) is
written, its masters ingested into embedded valkey and SecantusDB, and its pages extracted
once (:func:`tracker.reading.extract.extract_normalized`, as the worker does). Then, for
``--rounds`` rounds, in batches of ``--batch`` pages:

- *lookups*: the verbatim stage's index part of
  :meth:`tracker.matching.detector.Detector._lookup`: each page planned
  (:meth:`MasterIndex.plan`), the anchor and DNA buckets fetched, the votes counted, the
  SimHash buckets fetched and the near-duplicates found;
- *check*: :meth:`Detector.check_normalized_many`, the worker's whole call (masters cached
  after the first round, as mid-crawl).

Each is timed in CPU of this process (all threads) and of the embedded valkey, in ms a page.
The SHA-256 of every page's candidates and matches (JSON) is printed, so two versions of the
code can be shown to give the same answers.

    python -m bench.crawl_lookups --pages 300 --rounds 5 [--copy-share 1.0] [--json out.json]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import statistics
import sys
import tempfile
import time
from dataclasses import asdict, replace
from pathlib import Path

from bench.crawl_stages import server_cpu
from bench.crawl_throughput import build_pirate_site
from tracker.batching import batches
from tracker.config import Settings
from tracker.matching.library import MasterLibrary
from tracker.reading.extract import extract_normalized
from tracker.servers import services
from tracker.servers.runtime import Runtime


def lookups(index, pages: list) -> list:
    """The index part of a check of ``pages`` (normalised text, SimHash): their candidates."""
    plan_many = getattr(index, "plan_many", None)  # the base version plans page by page
    tokens = [text.tokens for text, _ in pages]
    queries = plan_many(tokens) if plan_many else [index.plan(t) for t in tokens]
    index.fetch(queries)
    candidates = [index.candidates(q) for q in queries]
    index.fetch_simhash(queries, [h for _, h in pages])
    for query, found in zip(queries, candidates, strict=True):
        found.near_duplicates = index.near_duplicates(query)
    return candidates


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pages", type=int, default=300)
    parser.add_argument("--batch", type=int, default=16)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--copy-share", type=float, default=1.0)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args(argv)

    with tempfile.TemporaryDirectory(prefix="tracker-bench-lookups-") as tmp:
        base = replace(Settings.load(), data_dir=Path(tmp) / "data", mongo_url=None, redis_url=None)
        tag = f"bench_lookups_{int(time.time())}"
        settings = replace(base, mongo_db=tag, redis_prefix=f"{tag}:")
        runtime = Runtime(settings)
        library = MasterLibrary.from_runtime(runtime)
        library.ingest(build_pirate_site(Path(tmp) / "site", args.pages, args.copy_share))
        files = sorted((Path(tmp) / "site" / "p").glob("*.html"), key=lambda p: int(p.stem))
        pages = []
        for path in files:
            read = extract_normalized(path.read_text("utf-8"), f"http://127.0.0.1/p/{path.name}")
            pages.append((read.normalized, read.simhash))
        detector = library.detector(settings)
        detector.check("预热")
        index = detector.index

        def timed(work) -> dict[str, float]:
            before = (time.process_time(), server_cpu(settings, "redis"))
            out = work()
            after = (time.process_time(), server_cpu(settings, "redis"))
            cpu, valkey = (1000 * (b - a) / len(pages) for a, b in zip(before, after, strict=True))
            return {"cpu": cpu, "valkey": valkey, "out": out}

        def run_lookups() -> list:
            return [c for batch in batches(pages, args.batch) for c in lookups(index, batch)]

        def run_check() -> list:
            found = []
            for batch in batches(pages, args.batch):
                found += detector.check_normalized_many(
                    [t for t, _ in batch], [h for _, h in batch]
                )
            return found

        rounds = []
        for _ in range(args.rounds):
            rounds.append({"lookups": timed(run_lookups), "check": timed(run_check)})
        candidates = [asdict(c) for c in rounds[-1]["lookups"]["out"]]
        matches = [[m.to_dict() for m in found] for found in rounds[-1]["check"]["out"]]
        matched = sum(1 for found in matches if found)
        runtime.close()
        services.stop(base)

    def digest(value) -> str:
        return hashlib.sha256(json.dumps(value, sort_keys=True).encode()).hexdigest()[:16]

    table = {
        part: {k: [round(r[part][k], 3) for r in rounds] for k in ("cpu", "valkey")}
        for part in ("lookups", "check")
    }
    result = {
        "pages": len(pages),
        "copy_share": args.copy_share,
        "matched": matched,
        "batch": args.batch,
        "load": os.getloadavg()[0],
        "rounds": table,
        "median": {
            part: {k: statistics.median(v) for k, v in parts.items()}
            for part, parts in table.items()
        },
        "candidates_sha256": digest(candidates),
        "matches_sha256": digest(matches),
    }
    print(json.dumps(result, indent=1))
    if args.json:
        args.json.write_text(json.dumps(result, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
