"""Where the CPU of ``tracker ingest`` goes, stage by stage, a chapter at a time (issue 29: the
ingest target of 2,000 chapters/s on 2 cores leaves 1 ms of CPU a chapter for every process).

On chapters of ``bench.library_scale``'s files (``--file``, else the first ``--chapters`` of
the synthetic sequence, made in ``--work``):

* **fingerprinting**, in this process, in the library's batches (``FINGERPRINT_BATCH``): the
  normalisation, rjieba's segmentation, the SimHash votes, the pinyin-DNA windows, the anchors,
  and ``fingerprint_many`` end to end (what a fingerprinting worker does); the pickling of a
  batch's texts to a worker and of its fingerprints back;
* **the library's write path** (``MasterLibrary._write_batch``: the journal, the bulk insert,
  the index's appends, their compaction), batch by batch with the fingerprints above, against a
  valkey-server and a secantusd-py started as separate servers with their defaults: the CPU of
  this process, of valkey and of SecantusDB (``/proc``), a chapter;
* **SecantusDB's insert alone** (``MasterStore.save`` of the same masters into fresh
  databases): with the ``masters`` indexes the tracker declares (``_id``, ``n``, ``work``), with
  the unique index on ``n`` that libraries made before have, and with ``_id`` alone, to show
  what the secondary indexes cost it.

    python -m bench.ingest_costs --chapters 20000          # ~2 min

Writes ``bench/results/ingest-costs.json`` and ``.md`` (``--out``).
"""

from __future__ import annotations

import argparse
import pickle
import shutil
import sys
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

import orjson

from bench.capacity import log, machine_with_memory
from bench.crawl_throughput import process_stat
from bench.library_scale import Servers, chapter_file
from bench.output import write_result
from tracker.model import MasterDocument


def read_docs(path: Path, count: int) -> list[MasterDocument]:
    docs = []
    with path.open("rb") as fh:
        for line in fh:
            if len(docs) >= count:
                break
            r = orjson.loads(line)
            docs.append(MasterDocument(r["id"], r["work"], r["title"], r["text"], source="bench"))
    return docs


def per_chapter(seconds: float, chapters: int) -> float:
    return round(1000 * seconds / chapters, 4)


def fingerprint_stages(texts: list[str]) -> tuple[dict[str, float], list]:
    """CPU ms a chapter of each fingerprinting stage (in ``FINGERPRINT_BATCH`` batches, as a
    worker runs them), and the fingerprints."""
    from tracker.fingerprints.document import fingerprint_many
    from tracker.fingerprints.simhash import segment_lines, simhash_segmented
    from tracker.index.anchor_index import AnchorIndex
    from tracker.index.dna_index import master_windows_many
    from tracker.matching.library import FINGERPRINT_BATCH
    from tracker.text.normalize import normalize

    fingerprint_many(texts[:10])  # tables and dictionaries loaded
    spent: dict[str, float] = {}

    def timed(name: str, work: Callable[[], object]) -> object:
        started = time.process_time()
        result = work()
        spent[name] = spent.get(name, 0.0) + time.process_time() - started
        return result

    prints = []
    for start in range(0, len(texts), FINGERPRINT_BATCH):
        batch = texts[start : start + FINGERPRINT_BATCH]
        normalized = timed("normalize", lambda b=batch: [normalize(t) for t in b])
        words = timed("segment (rjieba, line by line)", lambda n=normalized: segment_lines(n))
        timed(
            "SimHash votes and signs",
            lambda n=normalized, w=words: simhash_segmented([t.chars for t in n], w),
        )
        tokens = [n.tokens for n in normalized]
        timed("pinyin-DNA windows", lambda t=tokens: master_windows_many(t))
        timed("anchors", lambda t=tokens: AnchorIndex.master_anchors_many(t))
        found = timed("fingerprint_many (all of the above)", lambda b=batch: fingerprint_many(b))
        prints += [fp for _, fp in found]
        timed("pickling to and from a worker", lambda b=batch: pickle.loads(pickle.dumps(b)))
        chosen = prints[-len(batch) :]
        timed("pickling to and from a worker", lambda p=chosen: pickle.loads(pickle.dumps(p)))
    return {name: per_chapter(s, len(texts)) for name, s in spent.items()}, prints


def server_cpu(servers: Servers) -> dict[str, float]:
    return {name: process_stat(pid)[1] for name, pid in servers.pids().items()}


