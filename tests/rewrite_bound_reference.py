"""The rewrite stage's pair bound computed one candidate at a time, as
:mod:`tracker.matching.rewrite_bound` did before it bounded a batch at once
(:func:`tracker.matching.rewrite_bound.most_pairs_of`): a reference the batched arithmetic is
tested against (tests/test_rewrite_bound.py). Kept as written then (one matrix a candidate,
its neighbours read by slicing), reading the same :class:`PageSide`."""

from __future__ import annotations

import numpy as np

from tracker.fingerprints.sentences import ranges
from tracker.fingerprints.unit_sketch import UnitSketch
from tracker.matching.rewrite import (
    EXTEND_COSINE,
    EXTEND_DICE,
    EXTEND_MIN_SHARED,
    GAP_COSINE,
    GAP_DICE,
    GAP_MIN_SHARED,
    MAX_GAP_UNITS,
    MIN_FRAGMENT_PAIRS,
    MIN_PAIRS,
    MIN_SHARED,
    SEED_COSINE,
    SEED_DICE,
)
from tracker.matching.rewrite_bound import PageSide

_SLACK = 1 - 1e-9


def _passes(shared, inside, norms, sizes, cosine: float, dice: float, least: int) -> np.ndarray:
    return (
        (shared >= least)
        & (inside >= cosine * norms * _SLACK)
        & (2 * shared >= dice * sizes * _SLACK)
    )


def most_pairs(side: PageSide, among: np.ndarray, master: UnitSketch) -> int:
    """The bound of the page's units ``among`` (sorted) against the master sketched."""
    return _bound(side, among, master)[0]


def most_matched(side: PageSide, among: np.ndarray, master: UnitSketch) -> int:
    """:func:`most_pairs`, lowered where it is ``MIN_PAIRS`` or more to the largest set of
    cells (page unit, master unit) that pass, one a unit, in the kept runs, each run of them
    holding ``MIN_FRAGMENT_PAIRS`` (found by trying every set, largest first)."""
    most, edges, runs = _bound(side, among, master)
    if most < MIN_PAIRS:
        return most
    in_runs = [e for run in runs for e in edges if e[0] in run]
    kept = [
        e
        for run in runs
        if _largest(e for e in in_runs if e[0] in run) >= MIN_FRAGMENT_PAIRS
        for e in in_runs
        if e[0] in run
    ]
    matched = _largest(kept)
    return min(most, matched if matched >= MIN_FRAGMENT_PAIRS else 0)


def _largest(edges) -> int:
    """The most edges (row, column) of which no two share a row or a column: a maximum flow
    through a dense matrix, shortest augmenting paths found breadth first (Edmonds-Karp)."""
    edges = sorted(set(edges))
    rows = sorted({r for r, _ in edges})
    cols = sorted({c for _, c in edges})
    joined = np.zeros((len(rows), len(cols)), dtype=bool)
    for r, c in edges:
        joined[rows.index(r), cols.index(c)] = True
    row_of_col = [-1] * len(cols)
    col_of_row = [-1] * len(rows)
    flow = 0
    while True:
        # breadth first from every free row, alternating free edges and matched ones
        parent = {("r", i): None for i in range(len(rows)) if col_of_row[i] < 0}
        queue, end = list(parent), None
        while queue and end is None:
            kind, i = queue.pop(0)
            for j in np.flatnonzero(joined[i]).tolist():
                if ("c", j) in parent:
                    continue
                parent[("c", j)] = (kind, i)
                if row_of_col[j] < 0:
                    end = j
                    break
                parent[("r", row_of_col[j])] = ("c", j)
                queue.append(("r", row_of_col[j]))
        if end is None:
            return flow
        node = ("c", end)
        while node is not None:  # flip the path
            row = parent[node]
            col_of_row[row[1]], row_of_col[node[1]] = node[1], row[1]
            node = parent[row]
        flow += 1


