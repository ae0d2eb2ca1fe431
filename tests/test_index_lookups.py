"""The check's index lookups planned a batch at a time, and Redis reads packed by hand, give
what the page-by-page plan and redis-py's own commands give (issue 40)."""

from __future__ import annotations

import numpy as np
import pytest
import redis

from tests.texts import prose
from tracker.fingerprints.anchors import gram_hashes, winnow, winnow_two
from tracker.index import MemoryStorage, RedisStorage
from tracker.index.dna_index import query_windows, query_windows_many
from tracker.index.master_index import MasterIndex
from tracker.index.postings import HashPostings, tally
from tracker.text.normalize import normalize


def sliding_winnow(hashes: np.ndarray, window: int) -> np.ndarray:
    """Winnowing as its definition states it: the distinct minima of every window."""
    if len(hashes) <= window:
        return np.unique(hashes)[:1]
    return np.unique([hashes[i : i + window].min() for i in range(len(hashes) - window + 1)])


@pytest.mark.parametrize("size", [0, 1, 30, 31, 32, 47, 48, 49, 62, 63, 200, 1500])
def test_both_winnows_from_one_pass_of_minima(size: int) -> None:
    rng = np.random.default_rng(size)
    for hashes in (
        rng.integers(0, 2**64, size, dtype=np.uint64),
        rng.integers(0, 12, size).astype(np.uint64),  # ties everywhere
    ):
        small, large = winnow_two(hashes, 31, 48)
        assert np.array_equal(small, sliding_winnow(hashes, 31))
        assert np.array_equal(large, sliding_winnow(hashes, 48))
        assert np.array_equal(small, winnow(hashes, 31))
        assert small.dtype == large.dtype == np.uint64


def test_tally_counts_each_document() -> None:
    rng = np.random.default_rng(1)
    for docs in (np.zeros(0, np.int64), np.array([7]), rng.integers(1, 40, 500)):
        ids, counts = np.unique(docs, return_counts=True)
        assert tally(docs) == dict(zip(ids.tolist(), counts.tolist(), strict=True))


@pytest.mark.parametrize("depth", [16, 21])  # the key table, and the key cache past it
def test_lookups_of_a_batch_are_those_of_each_page(depth: int) -> None:
    storage = MemoryStorage()
    postings = HashPostings(storage, "t", bucket_bits=16, depth=depth)
    rng = np.random.default_rng(depth)
    pages = [rng.integers(0, 2**64, n, dtype=np.uint64) for n in (0, 1, 90, 300, 300)]
    pages[4][:100] = pages[3][:100]  # pages sharing buckets
    positions = [np.arange(len(p)) * 3 for p in pages]
    for found, values, where in zip(
        postings.lookup_many(pages, positions), pages, positions, strict=True
    ):
        distinct, first = np.unique(values, return_index=True)
        buckets = (distinct >> np.uint64(64 - depth)).astype(np.int64)
        checks = ((distinct >> np.uint64(32)) & np.uint64(0xFFFF)).astype(np.int64)
        assert np.array_equal(found.wanted, (buckets << 16) | checks)
        assert np.array_equal(found.buckets, np.unique(buckets))
        table = "t" if depth == 16 else f"t.{depth}"
        assert found.keys == [storage.key(f"{table}:{b:x}") for b in np.unique(buckets)]
        assert np.array_equal(found.positions, where[first])


def test_a_planned_batch_is_each_page_planned_alone() -> None:
    index = MasterIndex(MemoryStorage())
    texts = [prose(n, chars) for n, chars in enumerate((3000, 3000, 600, 40, 1))]
    pages = [normalize(text).tokens for text in texts] + [np.zeros(0, dtype=np.int32)]
    for query, tokens in zip(index.plan_many(pages), pages, strict=True):
        windows = query_windows(tokens)
        assert np.array_equal(query.grams, gram_hashes(tokens))
        assert np.array_equal(query.windows, windows)
        dense, sparse = index.anchors.plan(gram_hashes(tokens))
        for lookup, expected in zip(
            (query.dense, query.sparse, query.dna),
            (dense, sparse, index.dna.plan(windows)),
            strict=True,
        ):
            assert np.array_equal(lookup.wanted, expected.wanted)
            assert lookup.keys == expected.keys
    assert [len(w) for w in query_windows_many(pages)] == [len(query_windows(p)) for p in pages]


def test_redis_reads_packed_by_hand_match_the_client(runtime, monkeypatch) -> None:
    storage = RedisStorage(runtime.redis, runtime.settings.redis_prefix + "ix:")
    keys = [storage.key(f"b:{n:x}") for n in range(70)]
    values = {key: bytes([n % 256]) * (n % 5) for n, key in enumerate(keys)}  # some empty
    storage.put(values)
    expected = [values[key] for key in keys]
    assert storage.get(keys) == expected
    monkeypatch.setattr(RedisStorage, "BATCH", 3)  # several MGETs, written at once
    assert storage.get(keys[::-1]) == expected[::-1]
    assert storage.get(keys + keys[:5]) == expected + expected[:5]
    # The pool's connection goes away: the ordinary command runs instead, with its retries.
    sent = []
    original = redis.connection.Connection.send_packed_command

    def broken(self, command, check_health=True):
        if not sent:
            sent.append(command)
            raise redis.ConnectionError("gone")
        return original(self, command, check_health)

    monkeypatch.setattr(redis.connection.Connection, "send_packed_command", broken)
    assert storage.get(keys) == expected
    assert sent
    # A key of another type is no bucket (MGET gives nil for it).
    runtime.redis.hset(keys[0], "x", 1)
    assert storage.get(keys[:3]) == [b"", *expected[1:3]]
