"""Independent reports of a news event are not rewrites of the master (issue 39, item 3).

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
from tracker.matching.quotations import literal, quoted_units, without_quotations
from tracker.matching.rewrite import (
    MIN_SCATTERED_WORDING,
    MIN_WORDING,
    Pair,
    RewriteAlignment,
    align_sentences,
    is_rewrite,
    is_scattered,
    summary,
)
from tracker.text.normalize import normalize

EVENTS = rewrites_hand.events()


def _aligned(page_text: str, master_text: str, quotations: bool = True) -> RewriteAlignment:
    """``page_text`` aligned with ``master_text`` as the detector aligns it (the quotations
    repeated word for word taken out, unless ``quotations`` is False)."""
    page, master = normalize(page_text), normalize(master_text)
    pu, mu = sentences_of(page), sentences_of(master)
    found = align_sentences(pu, mu)
    if quotations:
        found = without_quotations(found, page, pu, master, mu)
    return replace(found, page_total=int(pu.lengths.sum()))


def test_a_report_whose_shared_facts_lie_among_sentences_of_its_own_is_no_rewrite():
    """Report 13 shares six sentences' facts with its master (the arrests, the seized
    phones and bank cards, the deputy director's quotation), between its own victim's story
    and an officer of its own: main took them for a rewrite (wording 0.59)."""
    found = _aligned(EVENTS["13"]["report"], EVENTS["13"]["master"])
    assert len(found.pairs) >= 5 and found.coverage >= 0.5
    assert is_scattered(found)
    assert MIN_WORDING <= found.wording < MIN_SCATTERED_WORDING
    assert not is_rewrite(found)
    # the same pairs in one passage of the page would be a rewrite: the rule is the scatter
    assert is_rewrite(replace(found, passage_pairs=len(found.pairs)))


def test_quotations_repeated_word_for_word_are_no_evidence_of_a_rewrite():
    """Report 14 quotes the deputy director word for word, as every report of the drought
    does; with that pair its wording passes the scattered floor, without it not."""
    report, master = EVENTS["14"]["report"], EVENTS["14"]["master"]
    with_quote = _aligned(report, master, quotations=False)
    found = _aligned(report, master)
    assert len(found.pairs) == len(with_quote.pairs) - 1
    assert with_quote.wording >= MIN_SCATTERED_WORDING > found.wording
    assert is_rewrite(with_quote) and not is_rewrite(found)


def test_most_independent_reports_of_the_events_are_not_rewrites():
    """Of the 22 reports as written, main took 13 for rewrites (against their own master
    alone); now 3 (05, 11, 15: a paragraph told in the master's order, a passage)."""
    flagged = sorted(
        key for key, item in EVENTS.items() if is_rewrite(_aligned(item["report"], item["master"]))
    )
    assert len(EVENTS) == 22
    assert len(flagged) <= 3, flagged


@pytest.mark.parametrize("key", [k for k, v in EVENTS.items() if "rewrite" in v])
def test_the_rewrites_by_hand_of_the_events_are_still_rewrites(key):
    found = _aligned(EVENTS[key]["rewrite"], EVENTS[key]["master"])
    assert is_rewrite(found)


def test_a_quotation_is_literal_only_word_for_word():
    said = "我们凌晨三点就上路了，先撒融雪剂，再用推雪机推。"
    swapped = "我们半夜三点便出发了，先撒融雪盐，再拿推雪车推。"  # a rewriter's quotation
    fold = lambda t: normalize(t).chars  # noqa: E731
    assert literal(fold(said), fold(said))
    assert literal(fold(said), fold("我们凌晨三点就上路了，先撒融雪剂，再用推雪机推"))
    assert not literal(fold(said), fold(swapped))
    text = normalize(f"记者在现场看到路面已经清出。“{said}”环卫工人牛秀芬说。")
    units = sentences_of(text)
    assert quoted_units(text, units).tolist() == [False, True, False]


def test_scattered_pairs_are_pairs_outside_one_passage():
    def pair(page: int, master: int) -> Pair:
        return Pair(page, page, master, master, 0.8, 0.7, True)

    text = "。".join(f"第{k}句说的是事情的第{k}个方面和有关的情况" for k in range(12)) + "。"
    units = sentences_of(normalize(text))
    together = summary([pair(k, k) for k in range(5)], units, units, 0, 0)
    spread = [pair(0, 0), pair(1, 1), pair(4, 2), pair(5, 3), pair(8, 4)]
    apart = summary(spread, units, units, 0, 0)
    assert not is_scattered(together)
    assert is_scattered(apart) and apart.passage_pairs == 2
