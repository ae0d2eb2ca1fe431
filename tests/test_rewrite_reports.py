"""Independent reports of a news event against rewrites of it (issue 39, item 3).

The reports of ``tests/fixtures/rewrites_dev_hand/events.txt`` tell the master's event with
its names, places, numbers and some of its quotations, between scenes, people and background
of their own; its rewrites by hand (洗稿) retell the master. Each is aligned with its own
master alone, as :mod:`tracker.matching.rewrites` aligns a candidate; no servers.
"""

from __future__ import annotations

from dataclasses import replace

import pytest

from tests import rewrites_hand
from tracker.fingerprints.sentences import sentences_of
from tracker.matching.rewrite import RewriteAlignment, align_sentences, is_rewrite
from tracker.text.normalize import normalize

EVENTS = rewrites_hand.events()


def _aligned(page_text: str, master_text: str) -> RewriteAlignment:
    page, master = sentences_of(normalize(page_text)), sentences_of(normalize(master_text))
    return replace(align_sentences(page, master), page_total=int(page.lengths.sum()))


def test_the_events_set_has_reports_close_reports_and_rewrites():
    assert len(EVENTS) == 22
    assert all({"master", "report"} <= set(item) for item in EVENTS.values())
    assert sum("rewrite" in item for item in EVENTS.values()) == 10
    assert sum("close" in item for item in EVENTS.values()) == 4


@pytest.mark.parametrize("key", [k for k, v in EVENTS.items() if "rewrite" in v])
def test_the_rewrites_by_hand_of_the_events_are_rewrites(key):
    assert is_rewrite(_aligned(EVENTS[key]["rewrite"], EVENTS[key]["master"]))


@pytest.mark.xfail(
    strict=True,
    reason="13 of the 22 reports align as rewrites (wording 0.59-0.81). Two rules cleared 10 "
    "of them at no development recall (pairs apart on the page keep 0.66 of the wording; "
    "quotations repeated word for word are no evidence), but on the held-out set they "
    "cleared no innocent and lost 2 of 30 news rewrites by hand: not shipped "
    "(bench/results/rewrites-precision-h48.md)",
)
def test_independent_reports_of_the_events_are_not_rewrites():
    flagged = sorted(
        key for key, item in EVENTS.items() if is_rewrite(_aligned(item["report"], item["master"]))
    )
    assert flagged == []
