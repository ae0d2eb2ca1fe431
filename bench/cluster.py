"""The index on one Redis server against the same index on a 3-node Redis Cluster, in one run.

The scale run's library (:mod:`bench.scale`: the corpus masters, then synthetic 3,000-character
chapters up to ``--masters``) is ingested once, MongoDB and the index on one valkey server
(``MasterLibrary.ingest``); then the index is built from MongoDB on both sides, the single server
and a 3-node valkey cluster on loopback (:func:`tracker.servers.services.start_cluster`), each with
``rebuild_index`` (timed alike). The disguised chapter-sized cases of the detection bench (and
some innocent texts) are checked on both, one text per call, alternating which side goes first
from case to case; then all of them again in batches of 16 (``check_many``, as the crawl's
match stage and ``tracker check --jsonl`` run).

Measured: recall and unexpected ids on each side and the cases whose matches differ; check
time p50/p99 per side and their ratio (target: the cluster at most 2× the single server); the
index's keys per node (target: ≥ 20 % on each); Redis bytes per master (``used_memory``
delta, summed over the primaries); the index build rate.

    python -m bench.cluster                      # 100,000 masters (~15 min on 2 cores)
    python -m bench.cluster --masters 10000      # quick
"""

from __future__ import annotations

import argparse
import gc
import os
import random
import sys
import tempfile
import time
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path

for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import numpy as np  # noqa: E402

from bench import corpus as bench_corpus  # noqa: E402
from bench.baselines import NaiveContainment  # noqa: E402
from bench.engine import Engine  # noqa: E402
from bench.output import write_result  # noqa: E402
from bench.report import CHAPTER_CHARS  # noqa: E402
from bench.run import RELATED_CHARS, log, machine  # noqa: E402
from bench.scale import sentence_pool, synthetic_chapters  # noqa: E402
from bench.simulator import CASE_TYPE, INNOCENT, Simulator  # noqa: E402
from tracker.index.master_index import MasterIndex  # noqa: E402
from tracker.index.storage import RedisStorage  # noqa: E402
from tracker.matching.library import MasterLibrary  # noqa: E402
from tracker.servers import services  # noqa: E402
from tracker.servers.redis_cluster import keys_per_node, used_memory  # noqa: E402
from tracker.servers.runtime import Runtime  # noqa: E402

NODES = 3
BATCH = 16
TARGET_RATIO = 2.0
TARGET_SHARE = 0.2


def cases_for(corpus, seed: int, disguised: int, innocent: int, related) -> list[dict]:
    """Chapter-sized cases: ``disguised`` of the disguises, ``innocent`` innocent texts."""
    lo, hi = CHAPTER_CHARS
    made = [c for c in Simulator(corpus).generate(30, 40, seed) if lo <= len(c.text) <= hi]
    rng = random.Random(f"{seed}:cluster")
    pools = [
        [c for c in made if CASE_TYPE[c.kind].group != INNOCENT],
        [c for c in made if CASE_TYPE[c.kind].group == INNOCENT],
    ]
    chosen = [
        *rng.sample(pools[0], min(disguised, len(pools[0]))),
        *rng.sample(pools[1], min(innocent, len(pools[1]))),
    ]
    return [
        {
            "id": c.case_id,
            "text": c.text,
            "expected": set(c.expected),
            "tolerated": {r for e in c.expected for r in related.get(e, ())},
        }
        for c in chosen
    ]


def build(library: MasterLibrary, client) -> dict:
    """Rebuild ``library``'s index from MongoDB: seconds, masters per second, Redis bytes."""
    library.index.clear()
    before = used_memory(client)
    start = time.perf_counter()
    total = library.rebuild_index()
    seconds = time.perf_counter() - start
    return {
        "seconds": round(seconds, 1),
        "masters_per_s": round(total / seconds, 1),
        "bytes_per_master": round((used_memory(client) - before) / total, 1),
    }


