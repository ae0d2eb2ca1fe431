"""``tracker check --jsonl FILE`` with several trees' code, in alternated pairs, on the servers
and library of the environment (MONGO_URL, REDIS_URL, TRACKER_MONGO_DB, …): each run's wall
time, the command's CPU with its workers (``RUSAGE_CHILDREN``), the servers' CPU (read from
``/proc`` of the pids given) and a digest of its output, which must be the same for every tree.

    python bench/check_pairs.py --out pairs.json --pairs 6 --pid 123 --pid 456 \\
        queries.jsonl /work/wt/base /work/wt/branch

Used by bench/results/check-startup-h50.md (start-up alone: a one-line and a two-batch file).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:  # run as `python bench/check_pairs.py`
    sys.path.insert(0, str(ROOT))

from bench.output import process_cpu_s  # noqa: E402


def cpu_of(pids: list[int]) -> float:
    """User + system seconds of the processes ``pids`` so far."""
    return sum(process_cpu_s(pid) for pid in pids)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("queries")
    parser.add_argument("trees", nargs="+", help="source trees, put first on PYTHONPATH")
    parser.add_argument("--pairs", type=int, default=6)
    parser.add_argument("--pid", type=int, action="append", default=[], help="a server's pid")
    parser.add_argument("--out", required=True)
    args = parser.parse_args(argv)
    tracker = Path(sys.executable).with_name("tracker")
    rows = []
    for pair in range(args.pairs):
        for tree in args.trees if pair % 2 == 0 else args.trees[::-1]:
            env = dict(os.environ, PYTHONPATH=tree)
            before, servers = resource.getrusage(resource.RUSAGE_CHILDREN), cpu_of(args.pid)
            started = time.perf_counter()
            done = subprocess.run(
                [str(tracker), "check", "--jsonl", args.queries],
                env=env,
                cwd="/tmp",
                capture_output=True,
                check=False,
            )
            wall = time.perf_counter() - started
            after = resource.getrusage(resource.RUSAGE_CHILDREN)
            row = {
                "pair": pair,
                "tree": tree,
                "wall_s": round(wall, 3),
                "cpu_s": round(
                    after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime, 3
                ),
                "sys_s": round(after.ru_stime - before.ru_stime, 3),
                "servers_cpu_s": round(cpu_of(args.pid) - servers, 3),
                "digest": hashlib.sha256(done.stdout).hexdigest()[:16],
                "rc": done.returncode,
                "load": os.getloadavg()[0],
            }
            rows.append(row)
            print(json.dumps(row), flush=True)
    Path(args.out).write_text(json.dumps({"file": args.queries, "rows": rows}, indent=1))
    for tree in args.trees:
        mine = [r for r in rows if r["tree"] == tree]
        print(
            f"{tree}: wall median {statistics.median(r['wall_s'] for r in mine):.3f} s, "
            f"CPU median {statistics.median(r['cpu_s'] for r in mine):.3f} s"
        )
    digests = {r["digest"] for r in rows}
    print("answers identical" if len(digests) == 1 else f"ANSWERS DIFFER: {digests}")
    return 0 if len(digests) == 1 else 1


if __name__ == "__main__":
    raise SystemExit(main())