def write_path(servers: Servers, docs: list[MasterDocument], prints: list, batch: int) -> dict:
    """The library's write path over ``docs`` (fingerprinted), batch by batch, then the last
    compaction: CPU ms a chapter of this process and of each server."""
    import redis
    from pymongo import MongoClient

    from tracker.config import Settings
    from tracker.index.layout import IndexLayout
    from tracker.index.master_index import MasterIndex
    from tracker.index.storage import RedisStorage
    from tracker.matching.library import IngestSummary, MasterLibrary
    from tracker.stores.indexes import ensure_indexes
    from tracker.stores.masters import MasterStore

    client = MongoClient(servers.mongo_url)
    try:
        db = client["costs"]
        ensure_indexes(db)
        storage = RedisStorage(redis.Redis.from_url(servers.redis_url), "costs:ix:")
        index = MasterIndex.open(storage, IndexLayout.configured(Settings()))
        library = MasterLibrary(MasterStore(db), index)
        library.verify()
        summary = IngestSummary()
        before, started = server_cpu(servers), time.process_time()
        for start in range(0, len(docs), batch):
            end = start + batch
            library._write_batch(docs[start:end], prints[start:end], summary)
        with library.writing():
            library.index.compact()
        mine = time.process_time() - started
        after = server_cpu(servers)
    finally:
        client.close()
    return {
        "this process (the writer)": per_chapter(mine, len(docs)),
        **{name: per_chapter(after[name] - before[name], len(docs)) for name in after},
    }


def inserts_alone(servers: Servers, docs: list[MasterDocument], prints: list, batch: int) -> dict:
    """SecantusDB's CPU a master for ``MasterStore.save`` of ``docs`` into a fresh database,
    with the tracker's indexes of ``masters`` and without its secondary ones."""
    from pymongo import ASCENDING, MongoClient

    from tracker.stores.indexes import ensure_indexes
    from tracker.stores.masters import MasterStore

    client = MongoClient(servers.mongo_url)
    found = {}
    variants = (
        ("with the indexes declared (_id, n, work)", "declared"),
        ("with a unique index on n (libraries made before), and work", "unique"),
        ("with _id alone", "none"),
    )
    try:
        for name, indexes in variants:
            db = client[f"costs_{indexes}"]
            if indexes == "declared":
                ensure_indexes(db)
            elif indexes == "unique":
                db["masters"].create_index([("n", ASCENDING)], unique=True)
                db["masters"].create_index([("work", ASCENDING)])
            store = MasterStore(db)
            pid = servers.pids()["mongo"]
            before = process_stat(pid)[1]
            for start in range(0, len(docs), batch):
                part = docs[start : start + batch]
                rows = [
                    (start + k, doc, fp)
                    for k, (doc, fp) in enumerate(zip(part, prints[start:], strict=False))
                ]
                store.save(rows, {doc.doc_id for doc in part}, 1)
            found[name] = per_chapter(process_stat(pid)[1] - before, len(docs))
    finally:
        client.close()
    return found


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--chapters", type=int, default=20_000)
    parser.add_argument("--file", type=Path, help="a .jsonl of chapters (id, work, title, text)")
    parser.add_argument("--chars", type=int, default=1500)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--batch", type=int, default=1000, help="masters written together")
    parser.add_argument("--work", type=Path, default=Path("/tmp/tracker-library-scale"))
    parser.add_argument(
        "--out", type=Path, default=Path(__file__).parent / "results" / "ingest-costs.json"
    )
    args = parser.parse_args(argv)

    path = args.file
    if path is None:
        from bench import corpus as bench_corpus
        from bench.scale import sentence_pool

        args.work.mkdir(parents=True, exist_ok=True)
        masters = bench_corpus.load(bench_corpus.default_corpus_dir()).masters
        pool = sentence_pool(d.text for d in masters)
        path = chapter_file(args.work, pool, 0, args.chapters, args.chars, args.seed)
    docs = read_docs(path, args.chapters)
    log(f"fingerprinting {len(docs):,} chapters stage by stage")
    stages, prints = fingerprint_stages([d.text for d in docs])
    home = args.work / "costs-home"
    shutil.rmtree(home, ignore_errors=True)
    servers = Servers(home, None, None)
    try:
        log("the library's write path")
        writes = write_path(servers, docs, prints, args.batch)
        log("SecantusDB's inserts alone")
        inserts = inserts_alone(servers, docs, prints, args.batch)
    finally:
        servers.stop()
        shutil.rmtree(home, ignore_errors=True)
    result = {
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "machine": machine_with_memory(),
        "command": "python -m bench.ingest_costs " + " ".join(argv or sys.argv[1:]),
        "chapters": len(docs),
        "fingerprinting_ms_per_chapter": stages,
        "write_path_ms_per_chapter": writes,
        "secantusdb_insert_ms_per_master": inserts,
    }
    write_result(args.out, result, render(result))
    return 0


def render(r: dict) -> str:
    lines = [
        f"### Ingest costs ({r['date']}, {r['machine']})",
        "",
        f"`{r['command']}`: {r['chapters']:,} chapters; CPU ms a chapter.",
        "",
        "| stage | process | ms a chapter |",
        "|---|---|---:|",
    ]
    for name, ms in r["fingerprinting_ms_per_chapter"].items():
        lines.append(f"| {name} | a fingerprinting worker | {ms} |")
    for name, ms in r["write_path_ms_per_chapter"].items():
        process = name if name.startswith("this") else {"mongo": "SecantusDB"}.get(name, name)
        lines.append(
            f"| the write path (journal, insert, appends, compaction) | {process} | {ms} |"
        )
    for name, ms in r["secantusdb_insert_ms_per_master"].items():
        lines.append(f"| `MasterStore.save` alone, {name} | SecantusDB | {ms} |")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    sys.exit(main())