def check_all(sides: dict, cases: list[dict]) -> dict:
    """Each case on every side, one text per call, the side that goes first alternating."""
    names = list(sides)
    seconds = {name: [] for name in names}
    found = {name: [] for name in names}
    for i, case in enumerate(cases):
        order = names if i % 2 == 0 else names[::-1]
        for name in order:
            start = time.perf_counter()
            matches = sides[name].check(case["text"])
            seconds[name].append(time.perf_counter() - start)
            found[name].append([m.doc_id for m in matches])
    batched = {}
    for name in names:  # the same cases again, as the crawl checks them
        texts = [c["text"] for c in cases]
        start = time.perf_counter()
        for at in range(0, len(texts), BATCH):
            sides[name].check_many(texts[at : at + BATCH])
        batched[name] = (time.perf_counter() - start) / len(texts) * 1000
    result = {}
    for name in names:
        ms = np.array(seconds[name]) * 1000
        hits = expected = false = 0
        for case, ids in zip(cases, found[name], strict=True):
            hits += len(case["expected"] & set(ids))
            expected += len(case["expected"])
            false += len(set(ids) - case["expected"] - case["tolerated"])
        result[name] = {
            "p50_ms": round(float(np.percentile(ms, 50)), 2),
            "p99_ms": round(float(np.percentile(ms, 99)), 2),
            "mean_ms": round(float(ms.mean()), 2),
            "batched_ms_per_page": round(batched[name], 2),
            "recall": round(hits / expected, 4) if expected else None,
            "unexpected_ids": false,
        }
    result["differing_cases"] = sum(
        1 for a, b in zip(found[names[0]], found[names[1]], strict=True) if a != b
    )
    return result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--masters", type=int, default=100_000)
    parser.add_argument("--cases", type=int, default=200, help="disguised chapter-sized cases")
    parser.add_argument("--innocent", type=int, default=50, help="innocent chapter-sized texts")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=Path, default=Path("bench/results/cluster"))
    args = parser.parse_args(argv)
    began, load_before = time.perf_counter(), os.getloadavg()

    corpus = bench_corpus.load()
    naive = NaiveContainment()
    naive.add(corpus.masters)
    corpus.exclude_derived(naive.longest_shared)
    cases = cases_for(
        corpus, args.seed, args.cases, args.innocent, naive.related(corpus.masters, RELATED_CHARS)
    )
    del naive
    pool = sentence_pool(d.text for d in corpus.masters)
    synthetic = max(0, args.masters - len(corpus.masters))
    docs = [*corpus.masters, *synthetic_chapters(synthetic, pool, args.seed)]
    log(f"{len(docs):,} masters, {len(cases)} cases")

    with tempfile.TemporaryDirectory(prefix="tracker-bench-cluster-") as tmp:
        engine = Engine.open(Path(tmp) / "data")
        cluster = services.start_cluster(Path(tmp) / "cluster", nodes=NODES)
        on_cluster = Runtime(
            replace(engine.server_settings(), redis_url=cluster.url, redis_cluster=True)
        )
        try:
            log(f"ingesting {len(docs):,} masters (one server)")
            ingest = engine.ingest(docs)
            del docs
            gc.collect()
            single = engine.library
            clustered = MasterLibrary(
                single.store,
                MasterIndex(RedisStorage(on_cluster.redis, engine.settings.redis_prefix + "ix:")),
            )
            log("building the index on one server, then on the cluster, from MongoDB")
            builds = {
                "single": build(single, engine.runtime.redis),
                "cluster": build(clustered, on_cluster.redis),
            }
            spread = keys_per_node(on_cluster.redis, engine.settings.redis_prefix + "ix:*")
            detectors = {
                "single": single.detector(engine.settings),
                "cluster": clustered.detector(on_cluster.settings),
            }
            for detector in detectors.values():  # tables, dictionaries, connections
                detector.check_many([c["text"] for c in cases[:BATCH]])
            gc.freeze()
            log(f"checking {len(cases)} cases on both")
            checks = check_all(detectors, cases)
        finally:
            on_cluster.close()
            cluster.stop()
            engine.close(stop_servers=True)

    total = sum(spread.values())
    result = {
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "machine": machine(),
        "load_average": [round(x, 2) for x in (*load_before, *os.getloadavg())],
        "masters": ingest.documents,
        "ingest_masters_per_s": round(ingest.rate, 1),
        "cases": len(cases),
        "builds": builds,
        "keys_per_node": spread,
        "min_share": round(min(spread.values()) / total, 4) if total else 0.0,
        "checks": checks,
        "p50_ratio": round(checks["cluster"]["p50_ms"] / checks["single"]["p50_ms"], 2),
        "batched_ratio": round(
            checks["cluster"]["batched_ms_per_page"] / checks["single"]["batched_ms_per_page"], 2
        ),
        "minutes": round((time.perf_counter() - began) / 60, 1),
    }
    write_result(args.out.with_suffix(".json"), result, render(result))
    return 0


