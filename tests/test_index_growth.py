"""The index grows with the library (tracker.index.growth): tables split as their buckets
fill, common values become stop markers, lookups count the rarest values first; an index of
the first format is still read. On both storage backends and on the real servers."""

from __future__ import annotations

import numpy as np
import pytest

from tracker.fingerprints.document import fingerprint_many
from tracker.index import RedisStorage, growth
from tracker.index.layout import ORIGINAL, Tables
from tracker.index.master_index import MasterIndex
from tracker.index.postings import STOP, HashPostings
from tracker.index.storage import doc_ids
from tracker.matching.library import MasterLibrary
from tracker.model import MasterDocument
from tracker.text.normalize import normalize

from . import disguise
from .texts import prose

BOILERPLATE = (
    "本书由网友上传整理，仅供试阅，如果喜欢请支持正版，购买实体书籍，版权归原作者所有，"
    "本站所有小说均来自互联网，若有侵权请联系管理员删除，感谢各位书友的理解与支持。"
) * 2


def chapters(count: int, seed: int = 0, chars: int = 1500) -> list[MasterDocument]:
    return [
        MasterDocument(f"w/{i:03d}", "w", f"{i}", prose(seed=seed + i, chars=chars))
        for i in range(count)
    ]


def best(index: MasterIndex, text: str) -> int | None:
    candidates = index.lookup(normalize(text).tokens)
    votes = {**candidates.short_votes, **candidates.long_votes}
    return max(votes, key=votes.get) if votes else None


def test_tables_split_as_they_fill_and_lookups_find_the_same(storage, monkeypatch):
    # A dozen chapters fill 2^16 buckets, 2^12 SimHash buckets.
    monkeypatch.setattr(growth, "SPLIT_RECORDS", 0.005)
    monkeypatch.setattr(growth, "SPLIT_SIMHASH_RECORDS", 0.001)
    docs = chapters(24)
    prints = [fp for _, fp in fingerprint_many([d.text for d in docs])]
    index = MasterIndex(storage)
    reader = MasterIndex.open(storage)  # another process, which opened the index before
    index.add(zip(range(1, 13), prints[:12], strict=True))
    index.set_state(1, 12)
    copy = disguise.with_ads(docs[7].text)
    assert best(reader, copy) == 8
    before = index.tables
    index.compact()
    grown = index.tables
    assert grown.depth("ans") > before.depth("ans") and grown.depth("sh") > before.depth("sh")
    assert grown.base("ans") == before.base("ans")  # the checks stay where they were
    assert index.stored_tables() == grown
    # The old buckets are gone, the new ones named by their depth.
    old = HashPostings(storage, "ans", bucket_bits=16)
    assert not any(storage.get(old.bucket_keys(range(1 << 16))))
    # The reader follows the new depth at its next fetch: no silent miss.
    assert best(reader, copy) == 8
    assert reader.tables == grown
    # More masters after the split are filed at the new depth and found.
    index.add(zip(range(13, 25), prints[12:], strict=True))
    index.set_state(2, 24)
    index.compact()
    for k in (3, 15, 22):
        assert best(reader, disguise.punctuation_noise(docs[k].text)) == k + 1
    sizes = storage.read_counts(index.sizes_key)
    assert sizes["ans"] == sum(len(fp.anchors) for fp in prints)  # recounted by the splits


def test_common_values_become_stop_markers_and_count_for_nobody(runtime):
    library = MasterLibrary.from_runtime(runtime)
    docs = [
        MasterDocument(d.doc_id, d.work, d.title, BOILERPLATE + "\n" + d.text)
        for d in chapters(60, seed=100, chars=1200)
    ]
    library.ingest(docs)
    index = library.index
    shared = normalize(BOILERPLATE).tokens
    plan = index.plan(shared)
    index.fetch([plan])
    records = np.frombuffer(b"".join(plan.found), dtype=index.layout.record)
    markers = int((doc_ids(records) == STOP).sum())
    assert markers >= 2  # the boilerplate's anchors: one marker each, not 60 postings
    candidates = index.candidates(plan)
    assert not candidates.long_votes and not candidates.short_votes
    # A copy of one chapter (boilerplate included) is still found by its own anchors.
    found = library.detector().check(disguise.with_ads(docs[33].text))
    assert [m.doc_id for m in found] == [docs[33].doc_id]
    # A page of the boilerplate alone copies nobody.
    assert library.detector().check(BOILERPLATE * 3) == []


def test_lookups_count_the_rarest_values_first_up_to_the_budget(storage):
    postings = HashPostings(storage, "t")
    rng = np.random.default_rng(5)
    rare = rng.integers(0, 2**63, 10, dtype=np.uint64)
    common = rng.integers(0, 2**63, 10, dtype=np.uint64)
    storage.append(postings.records([(1, rare)]))
    storage.append(postings.records([(d, common) for d in range(2, 42)]))
    lookup = postings.lookup(np.concatenate([rare, common]))
    found = storage.get(lookup.keys)
    assert postings.votes(lookup, found)[1] == 10
    budgeted = postings.votes(lookup, found, budget=50)
    assert budgeted == {1: 10, **{d: 1 for d in range(2, 42)}}  # one common value fits
    assert postings.votes(lookup, found, budget=10) == {1: 10}


def test_an_index_of_the_first_format_is_read_and_written_as_it_was(runtime):
    """Built before tables were recorded: every postings table at the layout's bits (the DNA
    table too), no record; the new code reads it, files into it, and records what it has."""
    storage = RedisStorage(runtime.redis, runtime.settings.redis_prefix + "ix:")
    docs = chapters(6, seed=300)
    prints = [fp for _, fp in fingerprint_many([d.text for d in docs])]
    old = MasterIndex(storage, tables=Tables.initial(ORIGINAL, legacy=True))
    old.add(zip(range(1, 6), prints[:5], strict=True))
    old.set_state(1, 5)
    runtime.redis.delete(old.tables_key)
    runtime.redis.delete(old.layout_key)
    index = MasterIndex.open(storage)
    assert index.tables == Tables.initial(ORIGINAL, legacy=True)
    assert index.tables.depth("dna") == 16 != Tables.initial(ORIGINAL).depth("dna")
    assert best(index, docs[2].text) == 3
    index.add([(6, prints[5])])
    index.set_state(2, 6)
    assert index.stored_tables() == Tables.initial(ORIGINAL, legacy=True)
    assert best(MasterIndex.open(storage), disguise.with_ads(docs[5].text)) == 6


def test_buckets_a_dead_writer_left_after_a_split_are_dropped_by_the_next(storage, monkeypatch):
    monkeypatch.setattr(growth, "SPLIT_RECORDS", 0.005)
    docs = chapters(14, seed=800)
    prints = [fp for _, fp in fingerprint_many([d.text for d in docs])]
    index = MasterIndex(storage)
    index.add(zip(range(1, 13), prints[:12], strict=True))
    index.set_state(1, 12)
    real_drop = growth.drop

    def dies(table):
        raise ConnectionError("killed while dropping")

    monkeypatch.setattr(growth, "drop", dies)
    with pytest.raises(ConnectionError):
        index.compact()
    old = HashPostings(storage, "ans", bucket_bits=16)
    assert any(storage.get(old.bucket_keys(range(1 << 16))))  # left behind
    monkeypatch.setattr(growth, "drop", real_drop)
    again = MasterIndex.open(storage)
    again.add(zip(range(13, 15), prints[12:], strict=True))
    again.compact()
    assert not any(storage.get(old.bucket_keys(range(1 << 16))))
    assert best(again, docs[3].text) == 4 and best(again, docs[13].text) == 14
