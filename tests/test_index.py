"""The indexes, on both storage backends."""

from __future__ import annotations

import random

import numpy as np
import pytest

from tracker.fingerprints.simhash import hamming
from tracker.index import MemoryStorage, RedisStorage, SimHashIndex
from tracker.index.postings import RECORD, HashPostings


@pytest.fixture(params=["memory", "redis", "cluster"])
def storage(request):
    if request.param == "memory":
        return MemoryStorage()
    name = "cluster_runtime" if request.param == "cluster" else "runtime"  # 3 nodes, or one
    runtime = request.getfixturevalue(name)
    return RedisStorage(runtime.redis, runtime.settings.redis_prefix + "ix:")


def flip(value: int, bits: list[int]) -> int:
    for bit in bits:
        value ^= 1 << bit
    return value


@pytest.mark.parametrize("blocks", [4, 6])
def test_simhash_index_finds_everything_within_k_and_nothing_beyond(storage, blocks):
    rng = random.Random(7)
    index = SimHashIndex(storage, k=3, blocks=blocks)
    assert len(index.tables) == (4 if blocks == 4 else 20)
    stored = {n: rng.getrandbits(64) for n in range(1, 301)}
    index.add(stored.items())
    for n in range(1, 301, 7):
        for distance in range(0, 6):
            query = flip(stored[n], rng.sample(range(64), distance))
            found = index.query(query)
            if distance <= 3:
                assert found.get(n) == distance
            else:
                assert n not in found
            assert all(hamming(stored[m], query) == d <= 3 for m, d in found.items())


def test_simhash_index_remove(storage):
    index = SimHashIndex(storage)
    index.add([(1, 0xABCDEF0123456789), (2, 0x1111111111111111), (3, 0xABCDEF0123456788)])
    index.remove([(1, 0xABCDEF0123456789)])
    assert index.query(0xABCDEF0123456789) == {3: 1}
    assert index.query(0x1111111111111111) == {2: 0}


def test_hash_postings_vote_per_document(storage):
    postings = HashPostings(storage, "t")
    rng = np.random.default_rng(3)
    values = rng.integers(0, 2**63, 40, dtype=np.uint64)
    storage.append(postings.records([(1, values[:20]), (2, values[10:30])]))
    storage.append(postings.records([(70_000, values[25:])]))  # a document id above 16 bits
    query = np.concatenate([values[5:15], values[28:32]])
    lookup = postings.lookup(query)
    assert postings.votes(lookup, storage.get(lookup.keys)) == {1: 10, 2: 7, 70_000: 4}
    # Values shared by more than stop_after documents count for nobody.
    shared = postings.lookup(values[10:20])
    assert postings.votes(shared, storage.get(shared.keys), stop_after=1) == {}
    postings.remove(2, values[10:30])
    assert postings.votes(lookup, storage.get(lookup.keys)) == {1: 10, 70_000: 4}
    assert RECORD.itemsize == 5


def test_document_ids_must_fit_the_record(storage):
    with pytest.raises(ValueError, match="out of range"):
        HashPostings(storage, "t").records([(1 << 24, np.array([1], dtype=np.uint64))])


def test_storage_clear_removes_only_its_own_keys(runtime):
    own = RedisStorage(runtime.redis, runtime.settings.redis_prefix + "ix:")
    other = RedisStorage(runtime.redis, runtime.settings.redis_prefix + "other:")
    a, b, c = own.key("a"), own.key("b"), own.key("c")
    own.append({a: b"12345", b: b"67890"})
    own.append({a: b"abcde"})
    other.append({other.key("a"): b"zzzzz"})
    assert own.get([a, b, c]) == [b"12345abcde", b"67890", b""]
    own.clear()
    assert own.get([a, b]) == [b"", b""]
    assert other.get([other.key("a")]) == [b"zzzzz"]


def test_compact_keeps_the_records_and_releases_the_room_appends_left(runtime):
    storage = RedisStorage(runtime.redis, runtime.settings.redis_prefix + "ix:")
    key = storage.key("grown")
    assert key == (runtime.settings.redis_prefix + "ix:grown").encode()
    records = [bytes([i % 256]) * 5 for i in range(400)]
    for record in records:
        storage.append({key: record})
    grown = runtime.redis.memory_usage(key)
    storage.compact()
    assert storage.get([key]) == [b"".join(records)]
    assert runtime.redis.memory_usage(key) < grown
    storage.compact()  # nothing left to do
    assert storage.get([key]) == [b"".join(records)]
