"""A newcomer's first day (issue 28): ``tracker index stats`` tells the index's own bytes and
passes on a fresh install; the demo's findings are what ``tracker report`` shows next, and a
library of the user's own is left alone."""

from __future__ import annotations

from tracker.cli import main
from tracker.cli.index import _per_document
from tracker.index.storage import RedisStorage, StorageMemory
from tracker.matching.library import MasterLibrary
from tracker.model import MasterDocument

from .texts import prose

DOCS = [
    MasterDocument(f"书/{i:02d}", "书", f"第{i}章", prose(seed=280 + i, chars=3000))
    for i in range(5)
]


# -------------------------------------------------------------------------------- index stats


def test_index_stats_counts_the_index_keys_bytes_not_the_server(cli_env, runtime, capsys):
    assert main(["index", "stats"]) == 0  # a new library: nothing to disagree about
    out = capsys.readouterr().out
    assert "index:   empty: nothing ingested yet" in out

    MasterLibrary.from_runtime(runtime).ingest(DOCS)
    assert main(["index", "stats"]) == 0
    out = capsys.readouterr().out
    keys = list(runtime.redis.scan_iter(match=runtime.settings.redis_prefix + "ix:*"))
    held = sum(runtime.redis.memory_usage(key, samples=0) for key in keys)
    assert f"{len(keys):,} keys, {held:,} bytes (MEMORY USAGE)" in out
    # 5 chapters: nearly every posting has a key of its own, whose bytes say nothing of a
    # larger library's cost per chapter.
    assert "per document: not meaningful yet" in out
    assert "bytes per document" not in out
    assert "used_memory" in out and "the whole server" in out


def test_index_memory_is_estimated_from_a_sample_of_keys(runtime):
    MasterLibrary.from_runtime(runtime).ingest(DOCS)
    storage = RedisStorage(runtime.redis, runtime.settings.redis_prefix + "ix:")
    exact, sampled = storage.memory(), storage.memory(sample=100)
    assert exact.exact and exact.sampled == exact.keys > 100
    assert not sampled.exact and sampled.sampled == 100 and sampled.keys == exact.keys
    assert abs(sampled.bytes - exact.bytes) < 0.2 * exact.bytes
    assert 0 < exact.payload < exact.bytes


def test_bytes_per_document_once_the_records_are_most_of_them():
    assert _per_document(StorageMemory(10_000, 1_000_000, 900_000, 2000), 1000) == (
        "; 1,000 bytes per document"
    )
    assert "not meaningful" in _per_document(StorageMemory(10_000, 1_000_000, 100_000, 2000), 9)
    assert _per_document(StorageMemory(0, 0, 0, 0), 0) == ""
