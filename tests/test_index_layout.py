"""The index layout: more buckets and wider master numbers for larger libraries, chosen when an
index is built and kept with it (tracker.index.layout), on the real servers."""

from __future__ import annotations

from dataclasses import replace

import pytest

from tracker.cli import main
from tracker.config import ConfigError, Settings
from tracker.fingerprints.document import fingerprint_many
from tracker.index import MemoryStorage
from tracker.index.layout import ORIGINAL, IndexLayout
from tracker.index.master_index import MasterIndex
from tracker.matching.library import MasterLibrary
from tracker.model import MasterDocument
from tracker.servers.runtime import Runtime
from tracker.text.normalize import normalize

from . import disguise
from .texts import prose

CHAPTERS = {f"big/{i:02d}": prose(seed=700 + i, chars=3000) for i in range(1, 7)}
DOCS = [MasterDocument(doc_id, "big", doc_id, text) for doc_id, text in CHAPTERS.items()]


def test_the_layout_grows_with_the_library_as_the_capacity_plan_says():
    assert IndexLayout.for_library(100_000) == ORIGINAL
    assert IndexLayout.for_library(420_000).bucket_bits == 16
    assert IndexLayout.for_library(10_000_000) == IndexLayout(21)
    assert IndexLayout.for_library(100_000_000) == IndexLayout(24, wide_ids=True)
    for layout in (ORIGINAL, IndexLayout(21), IndexLayout(24, wide_ids=True)):
        assert IndexLayout.decode(layout.encode()) == layout
    assert IndexLayout(21).simhash_bucket_bits == 17
    with pytest.raises(ValueError, match="16-24"):
        IndexLayout(25)


def test_a_bucket_count_out_of_range_is_a_clear_settings_error():
    with pytest.raises(ConfigError, match="index_bucket_bits"):
        Settings.load(index_bucket_bits="30")


def test_wide_master_numbers_past_24_bits_and_more_buckets_find_the_same_copies():
    """Master numbers above 2^24 cannot be filed in the original records; the wide layout files
    them, and 2^21 buckets a table (past the key table's size) give the same candidates."""
    fingerprints = [fp for _, fp in fingerprint_many([doc.text for doc in DOCS])]
    big = [(1 << 24) + k for k in range(len(DOCS))]
    with pytest.raises(ValueError, match="out of range"):
        MasterIndex(MemoryStorage()).add(zip(big, fingerprints, strict=True))
    found = {}
    for layout in (ORIGINAL, IndexLayout(21, wide_ids=True)):
        index = MasterIndex(MemoryStorage(), layout=layout)
        numbers = big if layout.wide_ids else list(range(1, len(DOCS) + 1))
        index.add(zip(numbers, fingerprints, strict=True))
        copy = normalize(disguise.with_ads(DOCS[2].text)).tokens
        candidates = index.lookup(copy)
        votes = {**candidates.short_votes, **candidates.long_votes}
        found[layout] = max(votes, key=votes.get) - numbers[0]
        keys = index.plan(copy).keys
        assert max(int(k.rsplit(b":", 1)[1], 16) for k in keys) < 1 << layout.bucket_bits
    assert found == {ORIGINAL: 2, IndexLayout(21, wide_ids=True): 2}


@pytest.fixture()
def wide_settings(settings: Settings) -> Settings:
    return replace(settings, index_bucket_bits=18, index_wide_ids=True)


def test_an_index_is_built_with_the_settings_layout_and_read_with_its_own(runtime, wide_settings):
    built = MasterLibrary.from_runtime(Runtime(wide_settings))
    built.ingest(DOCS)
    assert built.index.stored_layout() == IndexLayout(18, wide_ids=True)
    # A process with the default settings reads the index with the layout it was built with.
    reader = MasterLibrary.from_runtime(runtime)
    assert reader.index.layout == IndexLayout(18, wide_ids=True)
    copy = disguise.homophones(CHAPTERS["big/04"], 0.05)
    assert [m.doc_id for m in reader.detector().check(copy)] == ["big/04"]


def test_a_rebuild_applies_a_new_layout_and_running_processes_follow_it(runtime, wide_settings):
    library = MasterLibrary.from_runtime(runtime)
    library.ingest(DOCS)
    assert library.index.stored_layout() == ORIGINAL
    crawl = library.detector()  # a long-lived process that opened the index before
    writer = MasterLibrary.from_runtime(runtime)  # another, which only writes
    copy = CHAPTERS["big/05"]
    assert [m.doc_id for m in crawl.check(copy)] == ["big/05"]

    other = MasterLibrary.from_runtime(Runtime(wide_settings))
    assert other.index.layout == ORIGINAL  # the settings do not change a built index
    assert other.rebuild_index(layout=IndexLayout(18, wide_ids=True)) == len(DOCS)
    assert library.index.stored_layout() == IndexLayout(18, wide_ids=True)
    keys = runtime.redis.keys(runtime.settings.redis_prefix + "ix:an*")  # the anchor tables
    assert keys and all(int(k.rsplit(b":", 1)[1], 16) < 1 << 18 for k in keys)

    # The old process plans with 2^16 buckets, notices the layout at its next fetch and
    # plans again: no silent miss.
    assert [m.doc_id for m in crawl.check(copy)] == ["big/05"]
    assert crawl.index.layout == IndexLayout(18, wide_ids=True)
    # Writes follow the stored layout too, once they hold the library's lock.
    assert writer.index.layout == ORIGINAL
    writer.ingest([MasterDocument("big/07", "big", "big/07", prose(seed=777, chars=3000))])
    assert [m.doc_id for m in other.detector().check(prose(seed=777, chars=3000))] == ["big/07"]


def test_an_index_built_before_layouts_were_recorded_has_the_original_one(runtime):
    library = MasterLibrary.from_runtime(runtime)
    library.ingest(DOCS)
    runtime.redis.delete(library.index.layout_key)
    assert library.index.stored_layout() == ORIGINAL
    wanted = replace(runtime.settings, index_bucket_bits=20)
    assert MasterLibrary.from_runtime(Runtime(wanted)).index.layout == ORIGINAL


def test_index_stats_tells_when_the_settings_ask_for_another_layout(
    cli_env, runtime, capsys, monkeypatch
):
    MasterLibrary.from_runtime(runtime).ingest(DOCS)
    monkeypatch.setenv("TRACKER_INDEX_BUCKET_BITS", "19")
    assert main(["index", "stats"]) == 0
    out = capsys.readouterr().out
    assert "layout:  2^16 buckets a table, 24-bit master numbers" in out
    assert "the settings ask for 2^19 buckets a table" in out
    assert main(["index", "rebuild"]) == 0
    assert "(2^19 buckets a table, 24-bit master numbers)" in capsys.readouterr().out
    assert MasterLibrary.from_runtime(runtime).index.layout == IndexLayout(19)
