"""Bulk ingest (issue 29): inputs streamed a batch at a time, fingerprinted in worker
processes, idempotent, and resumed after ``kill -9`` without duplicates or orphans."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

from tracker.index.postings import STOP
from tracker.index.storage import doc_ids
from tracker.matching.library import MasterLibrary
from tracker.model import MasterDocument

from . import disguise
from .texts import prose

COUNT = 1200


def write_jsonl(path, docs: list[MasterDocument]) -> None:
    with path.open("w", encoding="utf-8") as out:
        for doc in docs:
            record = {"id": doc.doc_id, "work": doc.work, "title": doc.title, "text": doc.text}
            out.write(json.dumps(record, ensure_ascii=False) + "\n")


def articles(count: int, seed: int = 0, chars: int = 400) -> list[MasterDocument]:
    return [
        MasterDocument(f"a/{i:05d}", f"w{i % 7}", f"t{i}", prose(seed=seed + i, chars=chars))
        for i in range(count)
    ]


def tracker(env: dict, *args: str) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-m", "tracker.cli", *args],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )


def children(pid: int) -> list[int]:
    """The processes whose parent is ``pid``."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(stat[1]) == pid:
                found.append(int(entry.name))
    return found


def indexed_numbers(runtime) -> set[int]:
    """Every master number the Redis index holds a record of (stop markers aside)."""
    prefix = runtime.settings.redis_prefix + "ix:"
    library = MasterLibrary.from_runtime(runtime, verify=False)
    found: set[int] = set()
    record = library.index.layout.record
    for key in runtime.redis.scan_iter(match=prefix + "*", count=5000):
        name = key.decode()[len(prefix) :]
        if not name.startswith(("and", "ans", "dna")):
            continue
        records = np.frombuffer(runtime.redis.get(key), dtype=record)
        found.update(int(d) for d in doc_ids(records) if d != STOP)
    return found


def test_an_ingest_killed_mid_way_is_resumed_without_duplicates_or_orphans(
    server_env, runtime, tmp_path
):
    docs = articles(COUNT)
    path = tmp_path / "articles.jsonl"
    write_jsonl(path, docs)
    first = tracker(server_env, "ingest", "--workers", "2", "--batch", "100", str(path))
    masters = runtime.db["masters"]
    deadline = time.monotonic() + 120
    while masters.estimated_document_count() < 300 and first.poll() is None:
        assert time.monotonic() < deadline, "the ingest stored nothing in 2 minutes"
        time.sleep(0.05)
    workers = children(first.pid)
    first.send_signal(signal.SIGKILL)
    first.wait()
    # Its fingerprinting workers notice and leave (they would wait for batches for ever).
    deadline = time.monotonic() + 10
    while any(Path(f"/proc/{pid}").exists() for pid in workers):
        assert time.monotonic() < deadline, f"workers {workers} outlived their ingest"
        time.sleep(0.1)
    cut_at = masters.estimated_document_count()
    assert 0 < cut_at < COUNT, f"the ingest was not cut short ({cut_at} of {COUNT} stored)"

    again = tracker(server_env, "ingest", "--workers", "2", "--batch", "100", str(path))
    out, err = again.communicate(timeout=300)
    assert again.returncode == 0, err.decode()
    summary = out.decode()
    assert " 0 replaced" in summary and "unchanged" in summary, summary

    ids = [d["_id"] for d in masters.find({}, {"_id": 1})]
    numbers = [d["n"] for d in masters.find({}, {"n": 1})]
    assert sorted(ids) == sorted(doc.doc_id for doc in docs)  # no duplicate, none missing
    assert len(set(numbers)) == COUNT
    # No orphan: every number the index holds names a stored master, and every master is filed.
    assert indexed_numbers(runtime) == set(numbers)
    library = MasterLibrary.from_runtime(runtime)
    assert library.verify(repair=False, thorough=True).action == "ok"
    for k in (3, COUNT // 2, COUNT - 5):
        found = library.detector().check(disguise.with_ads(docs[k].text))
        assert [m.doc_id for m in found] == [docs[k].doc_id]


def test_an_ingest_run_again_leaves_what_is_unchanged(runtime):
    library = MasterLibrary.from_runtime(runtime)
    docs = articles(30, seed=500)
    first = library.ingest(docs, batch=8)
    assert (first.added, first.replaced, first.unchanged) == (30, 0, 0)
    version = library.store.version()
    again = library.ingest(docs, batch=8)
    assert (again.added, again.replaced, again.unchanged) == (0, 0, 30)
    assert library.store.version() == version  # nothing changed: nothing for rematch either
    edited = [*docs[:29], MasterDocument(docs[29].doc_id, "w", "new title", docs[29].text)]
    third = library.ingest(edited, batch=8)
    assert (third.added, third.replaced, third.unchanged) == (0, 1, 29)


def test_an_id_met_twice_in_one_ingest_is_named_and_the_later_one_stored(runtime):
    library = MasterLibrary.from_runtime(runtime)
    docs = articles(12, seed=900)
    later = MasterDocument(docs[2].doc_id, "w", "later", prose(seed=999, chars=400), "b.jsonl:9")
    summary = library.ingest([*docs, later], batch=5)  # in another batch than the first
    assert summary.repeated == 1
    assert summary.again[0][0] == docs[2].doc_id
    stored = runtime.db["masters"].find_one({"_id": docs[2].doc_id})
    assert stored["title"] == "later"
    assert (summary.added, summary.replaced) == (12, 1)


def test_a_large_input_streams_through_worker_processes_with_progress(
    server_env, runtime, tmp_path
):
    docs = articles(1500, seed=2000, chars=300)
    path = tmp_path / "many.jsonl"
    write_jsonl(path, docs)
    command = [sys.executable, "-m", "tracker.cli", "ingest", "--workers", "2"]
    done = subprocess.run(
        [*command, "--progress", "0", str(path)],
        env=server_env,
        capture_output=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr.decode()
    assert "1500 new" in done.stdout.decode()
    assert "tracker ingest: " in done.stderr.decode()  # progress lines on a long run
    assert runtime.db["masters"].estimated_document_count() == 1500
