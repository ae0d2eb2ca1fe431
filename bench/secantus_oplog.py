"""SecantusDB's CPU for the inserts of a crawl's matched pages, run as the tracker starts it
(``--standalone``: no oplog) and as a single-node replica set (its default: every document
written is also written to its oplog), alternated, each round a fresh server.

The documents, their indexes and their batches are :mod:`bench.store_indexes`' (a matched
page's page, match, day record and capture, 16 pages an ``insert_many`` a collection); the
server's CPU (user + system, from ``/proc``) is read around the inserts.

    python -m bench.secantus_oplog [--pages 1000] [--rounds 6]
"""

from __future__ import annotations

import argparse
import os
import random
import socket
import subprocess
import tempfile
from datetime import UTC, datetime
from pathlib import Path

from pymongo import MongoClient

from bench.store_indexes import (
    BATCH,
    COLLECTIONS,
    NOW,
    matched_page,
    paired_medians,
    server_cpu,
)
from tracker.servers import services


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def inserts_cpu(pages: list[dict], replica_set: bool) -> float:
    """Server CPU ms a matched page for ``pages``' inserts into a fresh server."""
    with tempfile.TemporaryDirectory() as home:
        port = free_port()
        command = services._secantus_command(port, Path(home), auth=False)
        if replica_set:
            command.remove("--standalone")
        server = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            client = MongoClient(f"mongodb://127.0.0.1:{port}/", serverSelectionTimeoutMS=30_000)
            db = client.bench_oplog
            for collection, models in NOW.items():
                db[collection].create_indexes(models)
            began = server_cpu(server.pid)
            for start in range(0, len(pages), BATCH):
                batch = pages[start : start + BATCH]
                for collection in COLLECTIONS:
                    db[collection].insert_many([p[collection] for p in batch], ordered=False)
            spent = server_cpu(server.pid) - began
            client.close()
        finally:
            server.terminate()
            server.wait()
    return 1000 * spent / len(pages)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pages", type=int, default=1000)
    parser.add_argument("--rounds", type=int, default=6)
    args = parser.parse_args(argv)
    now, rng = datetime.now(UTC), random.Random(1)
    pages = [matched_page(i, now, rng) for i in range(args.pages)]
    spent: dict[str, list[float]] = {"replica set": [], "standalone": []}
    for round_no in range(args.rounds):
        order = list(spent) if round_no % 2 == 0 else list(reversed(spent))
        for name in order:
            ms = inserts_cpu(pages, replica_set=name == "replica set")
            spent[name].append(ms)
            print(f"round {round_no} {name}: {ms:.2f} ms of server CPU a matched page "
                  f"(load {os.getloadavg()[0]:.1f})", flush=True)  # fmt: skip
    print(paired_medians(spent, "replica set", "standalone"))


if __name__ == "__main__":
    main()
