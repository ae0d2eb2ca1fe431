"""Choose the SimHash table layout by measurement: 4 tables of 16-bit keys vs 20 tables of
~32-bit keys (Manku et al. 2007, k = 3), on the real Redis storage.

For N stored fingerprints it reports, per layout: Redis bytes per fingerprint, candidates
examined per query (records in the fetched buckets), query latency, and recall of every
fingerprint within Hamming distance 3 (which must be 1.0 by construction).

    python bench/simhash_tables.py [--fingerprints 200000] [--queries 2000]
"""

from __future__ import annotations

import argparse
import random
import tempfile
import time
from pathlib import Path

from tracker.config import Settings
from tracker.index.simhash_index import RECORD, SimHashIndex
from tracker.index.storage import RedisStorage
from tracker.servers.runtime import Runtime


def flip(value: int, rng: random.Random, bits: int) -> int:
    for bit in rng.sample(range(64), bits):
        value ^= 1 << bit
    return value


def measure(
    runtime: Runtime, blocks: int, bucket_bits: int, stored: list[int], queries: int, seed: int
) -> dict:
    storage = RedisStorage(runtime.redis, f"bench-sh{blocks}:")
    storage.clear()
    index = SimHashIndex(storage, k=3, blocks=blocks, bucket_bits=bucket_bits)
    before = runtime.redis.info("memory")["used_memory"]
    for start in range(0, len(stored), 20_000):
        index.add((start + i + 1, fp) for i, fp in enumerate(stored[start : start + 20_000]))
    after = runtime.redis.info("memory")["used_memory"]
    rng = random.Random(seed)
    examined, found, latencies = 0, 0, []
    for _ in range(queries):
        doc = rng.randrange(len(stored))
        query = flip(stored[doc], rng, rng.randint(0, 3))
        started = time.perf_counter()
        buckets = storage.get(index.keys(query))
        hits = index.within(query, buckets)
        latencies.append(time.perf_counter() - started)
        examined += sum(len(b) // RECORD.itemsize for b in buckets)
        found += (doc + 1) in hits
    storage.clear()
    latencies.sort()
    return {
        "tables": len(index.tables),
        "bytes_per_fp": (after - before) / len(stored),
        "candidates": examined / queries,
        "p50_ms": latencies[len(latencies) // 2] * 1e3,
        "recall": found / queries,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--fingerprints", type=int, default=200_000)
    parser.add_argument("--queries", type=int, default=2000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        runtime = Runtime(Settings(data_dir=Path(tmp)))
        rng = random.Random(1)
        stored = [rng.getrandbits(64) for _ in range(args.fingerprints)]
        print(f"{args.fingerprints:,} fingerprints, {args.queries:,} queries within distance 3")
        print(
            "| layout | tables | buckets / table | Redis bytes / fingerprint | "
            "candidates / query | query p50 (ms) | recall |"
        )
        print("|---|---|---|---|---|---|---|")
        for blocks, name in ((4, "4 blocks of 16 bits"), (6, "6 blocks, choose 3")):
            for bucket_bits in (12, 16):
                r = measure(runtime, blocks, bucket_bits, stored, args.queries, seed=2)
                print(
                    f"| {name} | {r['tables']} | 2^{bucket_bits} | {r['bytes_per_fp']:.0f} | "
                    f"{r['candidates']:.0f} | {r['p50_ms']:.2f} | {r['recall']:.3f} |"
                )
        from tracker.servers import services

        services.stop(runtime.settings)


if __name__ == "__main__":
    main()