def _bound(side: PageSide, among: np.ndarray, master: UnitSketch):
    """The bound; the cells a pair may start at (page unit, master unit: eligible, passing
    alone, or the first of a passing split or merge); the kept runs (sets of page units)."""
    page = side.units
    flat = page.flat
    if len(among) < MIN_FRAGMENT_PAIRS or not len(master):
        return 0, [], []
    row = np.full(len(page), -1, dtype=np.int64)
    row[among] = np.arange(len(among))
    at = flat.gather(among)
    page_bits = side.bits[at]
    lo = np.searchsorted(master.sorted_bits, page_bits, side="left")
    counts = np.searchsorted(master.sorted_bits, page_bits, side="right") - lo
    total = int(counts.sum())
    n, m = len(among), len(master)
    if total < MIN_FRAGMENT_PAIRS * EXTEND_MIN_SHARED:
        return 0, [], []
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
    gapped = _passes(shared, inside, norms, sizes, GAP_COSINE, GAP_DICE, GAP_MIN_SHARED)
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
    next_to = among[1:] == among[:-1] + 1
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
        return 0, [], []
    seeded = rows.copy()
    every_col = np.ones(max(m - 1, 0), dtype=bool)  # a master's units are all neighbours
    while True:  # extension next to used units on both sides, and between two
        near_rows = np.zeros(n, dtype=bool)
        near_rows[1:] |= rows[:-1] & next_to
        near_rows[:-1] |= rows[1:] & next_to
        near_cols = np.zeros(m, dtype=bool)
        near_cols[1:] |= cols[:-1]
        near_cols[:-1] |= cols[1:]
        added = weak & near_rows[:, None] & near_cols[None, :]
        added |= gapped & _both(rows, next_to)[:, None] & _both(cols, every_col)[None, :]
        new_rows, new_cols = rows | added.any(axis=1), cols | added.any(axis=0)
        if (new_rows == rows).all() and (new_cols == cols).all():
            break
        rows, cols = new_rows, new_cols
    most = min(_in_runs(among[rows], among[seeded]), int(cols.sum()))
    starts_of = weak | (gapped & _both(rows, next_to)[:, None] & _both(cols, every_col)[None, :])
    if m > 1:
        starts_of[:, :-1] |= merged
    if n > 1:
        starts_of[:-1] |= split
    edges = [
        (int(among[i]), int(j))
        for i, j in zip(*np.nonzero(starts_of), strict=True)
        if rows[i] and cols[j]
    ]
    return (most if most >= MIN_FRAGMENT_PAIRS else 0), edges, _runs(among[rows], among[seeded])


def _both(marked: np.ndarray, next_to: np.ndarray) -> np.ndarray:
    """Whether both neighbours of each place are ``marked`` (and are its neighbours)."""
    both = np.zeros(len(marked), dtype=bool)
    both[1:-1] = marked[:-2] & next_to[:-1] & marked[2:] & next_to[1:]
    return both


def _in_runs(eligible: np.ndarray, seeds: np.ndarray) -> int:
    if len(eligible) < MIN_FRAGMENT_PAIRS or not len(seeds):
        return 0
    starts = np.flatnonzero(np.r_[True, np.diff(eligible) > MAX_GAP_UNITS])
    ends = np.r_[starts[1:], len(eligible)]
    first, last = eligible[starts], eligible[ends - 1]
    seeded = np.searchsorted(seeds, last, side="right") > np.searchsorted(seeds, first)
    sizes = ends - starts
    return int(sizes[(sizes >= MIN_FRAGMENT_PAIRS) & seeded].sum())


def _runs(eligible: np.ndarray, seeds: np.ndarray) -> list[set[int]]:
    """The runs :func:`_in_runs` counts, as sets of page units."""
    runs, run = [], []
    for u in [*eligible.tolist(), None]:
        if run and (u is None or u - run[-1] > MAX_GAP_UNITS):
            if len(run) >= MIN_FRAGMENT_PAIRS and set(run) & set(seeds.tolist()):
                runs.append(set(run))
            run = []
        if u is not None:
            run.append(u)
    return runs
