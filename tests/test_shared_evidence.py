"""Evidence several masters explain (formulas of a news library) against evidence of one's own."""

from __future__ import annotations

from tracker.matching.align import Passage, _alignment
from tracker.matching.shared import own_shares


def aligned(*spans: tuple[int, int]):
    return _alignment([Passage(a, b, a, b, b - a) for a, b in spans], 1000, 1000)


def never(a: int, b: int) -> bool:
    return False


def test_a_region_other_masters_cover_is_not_ones_own():
    shares = own_shares(
        {
            1: aligned((0, 100), (200, 300)),  # half of it is also master 2's
            2: aligned((50, 150)),
            3: aligned((500, 600)),  # alone
        },
        never,
    )
    assert shares[1] == 150 / 200
    assert shares[2] == 50 / 100
    assert shares[3] == 1.0


def test_versions_of_one_text_do_not_discount_each_other():
    alignments = {1: aligned((0, 100)), 2: aligned((0, 100)), 3: aligned((50, 100))}
    shares = own_shares(alignments, lambda a, b: {a, b} == {1, 2})
    assert shares[1] == shares[2] == 0.5  # each other's versions; 3 still shares half
    assert shares[3] == 0.0


def test_overlapping_passages_of_one_master_are_its_own():
    assert own_shares({1: aligned((0, 100), (50, 120))}, never) == {1: 1.0}
    assert own_shares({}, never) == {}