def render(r: dict) -> str:
    single, cluster = r["checks"]["single"], r["checks"]["cluster"]
    share = r["keys_per_node"]
    total = sum(share.values())
    shares = ", ".join(f"{100 * n / total:.1f} %" for n in share.values())

    def row(what: str, a, b, versus: str = "", target: str = "") -> str:
        return f"| {what} | {a} | {b} | {versus} | {target} |"

    def ratio(sides: dict, key: str) -> str:
        return f"{sides['cluster'][key] / sides['single'][key]:.2f}×"

    rows = [
        row(
            "recall on the disguised cases",
            single["recall"],
            cluster["recall"],
            f"{r['checks']['differing_cases']} cases differ",
            "same",
        ),
        row(
            "ids reported that were not expected",
            single["unexpected_ids"],
            cluster["unexpected_ids"],
            "",
            "0",
        ),
        row(
            "check p50, ms (one text per call)",
            single["p50_ms"],
            cluster["p50_ms"],
            f"{r['p50_ratio']}×",
            f"≤ {TARGET_RATIO:g}×",
        ),
        row(
            "check p99, ms",
            single["p99_ms"],
            cluster["p99_ms"],
            f"{cluster['p99_ms'] / single['p99_ms']:.2f}×",
        ),
        row(
            f"check in batches of {BATCH}, ms per page",
            single["batched_ms_per_page"],
            cluster["batched_ms_per_page"],
            f"{r['batched_ratio']}×",
            f"≤ {TARGET_RATIO:g}×",
        ),
        row(
            "index keys per node",
            f"{total:,} (one node)",
            shares,
            "",
            f"≥ {100 * TARGET_SHARE:.0f} % each",
        ),
        row(
            "Redis bytes per master (used_memory delta)",
            r["builds"]["single"]["bytes_per_master"],
            r["builds"]["cluster"]["bytes_per_master"],
            ratio(r["builds"], "bytes_per_master"),
        ),
        row(
            "index rebuilt from MongoDB, masters per second",
            r["builds"]["single"]["masters_per_s"],
            r["builds"]["cluster"]["masters_per_s"],
            ratio(r["builds"], "masters_per_s"),
        ),
    ]
    table = "\n".join(rows)
    load = r["load_average"]
    return f"""### Redis Cluster: {r["masters"]:,} masters, 1 node against {NODES} ({r["date"]})

{r["machine"]}, shared (load average {load[0]:.1f} at the start, {load[3]:.1f} at the end);
the {NODES} valkey nodes, the single valkey server, SecantusDB and the bench share the machine.
{r["cases"]} chapter-sized cases; masters ingested at {r["ingest_masters_per_s"]} per second;
run time {r["minutes"]} min.

| measure | 1 node | {NODES}-node cluster | cluster vs 1 node | target |
|---|---|---|---|---|
{table}
"""


if __name__ == "__main__":
    sys.exit(main())
