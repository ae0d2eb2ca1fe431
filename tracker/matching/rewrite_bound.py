"""How many aligned pairs a master *could* give a page, from the page's units and a sketch of
the master's (:mod:`tracker.fingerprints.unit_sketch`): a bound computed before the master is
loaded, so that the chance candidates of a large library (two rare word pairs in common) are
not loaded, rebuilt and aligned only to find nothing (:mod:`tracker.matching.rewrites`).

:func:`tracker.matching.rewrite.align_sentences` pairs a page unit ``p`` (or two adjacent
ones, a split sentence) with a master unit ``m`` (or two adjacent ones, merged) only at a
cosine, a Dice coefficient and a number of shared codes at least its extension thresholds,
and seeds at the higher seed thresholds. With ``s`` the codes of ``p`` whose 12 bits are
among ``m``'s in the sketch (a superset of ``p ∩ m``: a collision only adds to it):

* shared codes: ``|p ∩ m| ≤ s``;
* cosine: a code's weight is its canonical word's IDF, the same in both texts (the same
  lexicon made both: its stamp is in the sketch), so ``cos(p, m) = Σ_{c ∈ p ∩ m} w(c)² /
  (‖p‖ ‖m‖)``, at most the sum over those ``s`` codes over ``‖p‖`` times the sketch's norm
  of ``m`` (rounded down; of two merged units, the larger);
* Dice: ``2 |p ∩ m| / (|p| + |m|) ≤ 2 s / (|p| + |m|)`` (``|m|``: the sketch's count of the
  unit's codes; of two merged units, at least the larger).

Two units taken as one are bounded by the sums of their two bounds (a code in both counted
twice: larger, still a bound), with the exact norm and size of the page side's union.

A page unit is *eligible* when some master unit may pair with it at the extension
thresholds, or two master units merged at the seed thresholds, or it and a neighbour split
from one master unit at the seed thresholds; a *seed* unit when at the seed thresholds.
Every aligned pair's page units are eligible, and pairs share no page unit. The aligner keeps
pairs in groups of ``MIN_FRAGMENT_PAIRS`` whose neighbours on the page are at most
``MAX_GAP_UNITS`` apart; such a group lies in one run of eligible units so spaced, holding at
least as many units as the group has pairs, and holds a seed (an extended pair is next on the
page to a pair it extends, so to a seed by a chain inside the group). So the pairs kept are
at most the eligible units of the runs of ``MIN_FRAGMENT_PAIRS`` or more that hold a seed
unit. Likewise on the master's side: pairs share no master unit, and each of a pair's master
units is *eligible* (some page unit may pair with it, by the same tests, extension next to
eligible units on both sides), so the pairs are at most the eligible master units. The lesser
of the two, 0 when below ``MIN_FRAGMENT_PAIRS`` (no group is kept), is :func:`most_pairs`.
Below ``MIN_PAIRS`` the master cannot be a rewrite
(:func:`tracker.matching.rewrite.could_be_rewrite`); at 0 its alignment is empty, and
explains nothing that another master's could lose (:func:`tracker.matching.rewrite.own_pairs`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from tracker.fingerprints.sentences import Sentences, ranges
from tracker.fingerprints.unit_sketch import UnitSketch, code_bits
from tracker.matching.rewrite import (
    EXTEND_COSINE,
    EXTEND_DICE,
    EXTEND_MIN_SHARED,
    MAX_GAP_UNITS,
    MIN_FRAGMENT_PAIRS,
    MIN_SHARED,
    SEED_COSINE,
    SEED_DICE,
)

# Compared a hair lower, so that rounding never drops a pair the aligner's arithmetic passes.
_SLACK = 1 - 1e-9


def _passes(shared, inside, norms, sizes, cosine: float, dice: float, least: int) -> np.ndarray:
    """Pairs of ``shared`` codes at most, of squared weights ``inside`` at most, between
    sides whose norms multiply to ``norms`` and sizes add to ``sizes``, that may reach these
    thresholds."""
    return (
        (shared >= least)
        & (inside >= cosine * norms * _SLACK)
        & (2 * shared >= dice * sizes * _SLACK)
    )


@dataclass(frozen=True)
class PageSide:
    """What every bound of one page reads: its units, each entry's 12 bits and squared
    weight, and each unit taken as one with the next (:func:`_unions`)."""

    units: Sentences
    bits: np.ndarray  # uint16, an entry of units.flat
    weights2: np.ndarray  # float64, an entry
    union_norms: np.ndarray  # float64, a unit but the last: with the next one
    union_sizes: np.ndarray  # float64, likewise

    @classmethod
    def of(cls, units: Sentences) -> PageSide:
        flat = units.flat
        norms2, sizes = _unions(units)
        return cls(units, code_bits(flat.codes), flat.weights**2, np.sqrt(norms2), sizes)


def most_pairs(side: PageSide, among: np.ndarray, master: UnitSketch) -> int:
    """The most pairs :func:`tracker.matching.rewrite.align_sentences` can keep between the
    page's units ``among`` these (sorted) and the master sketched (the module's docstring)."""
    page = side.units
    flat = page.flat
    if len(among) < MIN_FRAGMENT_PAIRS or not len(master):
        return 0
    # the page's entries of the units among these, their units renumbered 0..len(among)
    row = np.full(len(page), -1, dtype=np.int64)
    row[among] = np.arange(len(among))
    at = flat.gather(among)
    # each page entry joined with the master units holding its 12 bits: (row, unit) counts
    page_bits = side.bits[at]
    lo = np.searchsorted(master.sorted_bits, page_bits, side="left")
    counts = np.searchsorted(master.sorted_bits, page_bits, side="right") - lo
    total = int(counts.sum())
    n, m = len(among), len(master)
    if total < MIN_FRAGMENT_PAIRS * EXTEND_MIN_SHARED:
        return 0  # not even two codes in each of three page units
    entry = np.repeat(at, counts)
    found = ranges(lo, counts)
    cell = row[flat.unit[entry]] * m + master.sorted_units[found]
    shared = np.bincount(cell, minlength=n * m).reshape(n, m)
    inside = np.bincount(cell, side.weights2[entry], minlength=n * m).reshape(n, m)
    pnorms = flat.norms[among][:, None]
    mnorms = master.norms[None, :]
    psizes = flat.sizes[among].astype(np.float64)[:, None]
    msizes = master.sizes.astype(np.float64)[None, :]
    sizes, norms = psizes + msizes, pnorms * mnorms
    weak = _passes(shared, inside, norms, sizes, EXTEND_COSINE, EXTEND_DICE, EXTEND_MIN_SHARED)
    seeds = _passes(shared, inside, norms, sizes, SEED_COSINE, SEED_DICE, MIN_SHARED)
    rows, cols = seeds.any(axis=1), seeds.any(axis=0)
    if m > 1:  # a page unit with two adjacent master units merged
        merged = _passes(
            shared[:, :-1] + shared[:, 1:],
            inside[:, :-1] + inside[:, 1:],
            pnorms * np.maximum(mnorms[:, :-1], mnorms[:, 1:]),
            psizes + np.maximum(msizes[:, :-1], msizes[:, 1:]),
            SEED_COSINE,
            SEED_DICE,
            MIN_SHARED,
        )
        rows |= merged.any(axis=1)
        either = merged.any(axis=0)
        cols[:-1] |= either
        cols[1:] |= either
    next_to = among[1:] == among[:-1] + 1  # page units next to one another in the text
    if n > 1:  # two adjacent page units split from one master unit
        pick = np.minimum(among[:-1], len(page) - 2)  # the last unit has no next: masked
        split = next_to[:, None] & _passes(
            shared[:-1] + shared[1:],
            inside[:-1] + inside[1:],
            side.union_norms[pick][:, None] * mnorms,
            side.union_sizes[pick][:, None] + msizes,
            SEED_COSINE,
            SEED_DICE,
            MIN_SHARED,
        )
        either = split.any(axis=1)
        rows[:-1] |= either
        rows[1:] |= either
        cols |= split.any(axis=0)
    if not rows.any():
        return 0  # no seed: nothing to extend
    seeded = rows.copy()
    # Extension: a pair next to used units on both sides, as the aligner extends (it also
    # wants them unused: without that, this adds at least what it adds).
    while True:
        near_rows = np.zeros(n, dtype=bool)
        near_rows[1:] |= rows[:-1] & next_to
        near_rows[:-1] |= rows[1:] & next_to
        near_cols = np.zeros(m, dtype=bool)
        near_cols[1:] |= cols[:-1]
        near_cols[:-1] |= cols[1:]
        added = weak & near_rows[:, None] & near_cols[None, :]
        new_rows, new_cols = rows | added.any(axis=1), cols | added.any(axis=0)
        if (new_rows == rows).all() and (new_cols == cols).all():
            break
        rows, cols = new_rows, new_cols
    # each pair holds master units of its own, all among ``cols`` (the module's docstring)
    most = min(_in_runs(among[rows], among[seeded]), int(cols.sum()))
    return most if most >= MIN_FRAGMENT_PAIRS else 0


def _unions(page: Sentences) -> tuple[np.ndarray, np.ndarray]:
    """Squared norm and size of each unit but the last taken as one with the next (the union
    of their codes; a code both hold counted once, with the first's weight)."""
    flat, n = page.flat, len(page)
    if n < 2:
        return np.zeros(0), np.zeros(0)
    # each entry whose code the unit before also holds (a unit's codes are distinct)
    order = np.lexsort((flat.unit, flat.codes))
    codes, units = flat.codes[order], flat.unit[order]
    again = np.zeros(len(order), dtype=bool)
    again[order[1:]] = (codes[1:] == codes[:-1]) & (units[1:] == units[:-1] + 1)
    new = ~again
    added2 = np.bincount(flat.unit[new], flat.weights[new] ** 2, minlength=n)
    added = np.bincount(flat.unit[new], minlength=n)
    norms2 = flat.norms[:-1] ** 2 + added2[1:]
    sizes = flat.sizes[:-1] + added[1:]
    return norms2, sizes.astype(np.float64)


def _in_runs(eligible: np.ndarray, seeds: np.ndarray) -> int:
    """The eligible units (sorted) in runs of ``MIN_FRAGMENT_PAIRS`` or more, neighbours at
    most ``MAX_GAP_UNITS`` apart, that hold a seed unit."""
    if len(eligible) < MIN_FRAGMENT_PAIRS or not len(seeds):
        return 0
    starts = np.flatnonzero(np.r_[True, np.diff(eligible) > MAX_GAP_UNITS])
    ends = np.r_[starts[1:], len(eligible)]
    # a run holds a seed when one lies between its first and last unit (seeds are eligible)
    first, last = eligible[starts], eligible[ends - 1]
    seeded = np.searchsorted(seeds, last, side="right") > np.searchsorted(seeds, first)
    sizes = ends - starts
    return int(sizes[(sizes >= MIN_FRAGMENT_PAIRS) & seeded].sum())
