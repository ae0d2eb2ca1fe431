"""The indexes, on both storage backends."""

from __future__ import annotations

import random

import numpy as np
import pytest

from tracker.fingerprints.simhash import hamming
from tracker.index import AnchorIndex, DnaIndex, MemoryStorage, RedisStorage, SimHashIndex


@pytest.fixture(params=["memory", "redis"])
def storage(request):
    if request.param == "memory":
        return MemoryStorage()
    runtime = request.getfixturevalue("runtime")
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
    lookup = lambda ns: {n: stored[n] for n in ns}  # noqa: E731
    for n in range(1, 301, 7):
        for distance in range(0, 6):
            query = flip(stored[n], rng.sample(range(64), distance))
            found = index.query(query, lookup)
            if distance <= 3:
                assert found.get(n) == distance
            else:
                assert n not in found
            assert all(hamming(stored[m], query) <= 3 for m in found)


def test_simhash_index_remove(storage):
    index = SimHashIndex(storage)
    index.add([(1, 0xABCDEF0123456789), (2, 0x1111111111111111)])
    index.remove([(1, 0xABCDEF0123456789)])
    assert index.candidates(0xABCDEF0123456789) == set()
    assert index.candidates(0x1111111111111111) == {2}


def test_dna_and_anchor_indexes_vote_per_master(storage):
    dna, anchors = DnaIndex(storage), AnchorIndex(storage, stop_after=2)
    dna.add(1, np.array([10, 11, 12], dtype=np.uint64))
    dna.add(2, np.array([12, 13], dtype=np.uint64))
    assert dna.query(np.array([11, 12, 12, 99], dtype=np.uint64)) == {1: 2, 2: 1}
    dna.remove(1, [10, 11, 12])
    assert dna.query(np.array([11, 12], dtype=np.uint64)) == {2: 1}

    for n in (1, 2, 3):  # anchor 500 is in three masters: a stock phrase, ignored
        anchors.add(n, np.array([500, 600 + n], dtype=np.uint64))
    assert anchors.query(np.array([500, 601, 602], dtype=np.uint64)) == {1: 1, 2: 1}


def test_storage_clear_removes_only_its_own_keys(runtime):
    own = RedisStorage(runtime.redis, runtime.settings.redis_prefix + "ix:")
    other = RedisStorage(runtime.redis, runtime.settings.redis_prefix + "other:")
    own.add([("a", 1), ("b", 2)])
    other.add([("a", 3)])
    own.clear()
    assert own.get(["a", "b"]) == [set(), set()]
    assert other.get(["a"]) == [{3}]
