"""The issue 39 "Done when", on the held-out set of :mod:`tests.heldout`: rewritten copies of
30 news articles and 20 chapters written by hand for it, made by hand and with tools the
detector never saw (its own swap table, the cnsyn thesaurus, fillers until no 13 / 8
characters in a row are shared), partial copies inside other text, and 450 innocents (300 of
them through the same tools). The full set is checked here (the same as
``python -m bench.rewrites_heldout``); the set is never changed after seeing results.

Thresholds (the issue's): recall ≥ 0.95 per kind for every row up to no shared run of 13
characters, whether the swaps came from the table or the thesaurus; ≥ 0.90 with no shared run
of 8; partial copies ≥ 0.95; 0 innocents flagged; 0 wrong ids."""

from __future__ import annotations

import uuid
from dataclasses import replace

import pytest

from tests import heldout
from tracker.matching.library import MasterLibrary
from tracker.model import MasterDocument
from tracker.servers.runtime import Runtime

# Measured once on main's detector (0667f73) before any merge of the detector's tuning
# (bench/results/rewrites-heldout.md); the coordinator re-runs these on the merged detector.
_ON_MAIN = "measured on main 0667f73, then after its tuning merged (f5f0522): "


def test_the_set_is_as_documented():
    """Counts and lengths; no13/no8 copies share no run of 13/8 characters; no innocent
    shares more than a short quotation with any master."""
    worst = heldout.check_set()
    assert max(worst.values()) <= heldout.QUOTE_LIMIT
    assert worst["report table-no8"] < 8 and worst["report table-no13"] < 13


def test_the_longest_common_run():
    assert heldout.longest_common_run("甲乙丙丁戊己", "丙丁戊") == 3
    assert heldout.longest_common_run("一二三，四五", "三四五六") == 3  # punctuation left out
    assert heldout.longest_common_run("abc", "xyz") == 0


@pytest.fixture(scope="module")
def measured(server_settings):
    tag = uuid.uuid4().hex[:10]
    settings = replace(server_settings, mongo_db=f"test_{tag}", redis_prefix=f"test{tag}:")
    runtime = Runtime(settings)
    try:
        library = MasterLibrary.from_runtime(runtime)
        library.ingest([MasterDocument(it.id, it.kind, it.id, it.master) for it in heldout.items()])
        yield heldout.measure(library.detector().check_many)
    finally:
        runtime.mongo.drop_database(settings.mongo_db)
        for key in runtime.redis.scan_iter(match=settings.redis_prefix + "*", count=1000):
            runtime.redis.delete(key)
        runtime.close()


def _low(measured, rows, need):
    return [
        (r["kind"], r["row"], r["recall"], r["missed"])
        for r in measured["rows"]
        if r["row"] in rows and r["recall"] < need
    ]


@pytest.mark.xfail(
    strict=False,
    reason=_ON_MAIN + "news hand 0.87 (26/30; n02 n08 n17 n30 missed) both times, chapter hand "
    "0.95 then 1.00, news thesaurus-no13 0.97, every table row 1.00",
)
def test_every_kind_is_found_up_to_no_shared_run_of_13(measured):
    assert not _low(measured, heldout.UP_TO_NO13, 0.95)


@pytest.mark.xfail(
    strict=False,
    reason=_ON_MAIN + "news thesaurus-no8 0.87 (26/30), chapter thesaurus-no8 1.00, "
    "table-no8 1.00 / 1.00",
)
def test_copies_with_no_shared_run_of_8_are_found(measured):
    assert not _low(measured, heldout.NO8, 0.90)


@pytest.mark.xfail(
    strict=False,
    reason=_ON_MAIN + "partial-hand 0.35 then 0.70 then 0.75 (15/20, h44: a passage from 0.2 "
    "of the master), partial-table-no8 0.75 then 0.95",
)
def test_partial_rewrites_inside_other_text_are_found(measured):
    assert not _low(measured, heldout.PARTIAL, 0.95)


def test_no_wrong_ids(measured):
    assert [w for r in measured["rows"] for w in r["wrong"]] == []


@pytest.mark.xfail(
    strict=False,
    reason=_ON_MAIN + "27, then 25, then 10 of 450 flagged (h43: the master's own wording "
    "must be kept), all as rewrites of the news master an independent report of the same "
    "event tells, written from the same release in the same order",
)
def test_no_innocent_is_flagged(measured):
    innocents = measured["innocents"]
    assert innocents["n"] >= 450 and innocents["rewritten"] >= 300
    assert innocents["examples"] == []
