"""The stored pages' anchor index of ``tracker rematch`` (tracker.index.page_index): one shared
anchor for a copied passage of 100 characters, generations that expire after
``page_index_days`` and whose buckets follow the pages filed."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from tracker.index import MemoryStorage, RedisStorage, page_index
from tracker.index.page_index import BLOCK, PageIndex
from tracker.text.normalize import normalize

from .texts import prose

NOW = datetime(2031, 6, 15, 12, tzinfo=UTC)


class Clock:
    def __init__(self) -> None:
        self.now = NOW

    def __call__(self) -> datetime:
        return self.now


def tokens(text: str):
    return normalize(text).tokens


def test_a_copied_passage_of_100_characters_makes_a_candidate(storage):
    index = PageIndex(storage, now=Clock())
    master = prose(seed=1, chars=3000)
    passage = master[1200:1330]  # ~110 tokens after normalisation
    pages = {
        1: prose(seed=2, chars=2000) + passage + prose(seed=3, chars=1000),
        2: prose(seed=4, chars=2500),
        BLOCK + 7: master,  # a page number past the first block
    }
    index.add((n, tokens(text)) for n, text in pages.items())
    found = index.candidates([tokens(master)])
    assert 1 in found and BLOCK + 7 in found and 2 not in found
    assert index.max_n() == BLOCK + 7


def test_an_anchor_on_many_pages_needs_a_second_one(storage, monkeypatch):
    monkeypatch.setattr(page_index, "COMMON", 3)
    index = PageIndex(storage, now=Clock())
    stock = "且听下回分解，欲知后事如何，请看下文分说，列位看官不要心急，" * 5
    index.add((n, tokens(prose(seed=10 + n, chars=800) + stock)) for n in range(1, 6))
    master = prose(seed=99, chars=2000) + stock
    assert index.candidates([tokens(master)]) == {}  # the stock phrase alone is no evidence
    copy = prose(seed=99, chars=2000)
    index.add([(6, tokens(copy))])
    assert set(index.candidates([tokens(master)])) == {6}


def test_generations_expire_after_the_retention(storage):
    clock = Clock()
    index = PageIndex(storage, days=90, now=clock)
    text = prose(seed=7, chars=2500)
    index.add([(1, tokens(text))], stored_at=NOW - timedelta(days=120))  # too old: not filed
    assert index.candidates([tokens(text)]) == {}
    index.add([(2, tokens(text))], stored_at=NOW - timedelta(days=80))
    index.add([(3, tokens(text))])
    assert set(index.candidates([tokens(text)])) == {2, 3}
    assert len(index.generations()) == 2
    clock.now = NOW + timedelta(days=20)  # the older page's generation is past its time
    if isinstance(storage, MemoryStorage):
        storage.expire(clock.now.timestamp())
    assert set(index.candidates([tokens(text)])) == {3}
    assert index.expire() == 1 and len(index.generations()) == 1


def test_the_keys_expire_in_redis_itself(runtime):
    storage = RedisStorage(runtime.redis, runtime.settings.redis_prefix + "pix:")
    index = PageIndex(storage, days=30)
    index.add([(1, tokens(prose(seed=8, chars=2500)))])
    keys = list(runtime.redis.scan_iter(match=runtime.settings.redis_prefix + "pix:pa*"))
    assert keys
    ttls = {runtime.redis.ttl(key) for key in keys}
    assert all(0 < ttl <= 33 * 86400 for ttl in ttls)


def test_a_generation_that_fills_is_followed_by_one_with_more_buckets(storage, monkeypatch):
    monkeypatch.setattr(page_index, "SPLIT_RECORDS", 0.02)  # 2^10 buckets hold 20 records
    monkeypatch.setattr(page_index, "MIN_BITS", 10)
    index = PageIndex(storage, now=Clock())
    texts = {n: prose(seed=300 + n, chars=1500) for n in range(1, 13)}
    for n, text in texts.items():
        index.add([(n, tokens(text))])
    generations = index.generations()
    assert len(generations) >= 2
    assert [g.bits for g in generations] == sorted(g.bits for g in generations)
    assert generations[-1].bits > generations[0].bits
    for n in (1, 6, 12):  # found in whichever generation holds them
        assert n in index.candidates([tokens(texts[n])])
    # The next period opens with buckets for the records this one filed.
    later = PageIndex(storage, now=Clock())
    later.now = lambda: NOW + timedelta(days=7)
    later.add([(20, tokens(prose(seed=400, chars=1500)))])
    newest = later.generations()[-1]
    assert newest.period == index.period_of(NOW) + 1 and newest.bits > 10


def test_pages_filed_by_the_first_format_are_filed_again_by_a_rebuild(runtime, caplog):
    """An upgrade from the page index of one table (6-byte records, no generations): rematch
    says to rebuild, and `tracker index rebuild`'s page step files the stored pages again."""
    from tracker.fingerprints.anchors import gram_hashes, winnow
    from tracker.index.anchor_index import spread
    from tracker.index.postings import WIDE_RECORD, HashPostings
    from tracker.matching.library import MasterLibrary
    from tracker.matching.rematch import Rematcher
    from tracker.model import MasterDocument
    from tracker.stores.pages import PageRecord, PageStore

    master = MasterDocument("迟到/1", "迟到", "第一章", prose(seed=61, chars=2500))
    pages = PageStore(runtime.db)
    texts = [prose(seed=62, chars=1500) + master.text[:600], prose(seed=63, chars=2000)]
    records = []
    for n, (url, text) in zip(pages.allocate_ns(2), enumerate(texts), strict=True):
        record = PageRecord(url=f"http://pirate.example/{url}.html", text=text)
        record.n = n
        records.append(record)
    pages.save_many(records)
    storage = RedisStorage(runtime.redis, runtime.settings.redis_prefix + "pix:")
    old = HashPostings(storage, "pa", record=WIDE_RECORD)
    storage.append(
        old.records(
            (r.n, spread(winnow(gram_hashes(normalize(r.text).tokens), 48))) for r in records
        )
    )
    storage.maximize(storage.key(PageIndex.MAX_N), records[-1].n)
    index = PageIndex.from_runtime(runtime)
    assert index.legacy()
    library = MasterLibrary.from_runtime(runtime)
    library.ingest([master])
    rematcher = Rematcher(runtime, library)
    with caplog.at_level("WARNING"):
        rematcher.run()
    assert "tracker index rebuild" in caplog.text
    assert rematcher.rebuild_page_index() == 2
    assert not index.legacy()
    assert set(index.candidates([normalize(master.text).tokens])) == {records[0].n}


def test_counts_read_and_written_together_are_those_of_the_single_calls(runtime):
    """The page index's batched round trips (two count hashes read at once; counts added with
    the max page number raised) leave Redis as the single calls leave the memory storage."""
    redis = RedisStorage(runtime.redis, runtime.settings.redis_prefix + "pix:")
    memory = MemoryStorage()
    a, b, top = (runtime.settings.redis_prefix.encode() + k for k in (b"a", b"b", b"max"))
    for storage in (redis, memory):
        storage.add_counts(a, {"g1": 2})
        storage.maximize(top, 5)
    redis.add_counts_and_maximize(a, {"g1": 3, "g2": 1}, top, 4)  # 4 < 5: kept
    memory.add_counts(a, {"g1": 3, "g2": 1})
    memory.maximize(top, 4)
    redis.add_counts_and_maximize(b, {"g3": 7}, top, 9)
    memory.add_counts(b, {"g3": 7})
    memory.maximize(top, 9)
    keys = [a, b, b + b"none"]
    assert redis.read_counts_many(keys) == [memory.read_counts(k) for k in keys]
    assert redis.read_counts_many(keys) == [{"g1": 5, "g2": 1}, {"g3": 7}, {}]
    assert redis.get([top]) == memory.get([top])
