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
from one master unit at the seed thresholds, or at the gap thresholds when both its
neighbours and both the master unit's are eligible (a pair between two pairs); a *seed* unit
when at the seed thresholds.
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

Where that allows ``MIN_PAIRS``, it is lowered by a matching: each kept pair starts at a cell
(its first page unit, its first master unit) that passes alone at the extension thresholds
(or the gap ones, between eligible units on both sides),
or as the first of a split or merge at the seed ones, both units eligible, the page unit in
a kept run; pairs share no unit, so those cells are a matching of the passing cells. A run
whose passing cells match fewer than ``MIN_FRAGMENT_PAIRS`` holds no kept group; the
maximum matching of the other runs' cells is at least the pairs kept (chance candidates of
a large library: two or three scattered sentences in common, each passing with several
master units).
Below ``MIN_PAIRS`` the master cannot be a rewrite
(:func:`tracker.matching.rewrite.could_be_rewrite`); at 0 its alignment is empty, and
explains nothing that another master's could lose (:func:`tracker.matching.rewrite.own_pairs`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from tracker.fingerprints.sentences import Sentences, ranges
from tracker.fingerprints.unit_sketch import BITS, UnitSketch, code_bits
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

# Compared a hair lower, so that rounding never drops a pair the aligner's arithmetic passes.
_SLACK = 1 - 1e-9
_NONE = np.zeros(0, dtype=np.int64)
_MOST_MATCHED = 200  # rows or columns above which a matching is bounded by their number
# the fewest shared codes of a cell that may pass a test alone or with its neighbour
_FEWEST = min(EXTEND_MIN_SHARED, GAP_MIN_SHARED, MIN_SHARED, (MIN_SHARED + 1) // 2)


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
    union_norms: np.ndarray  # float64, a unit: with the next one (0 for the last)
    union_sizes: np.ndarray  # float64, likewise

    @classmethod
    def of(cls, units: Sentences) -> PageSide:
        flat = units.flat
        norms2, sizes = _unions(units)
        last = np.zeros(min(1, len(units)))
        norms, sizes = np.append(np.sqrt(norms2), last), np.append(sizes, last)
        return cls(units, code_bits(flat.codes), flat.weights**2, norms, sizes)


def most_pairs(side: PageSide, among: np.ndarray, master: UnitSketch) -> int:
    """The most pairs :func:`tracker.matching.rewrite.align_sentences` can keep between the
    page's units ``among`` these (sorted) and the master sketched (the module's docstring)."""
    return most_pairs_of([(side, among, master)])[0]


def most_pairs_of(
    bounded: Sequence[tuple[PageSide, np.ndarray, UnitSketch]], matched: bool = True
) -> list[int]:
    """:func:`most_pairs` of each (page, its units, master) at once: one set of array
    operations for a batch's candidates, not one for each. ``matched``: a bound of
    ``MIN_PAIRS`` or more is lowered to the matching bound (:func:`_matched`).

    Every candidate's page units ``among`` are rows, its master's units columns, and its
    ``rows × cols`` matrix is laid out flat after the previous candidate's; neighbours (a split,
    a merge, an extension) are taken inside one candidate's rows and columns only."""
    if not bounded:
        return []
    # the pages' arrays end to end (a page bounded with several masters once)
    sides: dict[int, int] = {}
    for side, _, _ in bounded:
        sides.setdefault(id(side), len(sides))
    pages = list({id(s): s for s, _, _ in bounded}.values())
    page_units = np.array([len(s.units) for s in pages], dtype=np.int64)
    unit_at = _offsets(page_units)
    entry_at = _offsets(np.array([len(s.bits) for s in pages], dtype=np.int64))
    starts = [s.units.flat.ptr[:-1] + e for s, e in zip(pages, entry_at[:-1], strict=True)]
    ptr = np.concatenate([*starts, entry_at[-1:]])
    bits = np.concatenate([s.bits for s in pages])
    weights2 = np.concatenate([s.weights2 for s in pages])
    unit_norms = np.concatenate([s.units.flat.norms for s in pages])
    unit_sizes = np.concatenate([s.units.flat.sizes for s in pages]).astype(np.float64)
    # each unit taken with the next; the last of a page has none (0, never read: not next_to)
    union_norms = np.concatenate([s.union_norms for s in pages])
    union_sizes = np.concatenate([s.union_sizes for s in pages])

    k = len(bounded)
    among = [np.asarray(a, dtype=np.int64) for _, a, _ in bounded]
    n = np.array([len(a) for a in among], dtype=np.int64)
    m = np.array([len(sk) for _, _, sk in bounded], dtype=np.int64)
    # rows: every candidate's page units (global unit numbers), candidate after candidate
    unit = np.concatenate(
        [a + unit_at[sides[id(s)]] for (s, _, _), a in zip(bounded, among, strict=True)] + [_NONE]
    )
    item_of_row = np.repeat(np.arange(k), n)
    m_of_row = m[item_of_row]
    row_cell = _offsets(m_of_row)  # each row's first cell
    cells = int(row_cell[-1])
    col_at = _offsets(m)
    col_of_row = col_at[:-1][item_of_row]  # each row's candidate's first column
    item_of_col = np.repeat(np.arange(k), m)

    # each page entry joined with the master units holding its 12 bits (keys: candidate, bits)
    counts_of_row = ptr[unit + 1] - ptr[unit]
    at = ranges(ptr[unit], counts_of_row)
    entry_row = np.repeat(np.arange(len(unit)), counts_of_row)
    span = np.int64(1 << BITS)
    keys = item_of_row[entry_row] * span + bits[at].astype(np.int64)
    sketch_keys = np.concatenate(
        [i * span + sk.sorted_bits.astype(np.int64) for i, (_, _, sk) in enumerate(bounded)]
        + [_NONE]
    )
    sketch_cols = np.concatenate(
        [sk.sorted_units + col_at[i] for i, (_, _, sk) in enumerate(bounded)] + [_NONE]
    )
    # (the sketches' keys sorted: each key's first place and count, by key, in a table)
    per_key = np.bincount(sketch_keys, minlength=k * span)
    lo, counts = _offsets(per_key)[keys], per_key[keys]
    totals = np.bincount(item_of_row[entry_row], counts, minlength=k)
    entry = np.repeat(np.arange(len(at)), counts)
    found = ranges(lo, counts)
    row = entry_row[entry]
    cell = row_cell[row] + sketch_cols[found] - col_of_row[row]
    shared = np.bincount(cell, minlength=cells)
    inside = np.bincount(cell, weights2[at[entry]], minlength=cells)

    # Only the cells sharing ``_FEWEST`` codes or more are read below: every test of a cell
    # fails with fewer, and two cells taken as one share MIN_SHARED only if one of them does.
    touched = np.flatnonzero(shared >= _FEWEST)
    master_norms = np.concatenate([sk.norms for _, _, sk in bounded] + [np.zeros(0)])
    master_sizes = np.concatenate([sk.sizes for _, _, sk in bounded] + [_NONE]).astype(np.float64)
    row_norms, row_sizes = unit_norms[unit], unit_sizes[unit]

    def place(c: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The row and (batch) column of each cell ``c``."""
        r = np.searchsorted(row_cell, c, side="right") - 1
        return r, col_of_row[r] + c - row_cell[r]

    r, c = place(touched)
    pnorms, psizes = row_norms[r], row_sizes[r]
    mnorms, msizes = master_norms[c], master_sizes[c]
    sizes, norms = psizes + msizes, pnorms * mnorms
    s, w = shared[touched], inside[touched]
    weak = _passes(s, w, norms, sizes, EXTEND_COSINE, EXTEND_DICE, EXTEND_MIN_SHARED)
    gapped = _passes(s, w, norms, sizes, GAP_COSINE, GAP_DICE, GAP_MIN_SHARED)
    seeds = _passes(s, w, norms, sizes, SEED_COSINE, SEED_DICE, MIN_SHARED)
    rows = _marked(r[seeds], len(unit))
    cols = _marked(c[seeds], len(item_of_col))
    # a page unit with two adjacent master units merged: a cell and the next of its row
    pair = _cells(cells, touched, touched[touched > 0] - 1)
    pr, pc = place(pair)
    pair_end = pair + 1 < row_cell[pr + 1]  # the next cell is in the same row
    pair, pr, pc = pair[pair_end], pr[pair_end], pc[pair_end]
    merged = _passes(
        shared[pair] + shared[pair + 1],
        inside[pair] + inside[pair + 1],
        row_norms[pr] * np.maximum(master_norms[pc], master_norms[pc + 1]),
        row_sizes[pr] + np.maximum(master_sizes[pc], master_sizes[pc + 1]),
        SEED_COSINE,
        SEED_DICE,
        MIN_SHARED,
    )
    rows[pr[merged]] = True
    cols[pc[merged]] = True
    cols[pc[merged] + 1] = True
    # two adjacent page units split from one master unit: a cell and the one below it
    next_to = (unit[1:] == unit[:-1] + 1) & (item_of_row[1:] == item_of_row[:-1])
    has_below = np.append(next_to, False)
    above = r > 0
    above[above] = has_below[r[above] - 1]  # the row above is this one's page neighbour
    below = _cells(cells, touched[has_below[r]], touched[above] - m_of_row[r[above]])
    br, bc = place(below)
    under = below + m_of_row[br]
    split = _passes(
        shared[below] + shared[under],
        inside[below] + inside[under],
        union_norms[unit][br] * master_norms[bc],
        union_sizes[unit][br] + master_sizes[bc],
        SEED_COSINE,
        SEED_DICE,
        MIN_SHARED,
    )
    rows[br[split]] = True
    rows[br[split] + 1] = True
    cols[bc[split]] = True
    seeded = rows.copy()
    # Extension: a pair next to used units on both sides, as the aligner extends (it also
    # wants them unused: without that, this adds at least what it adds), until none is added;
    # then a pair between two, at the gap thresholds (eligible units on both sides of both
    # its units; the cells passing the extension thresholds are next to them already), and
    # again. The order makes no difference to where it ends (each rule only adds), and the
    # gap rule is read once for most candidates.
    next_col = item_of_col[1:] == item_of_col[:-1]
    weak_rows, weak_cols = r[weak], c[weak]
    gap_only = gapped & ~weak
    gap_rows, gap_cols = r[gap_only], c[gap_only]
    while True:
        while True:
            near_rows, near_cols = _beside(rows, next_to), _beside(cols, next_col)
            added = near_rows[weak_rows] & near_cols[weak_cols]
            new_rows, new_cols = rows.copy(), cols.copy()
            new_rows[weak_rows[added]] = True
            new_cols[weak_cols[added]] = True
            if (new_rows == rows).all() and (new_cols == cols).all():
                break
            rows, cols = new_rows, new_cols
        if not len(gap_rows):
            break
        between = _between(rows, next_to)[gap_rows] & _between(cols, next_col)[gap_cols]
        between &= ~(rows[gap_rows] & cols[gap_cols])  # a cell adding a unit
        if not between.any():
            break
        rows[gap_rows[between]] = True
        cols[gap_cols[between]] = True
    # each pair holds master units of its own, all among ``cols`` (the module's docstring)
    runs, run_of_row = _in_runs_of(unit, item_of_row, rows, seeded, k)
    most = np.minimum(runs, np.bincount(item_of_col[cols], minlength=k))
    # no bound is made below these (nothing could be kept): 0
    ruled_out = (
        (n < MIN_FRAGMENT_PAIRS)
        | (m == 0)
        | (totals < MIN_FRAGMENT_PAIRS * EXTEND_MIN_SHARED)
        | (np.bincount(item_of_row[seeded], minlength=k) == 0)
        | (most < MIN_FRAGMENT_PAIRS)
    )
    bounds = [0 if out else int(v) for v, out in zip(most, ruled_out, strict=True)]
    if not matched:
        return bounds
    # the cells a pair may take (its first page and master unit), in the kept runs
    between = gap_only & _between(rows, next_to)[r] & _between(cols, next_col)[c]
    edge_rows = np.concatenate([r[weak], r[between], pr[merged], br[split]])
    edge_cols = np.concatenate([c[weak], c[between], pc[merged], bc[split]])
    inside_runs = (run_of_row[edge_rows] >= 0) & cols[edge_cols]
    edge_rows, edge_cols = edge_rows[inside_runs], edge_cols[inside_runs]
    edge_item = item_of_row[edge_rows]
    for item in np.flatnonzero(np.array(bounds) >= MIN_PAIRS).tolist():
        mine = edge_item == item
        runs_edges = run_of_row[edge_rows[mine]].tolist()
        most_matched = _matched(runs_edges, edge_rows[mine].tolist(), edge_cols[mine].tolist())
        bounds[item] = min(bounds[item], most_matched)
    return bounds


def _matched(runs: list[int], rows: list[int], cols: list[int]) -> int:
    """The most pairs of a candidate whose pairs may each take the cell (its first page unit,
    its first master unit) of an edge ``rows[e], cols[e]`` of the run ``runs[e]``: pairs share
    no unit, so the cells of the pairs kept are a matching of those edges; a group of
    ``MIN_FRAGMENT_PAIRS`` pairs lies in one run (the module's docstring), so a run matching
    fewer holds no kept pair. The maximum matching of the other runs' edges, together (one
    master unit is not used in two runs); 0 below ``MIN_FRAGMENT_PAIRS``."""
    by_run: dict[int, list[tuple[int, int]]] = {}
    for run, row, col in zip(runs, rows, cols, strict=True):
        by_run.setdefault(run, []).append((row, col))
    kept = [e for edges in by_run.values() if _matching(edges) >= MIN_FRAGMENT_PAIRS for e in edges]
    most = _matching(kept)
    return most if most >= MIN_FRAGMENT_PAIRS else 0


def _matching(edges: list[tuple[int, int]]) -> int:
    """The size of a maximum matching of the bipartite ``edges`` (row, column): Kuhn's
    augmenting paths (a candidate's edges are a few dozen); at most the rows or columns."""
    adjacent: dict[int, list[int]] = {}
    for row, col in edges:
        adjacent.setdefault(row, []).append(col)
    most = min(len(adjacent), len({col for _, col in edges}))
    if most > _MOST_MATCHED:
        return most  # at most that (and the paths would be deep)
    owner: dict[int, int] = {}  # column -> its row

    def augment(row: int, seen: set[int]) -> bool:
        for col in adjacent[row]:
            if col not in seen:
                seen.add(col)
                if col not in owner or augment(owner[col], seen):
                    owner[col] = row
                    return True
        return False

    return sum(augment(row, set()) for row in adjacent)


def _beside(marked: np.ndarray, next_to: np.ndarray) -> np.ndarray:
    """Whether a neighbour of each place is ``marked`` (``next_to``: whether each two
    consecutive places are neighbours)."""
    near = np.zeros(len(marked), dtype=bool)
    near[1:] |= marked[:-1] & next_to
    near[:-1] |= marked[1:] & next_to
    return near


def _between(marked: np.ndarray, next_to: np.ndarray) -> np.ndarray:
    """Whether both neighbours of each place are ``marked`` (``next_to`` as for
    :func:`_beside`)."""
    both = np.zeros(len(marked), dtype=bool)
    both[1:-1] = marked[:-2] & next_to[:-1] & marked[2:] & next_to[1:]
    return both


def _marked(at: np.ndarray, length: int) -> np.ndarray:
    """A mask of ``length`` True at ``at``."""
    mask = np.zeros(length, dtype=bool)
    mask[at] = True
    return mask


def _cells(cells: int, *marked: np.ndarray) -> np.ndarray:
    """The cells of any of ``marked``, sorted and distinct."""
    return np.flatnonzero(_marked(np.concatenate(marked), cells))


def _offsets(counts: np.ndarray) -> np.ndarray:
    """Where each of ``counts`` things starts, and the total (``len(counts) + 1``)."""
    out = np.zeros(len(counts) + 1, dtype=np.int64)
    np.cumsum(counts, out=out[1:])
    return out


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


def _in_runs_of(
    unit: np.ndarray, item: np.ndarray, eligible: np.ndarray, seeded: np.ndarray, k: int
) -> tuple[np.ndarray, np.ndarray]:
    """For each of ``k`` candidates, its eligible page units (rows ``unit`` of candidate
    ``item``, sorted within each) in runs of ``MIN_FRAGMENT_PAIRS`` or more, neighbours at most
    ``MAX_GAP_UNITS`` apart, that hold a seeded unit (seeded units are eligible); and the run
    of each row in such a run (-1 for the others)."""
    run_of_row = np.full(len(unit), -1, dtype=np.int64)
    at = np.flatnonzero(eligible)
    if not len(at):
        return np.zeros(k, dtype=np.int64), run_of_row
    units, items = unit[at], item[at]
    starts = np.flatnonzero(
        np.append(True, (np.diff(units) > MAX_GAP_UNITS) | (items[1:] != items[:-1]))
    )
    sizes = np.diff(np.append(starts, len(at)))
    seeds = np.add.reduceat(seeded[at].astype(np.int64), starts)
    kept = (sizes >= MIN_FRAGMENT_PAIRS) & (seeds > 0)
    run_of_row[at] = np.where(np.repeat(kept, sizes), np.repeat(np.arange(len(starts)), sizes), -1)
    most = np.bincount(items[starts], np.where(kept, sizes, 0), minlength=k).astype(np.int64)
    return most, run_of_row
