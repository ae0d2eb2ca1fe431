"""SecantusDB's CPU for the inserts of a crawl's matched pages, with the indexes before
h47 and with the tracker's own (``tracker.stores.indexes``), alternated in one server
(bench/results/crawl-store-h47.md).

A matched page of the pirate crawl inserts four documents: its page (~3,000 characters of
text), its match (with the evidence spans), its day record and its evidence capture. Here
``--pages`` synthetic pages of that shape go in as the crawl writes them, one ``insert_many``
per collection per batch of 16, into a fresh database with the indexes of one variant; the
server's CPU (user + system, from ``/proc``) is read around the inserts. Rounds alternate the
variants, first one then the other, as the server's CPU per document drifts with its size.

    python -m bench.store_indexes [--pages 480] [--rounds 8]
"""

from __future__ import annotations

import argparse
import hashlib
import os
import random
import statistics
import time
from dataclasses import replace
from datetime import UTC, datetime
from typing import Any

from pymongo import ASCENDING, DESCENDING, IndexModel

from bench.output import process_cpu_s
from tracker.config import Settings
from tracker.servers import services
from tracker.servers.runtime import Runtime
from tracker.stores.indexes import INDEXES

COLLECTIONS = ("captures", "matches", "page_days", "pages")  # the order the crawl writes them
BATCH = 16  # the crawl's store batches when TRACKER_BATCH_SIZE was 16 (128 since h50)

#: The secondary indexes of these collections before h47 (18 entries a matched page with _id).
BEFORE = {
    "pages": [
        IndexModel([("site", ASCENDING), ("last_seen", DESCENDING)]),
        IndexModel([("last_seen", DESCENDING)]),
        IndexModel([("content_hash", ASCENDING)]),
        IndexModel([("n", ASCENDING)]),
        IndexModel([("match_state", ASCENDING)]),
        IndexModel([("stored_at", ASCENDING)]),
    ],
    "matches": [
        IndexModel([("url", ASCENDING)]),
        IndexModel([("doc_id", ASCENDING)]),
        IndexModel([("last_seen", DESCENDING)]),
        IndexModel([("first_seen", DESCENDING)]),
    ],
    "page_days": [IndexModel([("day", ASCENDING), ("site", ASCENDING)])],
    "captures": [
        IndexModel([("url", ASCENDING), ("at", DESCENDING)]),
        IndexModel([("stamp.state", ASCENDING)]),
        IndexModel([("stamp.state", ASCENDING), ("stamp.failing_since", ASCENDING)]),
    ],
}
NOW = {name: list(INDEXES[name]) for name in BEFORE}


def matched_page(i: int, now: datetime, rng: random.Random) -> dict[str, dict[str, Any]]:
    """The four documents a matched page of the pirate crawl inserts, in their shape."""
    url = f"http://pirate.test/p/{i}.html"
    text = "".join(chr(0x4E00 + rng.randrange(3000)) for _ in range(3000))
    digest = hashlib.sha256(text.encode()).hexdigest()
    doc_id = f"W/{i}"
    spans = [
        {"page_start": j * 80, "page_end": j * 80 + 60, "master_start": j * 80,
         "master_end": j * 80 + 60, "text": text[j * 80 : j * 80 + 60]}
        for j in range(30)
    ]  # fmt: skip
    match = {"doc_id": doc_id, "work": "W", "title": f"第{i}章", "score": 0.97,
             "coverage": 0.95, "method": "simhash+shingle+dna", "spans": spans}  # fmt: skip
    return {
        "pages": {
            "_id": url,
            "last_seen": now,
            "status": 200,
            "stored_at": now,
            "match_state": "ok",
            "matched_version": 3,
            "matched_doc_ids": [doc_id],
            "n": i,
            "text": text,
            "title": f"第{i}章",
            "content_hash": digest,
            "extractor": "locator",
            "simhash": rng.getrandbits(63),
            "changed_at": now,
            "first_seen": now,
            "site": "pirate.test",
        },
        "matches": {
            "_id": f"{url}\x00{doc_id}",
            "url": url,
            **match,
            "site": "pirate.test",
            "last_seen": now,
            "active": True,
            "first_seen": now,
        },
        "page_days": {
            "_id": f"{now.date()} {url}",
            "day": now.date().isoformat(),
            "url": url,
            "site": "pirate.test",
            "doc_ids": [doc_id],
            "at": now,
        },
        "captures": {
            "_id": hashlib.md5(url.encode()).hexdigest(),
            "url": url,
            "site": "pirate.test",
            "at": now,
            "status": 200,
            "content_hash": digest,
            "payload_sha256": digest,
            "parts": [
                {
                    "url": url,
                    "status": 200,
                    "at": now,
                    "ip": "127.0.0.1",
                    "sha256": digest,
                    "length": 12_000,
                }
            ],
            "matches": [match],
            "tracker_version": "0",
            "screenshot": None,
            "stamp": {"state": "none"},
        },
    }


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pages", type=int, default=480)
    parser.add_argument("--rounds", type=int, default=8)
    args = parser.parse_args(argv)
    settings = Settings.load()
    client = Runtime(settings).db.client  # starts the embedded servers when none is configured
    state = services.read_state(settings, "mongo")
    if state is None:
        raise SystemExit("needs the embedded SecantusDB (its CPU is read from /proc)")
    now, rng = datetime.now(UTC), random.Random(1)
    pages = [matched_page(i, now, rng) for i in range(args.pages)]
    variants = {"before": BEFORE, "now": NOW}
    spent: dict[str, list[float]] = {name: [] for name in variants}
    try:
        for round_no in range(args.rounds):
            order = list(variants) if round_no % 2 == 0 else list(reversed(variants))
            for name in order:
                db = client[f"bench_store_indexes_{name}_{round_no}"]
                for collection, models in variants[name].items():
                    db[collection].create_indexes(models)
                began = process_cpu_s(state.pid)
                for start in range(0, len(pages), BATCH):
                    batch = pages[start : start + BATCH]
                    for collection in COLLECTIONS:
                        db[collection].insert_many([p[collection] for p in batch], ordered=False)
                ms = 1000 * (process_cpu_s(state.pid) - began) / len(pages)
                spent[name].append(ms)
                print(f"round {round_no} {name}: {ms:.2f} ms of server CPU a matched page "
                      f"(load {os.getloadavg()[0]:.1f})", flush=True)  # fmt: skip
                client.drop_database(db.name)
                time.sleep(0.2)
    finally:
        if not settings.mongo_url:
            services.stop(replace(settings, mongo_url=None, redis_url=None))
    print(paired_medians(spent, "before", "now"))


def paired_medians(spent: dict[str, list[float]], base: str, other: str) -> str:
    """The median ms of ``base`` and ``other`` (alternated rounds), and of their ratio a round
    (``other``/``base``) with the rounds where ``other`` cost less."""
    ratios = [b / a for a, b in zip(spent[base], spent[other], strict=True)]
    return (
        f"median: {base} {statistics.median(spent[base]):.2f} ms, {other} "
        f"{statistics.median(spent[other]):.2f} ms; {other}/{base} a round: median "
        f"{statistics.median(ratios):.2f}, lower in {sum(r < 1 for r in ratios)} of {len(ratios)}"
    )


if __name__ == "__main__":
    main()
