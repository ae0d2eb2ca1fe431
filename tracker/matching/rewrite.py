"""Rewritten copies (洗稿): the page's sentences aligned with a master's, words swapped.

A rewriter keeps the story and changes the words: synonyms, connectives, fillers, cut
clauses, sentences split, merged or re-ordered, sentences of its own. The verbatim detector's
shingles do not survive that; the sentences do. The alignment follows the seed–extend–filter
text aligner of Sanchez-Perez, Sidorov and Gelbukh ("A Winning Approach to Text Alignment for
Text Reuse Detection at PAN 2014", CLEF 2014), on the canonical words of
:mod:`tracker.fingerprints.sentences` rather than raw ones:

1. **Seeds.** Every page unit is compared with every master unit as vectors of their codes,
   weighted by IDF: a pair is a seed when the cosine is at least ``SEED_COSINE`` *and* the
   Dice coefficient of the code sets at least ``SEED_DICE`` (the two agreeing, as in the PAN
   2014 system: cosine alone is fooled by one rare shared name, Dice alone by many common
   words), sharing ``MIN_SHARED`` codes, with a Dice of ``SEED_COMMON_DICE`` over the codes
   that are no anchor (two reports of one event share its names and numbers, not how they
   say the rest), and no *conflict*: when both units hold anchors, they share one (two
   reports of two events in one agency's formulas say the same of other names, places and
   numbers). Seeds are taken best first, each unit once, in any order.
2. **Split and merged sentences.** A master unit left over is compared with each two
   adjacent page units taken together (a sentence split at a comma, 1:2), a page unit left
   over with two adjacent master units (two merged, 2:1), at the seed thresholds.
3. **Extension.** A pair of units, each next to a side of an aligned pair, is aligned at the
   lower ``EXTEND_COSINE``/``EXTEND_DICE``: a sentence rewritten more heavily than its
   neighbours is proved by them (PAN 2014 extends seeds across gaps the same way).
   A pair of units *between* two aligned pairs, in the same place on both sides (page unit
   ``i`` and master unit ``j`` with pairs ending at ``i - 1, j - 1`` and starting at
   ``i + 1, j + 1``), is aligned at the still lower ``GAP_COSINE``/``GAP_DICE``
   (:func:`_between`): a sentence rewritten so heavily that its rarest words are gone, which
   its neighbours on both sides place (a hand rewrite of part of a chapter keeps few
   sentences, and each one counts; see bench/results/rewrites-partial-h50.md).
4. **Filter.** Aligned pairs are grouped by their place on the page (gaps of at most
   ``MAX_GAP_UNITS`` units); groups of fewer than ``MIN_FRAGMENT_PAIRS`` pairs are chance and
   dropped. The page's *rewritten share* is the share of the master's characters its aligned
   units cover; :func:`is_rewrite` decides: most of the master, a long share of it, or a
   shorter share rewritten as one passage of the page (pairs next to one another: a
   rewritten part of a chapter inside other text; chance pairs are scattered). A rewrite
   keeps the master's names, places and numbers: one aligned pair must share one, when the
   master has ``MIN_ANCHORED_UNITS`` units holding anchors or when there are *conflicts*,
   master units left unaligned as similar to a page unit left unaligned as a seed but for
   other anchors (two articles of one agency's formulas about two events align their
   anchor-free sentences, and conflict on the rest). And a rewrite keeps more than the
   facts: the aligned master units' words that are no anchor must be kept on the page, by
   IDF weight, to ``MIN_WORDING`` (:func:`wording`), which independent reports of the same
   event, sharing its names, numbers and the words that go with them, fall short of.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from tracker.fingerprints.sentences import Flat, Sentences, ranges
from tracker.text.normalize import NormalizedText

SEED_COSINE = 0.5
SEED_DICE = 0.4
EXTEND_COSINE = 0.35
EXTEND_DICE = 0.3
SEED_COMMON_DICE = 0.45
EXTEND_COMMON_DICE = 0.3
MIN_SHARED = 3
EXTEND_MIN_SHARED = 2
MAX_GAP_UNITS = 4
MIN_FRAGMENT_PAIRS = 3
# A pair between two aligned pairs on both sides (see _between): the thresholds on the
# development windows gave the same pairs from 0 to 0.3 (bench/results/rewrites-partial-h50.md)
GAP_COSINE = 0.25
GAP_DICE = 0.25
GAP_COMMON_DICE = 0.2
GAP_MIN_SHARED = 2
# The decision (see is_rewrite): set on the development set of tests/rewrites.py.
MIN_PAIRS = 4
MIN_ANCHORED_UNITS = 2  # a master with this many units holding anchors: one pair must share one
OWN_MARGIN = 0.02  # a pair is a master's own unless another aligns its page units as well
MIN_REWRITE_CHARS = 80
MOST_OF_THE_MASTER = 0.5
MIN_PARTIAL_SHARE = 0.25
MIN_PARTIAL_CHARS = 250
# A shorter partial copy passes as one passage (see passage): set on tests/rewrites_hand.py.
MIN_PASSAGE_PAIRS = 6
MIN_PASSAGE_SHARE = 0.2
MIN_PASSAGE_CHARS = 120
PASSAGE_GAP = 1  # units a passage may skip between two pairs, on the page
MIN_PAGE_SHARE = 0.3  # of the page, that a short master's rewrite must make (see is_rewrite)
# Of the aligned master units' words that are no anchor, the share (by IDF weight) a rewrite
# keeps (see wording): set on the same-release stories of tests/rewrites_hand.py.
MIN_WORDING = 0.52


@dataclass(frozen=True)
class Pair:
    """Aligned units: page units ``[page_first, page_last]`` with master units
    ``[master_first, master_last]`` (two on one side for a split or merged sentence)."""

    page_first: int
    page_last: int
    master_first: int
    master_last: int
    cosine: float
    dice: float
    anchored: bool  # the two sides share an anchor (a name, place or number)


@dataclass(frozen=True)
class RewriteAlignment:
    pairs: list[Pair]
    coverage: float  # share of the master's characters in aligned units
    master_chars: int  # the master's characters in aligned units
    page_chars: int  # the page's characters in aligned units
    conflicts: int = 0  # master units like a page unit but for other anchors
    anchored_units: int = 0  # master units holding an anchor
    passage_pairs: int = 0  # pairs of the longest passage (see passage)
    passage_chars: int = 0  # the master's characters in its units
    passage_anchored: int = 0  # its pairs sharing an anchor
    passage_anchored_units: int = 0  # its master units holding an anchor
    page_total: int = 0  # the characters of the page's units (or of those outside its
    # verbatim copies): its room for a rewrite
    wording: float = 1.0  # the share of the aligned master units' wording kept (see wording)

    @property
    def page_share(self) -> float:
        return self.page_chars / self.page_total if self.page_total else 0.0

    @property
    def anchored(self) -> int:
        return sum(p.anchored for p in self.pairs)


@dataclass
class _Scores:
    cosine: np.ndarray
    dice: np.ndarray  # of the code sets
    common: np.ndarray  # Dice of the code sets without anchors
    shared: np.ndarray  # codes in common
    common_shared: np.ndarray  # non-anchor codes in common
    conflict: np.ndarray  # both hold anchors, none the same: other names, other numbers


@dataclass(frozen=True)
class _Side:
    """One text's units as a sparse matrix over the codes both texts hold: one entry per
    (unit, code), with the code's IDF weight and whether it is no anchor; with each unit's
    norm and set sizes (over all its codes: the codes only one text holds count in the
    denominators). Sparse, as a long page has thousands of units and a unit a dozen codes."""

    rows: np.ndarray  # int64, sorted by column
    cols: np.ndarray  # int64
    weights: np.ndarray  # float64
    common: np.ndarray  # bool
    norms: np.ndarray
    sizes: np.ndarray
    common_sizes: np.ndarray

    def __len__(self) -> int:
        return len(self.norms)

    @classmethod
    def _sorted(cls, rows, cols, weights, common, norms, sizes, common_sizes) -> _Side:
        order = np.lexsort((rows, cols))
        return cls(
            rows[order], cols[order], weights[order], common[order], norms, sizes, common_sizes
        )

    @classmethod
    def of(cls, flat: Flat, rows: np.ndarray, codes: np.ndarray) -> _Side:
        """The units ``rows`` of a text over the shared ``codes`` (sorted: their columns)."""
        at = flat.gather(rows)
        col = _columns(flat.codes[at], codes)
        present = col >= 0
        at = at[present]
        place = np.repeat(np.arange(len(rows), dtype=np.int64), flat.sizes[rows])[present]
        sizes = flat.sizes[rows].astype(np.float64)
        return cls._sorted(
            place,
            col[present],
            flat.weights[at],
            ~flat.anchor[at],
            flat.norms[rows],
            sizes,
            sizes - flat.anchors[rows],
        )

    @classmethod
    def merged(cls, flat: Flat, rows: np.ndarray, side: _Side) -> _Side:
        """Each two consecutive units of ``rows`` as one (the union of their codes)."""
        pairs = len(rows) - 1
        # unit r's entries go to merged rows r - 1 and r (when they exist)
        first = side.rows < pairs
        second = side.rows >= 1
        merged_rows = np.concatenate([side.rows[first], side.rows[second] - 1])
        cols = np.concatenate([side.cols[first], side.cols[second]])
        weights = np.concatenate([side.weights[first], side.weights[second]])
        common = np.concatenate([side.common[first], side.common[second]])
        keys = merged_rows * (cols.max(initial=0) + 1) + cols
        keys, at = np.unique(keys, return_index=True)  # a code both units hold, once
        # the norms and sizes of the unions, over all their codes
        left, right = flat.gather(rows[:-1]), flat.gather(rows[1:])
        owner = np.concatenate(
            [
                np.repeat(np.arange(pairs), flat.sizes[rows[:-1]]),
                np.repeat(np.arange(pairs), flat.sizes[rows[1:]]),
            ]
        )
        entries = np.concatenate([left, right])
        order = np.lexsort((flat.codes[entries], owner))
        owner, entries = owner[order], entries[order]
        codes = flat.codes[entries]
        once = np.ones(len(owner), dtype=bool)
        once[1:] = (owner[1:] != owner[:-1]) | (codes[1:] != codes[:-1])
        anchor = flat.anchor[entries]
        if len(once):  # a code is an anchor of the union when it is one of either unit
            anchor = np.logical_or.reduceat(anchor, np.flatnonzero(once))
        owner, w = owner[once], flat.weights[entries[once]]
        sizes = np.bincount(owner, minlength=pairs).astype(np.float64)
        return cls._sorted(
            merged_rows[at],
            cols[at],
            weights[at],
            common[at],
            np.sqrt(np.bincount(owner, w * w, pairs)),
            sizes,
            sizes - np.bincount(owner[anchor], minlength=pairs),
        )


def _columns(values: np.ndarray, codes: np.ndarray) -> np.ndarray:
    """The place of each of ``values`` in the sorted ``codes``; -1 where it is none of them."""
    at = np.minimum(np.searchsorted(codes, values), max(len(codes) - 1, 0))
    if not len(codes):
        return np.full(len(values), -1, dtype=np.int64)
    return np.where(codes[at] == values, at, -1)


def _products(a: _Side, b: _Side) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Sums over the codes each (a-unit, b-unit) pair shares, as dense matrices: of the
    weights' products, of ones, and of ones for non-anchor codes. Entries are joined by code
    (both sides sorted by it): the work is the number of shared (unit, unit, code) triples."""
    n, m = len(a), len(b)
    dot = np.zeros(n * m)
    shared = np.zeros(n * m)
    common = np.zeros(n * m)
    if len(a.cols) and len(b.cols):
        lo = np.searchsorted(b.cols, a.cols, side="left")
        hi = np.searchsorted(b.cols, a.cols, side="right")
        counts = hi - lo
        if counts.sum():
            left = np.repeat(np.arange(len(a.cols)), counts)
            right = ranges(lo, counts)
            flat = a.rows[left] * m + b.rows[right]
            dot = np.bincount(flat, a.weights[left] * b.weights[right], n * m)
            shared = np.bincount(flat, minlength=n * m).astype(np.float64)
            both = a.common[left] & b.common[right]
            common = np.bincount(flat[both], minlength=n * m).astype(np.float64)
    return dot.reshape(n, m), shared.reshape(n, m), common.reshape(n, m)


def _scores(a: _Side, b: _Side) -> _Scores:
    dot, shared, common = _products(a, b)
    anchors_a, anchors_b = a.sizes - a.common_sizes, b.sizes - b.common_sizes
    conflict = (anchors_a[:, None] > 0) & (anchors_b[None, :] > 0) & (shared - common < 0.5)
    return _Scores(
        cosine=dot / np.maximum(np.outer(a.norms, b.norms), 1e-9),
        dice=2 * shared / np.maximum(a.sizes[:, None] + b.sizes[None, :], 1),
        common=2 * common / np.maximum(a.common_sizes[:, None] + b.common_sizes[None, :], 1),
        shared=shared,
        common_shared=common,
        conflict=conflict,
    )


def _passing(
    s: _Scores, cosine: float, dice: float, common: float, shared: int, conflicts: bool = False
) -> np.ndarray:
    """The pairs at these thresholds, those with conflicting anchors too if ``conflicts``."""
    found = (s.cosine >= cosine) & (s.dice >= dice) & (s.common >= common) & (s.shared >= shared)
    return found if conflicts else found & ~s.conflict


def _seeds(s: _Scores) -> np.ndarray:
    return _passing(s, SEED_COSINE, SEED_DICE, SEED_COMMON_DICE, MIN_SHARED)


def _rows(flat: Flat, codes: np.ndarray, among: np.ndarray) -> np.ndarray:
    """The units ``among`` these worth scoring: those sharing ``EXTEND_MIN_SHARED`` codes with
    the other text, and their neighbours sharing one (the other half of a split sentence)."""
    shared = _columns(flat.codes, codes) >= 0
    hits = np.bincount(flat.unit[shared], minlength=len(flat.sizes))
    outside = np.ones(len(hits), dtype=bool)
    outside[among] = False
    hits[outside] = 0
    keep = hits >= EXTEND_MIN_SHARED
    near = keep.copy()
    near[1:] |= keep[:-1]
    near[:-1] |= keep[1:]
    return np.flatnonzero(near & (hits >= 1))


def _adjacent(rows: np.ndarray) -> np.ndarray:
    """Whether each two consecutive kept rows are neighbours in the text."""
    return rows[1:] == rows[:-1] + 1


def align_sentences(
    page: Sentences, master: Sentences, among: np.ndarray | None = None
) -> RewriteAlignment:
    """The units of ``master`` that ``page`` rewrites (see the module's docstring); only the
    page's units ``among`` these, if given (on a long page: those near its key hits)."""
    none = RewriteAlignment([], 0.0, 0, 0)
    if not len(page) or not len(master):
        return none
    if among is None:
        among = np.arange(len(page))
    pf, mf = page.flat, master.flat
    codes = np.intersect1d(pf.codes[pf.gather(among)], mf.codes)  # sorted, distinct
    if len(codes) < MIN_SHARED:
        return none
    prows = _rows(pf, codes, among)
    mrows = _rows(mf, codes, np.arange(len(master)))
    if not len(prows) or not len(mrows):
        return none
    ours, theirs = _Side.of(pf, prows, codes), _Side.of(mf, mrows, codes)
    one = _scores(ours, theirs)
    # Rows from here on are the kept units' (prows/mrows give their place in the texts).
    page_used = np.zeros(len(prows), dtype=bool)
    master_used = np.zeros(len(mrows), dtype=bool)
    pairs: list[Pair] = []

    def take(found: list[tuple[np.ndarray, _Scores, int, int]]) -> int:
        """The pairs each mask of ``found`` passes (with their scores and spans on the page
        and in the master), best cosine first whatever their shape, each unit once; how
        many were taken."""
        candidates = []
        for mask, s, page_span, master_span in found:
            rows, cols = np.nonzero(mask)
            for i, j in zip(rows.tolist(), cols.tolist(), strict=True):
                shape = page_span + master_span  # 1:1 first on a tie
                candidates.append((-float(s.cosine[i, j]), shape, i, j, page_span, master_span, s))
        candidates.sort(key=lambda c: c[:4])
        taken = 0
        for cosine, _, i, j, page_span, master_span, s in candidates:
            pi, mj = slice(i, i + page_span), slice(j, j + master_span)
            if page_used[pi].any() or master_used[mj].any():
                continue
            page_used[pi] = master_used[mj] = True
            anchored = bool(s.shared[i, j] - s.common_shared[i, j] > 0.5)
            pairs.append(
                Pair(
                    int(prows[i]),
                    int(prows[i + page_span - 1]),
                    int(mrows[j]),
                    int(mrows[j + master_span - 1]),
                    -cosine,
                    float(s.dice[i, j]),
                    anchored,
                )
            )
            taken += 1
        return taken

    seeds = [(_seeds(one), one, 1, 1)]
    if len(prows) > 1:  # 1:2, a master sentence split in two on the page
        split = _scores(_Side.merged(pf, prows, ours), theirs)
        seeds.append((_seeds(split) & _adjacent(prows)[:, None], split, 2, 1))
    if len(mrows) > 1:  # 2:1, two master sentences merged into one on the page
        merged = _scores(ours, _Side.merged(mf, mrows, theirs))
        seeds.append((_seeds(merged) & _adjacent(mrows)[None, :], merged, 1, 2))
    take(seeds)
    # Extension: units next to aligned ones, at the lower thresholds, until none is added;
    # then the units between two aligned pairs on both sides, at the lowest (and again).
    weak = _passing(one, EXTEND_COSINE, EXTEND_DICE, EXTEND_COMMON_DICE, EXTEND_MIN_SHARED)
    gap = _passing(one, GAP_COSINE, GAP_DICE, GAP_COMMON_DICE, GAP_MIN_SHARED)
    for _ in range(len(prows)):
        for _ in range(len(prows)):
            mask = weak & _near(page_used, prows)[:, None] & _near(master_used, mrows)[None, :]
            mask &= ~page_used[:, None] & ~master_used[None, :]
            if not mask.any() or not take([(mask, one, 1, 1)]):
                break
        mask = gap & _between(pairs, prows, mrows)
        mask &= ~page_used[:, None] & ~master_used[None, :]
        if not mask.any() or not take([(mask, one, 1, 1)]):
            break
    unlike = _passing(one, SEED_COSINE, SEED_DICE, SEED_COMMON_DICE, MIN_SHARED, True)
    unlike &= one.conflict & ~page_used[:, None] & ~master_used[None, :]  # left unaligned
    conflicts = int(unlike.any(axis=0).sum())
    anchored_units = int((mf.anchors > 0).sum())
    return summary(pairs, page, master, conflicts, anchored_units)


def summary(
    pairs: list[Pair], page: Sentences, master: Sentences, conflicts: int, anchored_units: int
) -> RewriteAlignment:
    """The alignment of these pairs (filtered: see the module's docstring)."""
    pairs = sorted(_filtered(pairs), key=lambda p: p.page_first)
    master_chars = _chars(master, [(p.master_first, p.master_last) for p in pairs])
    page_chars = _chars(page, [(p.page_first, p.page_last) for p in pairs])
    coverage = min(1.0, master_chars / master.chars) if master.chars else 0.0
    run = passage(pairs)
    run_units = np.array(
        [j for p in run for j in range(p.master_first, p.master_last + 1)], dtype=np.int64
    )
    return RewriteAlignment(
        pairs,
        coverage,
        master_chars,
        page_chars,
        conflicts,
        anchored_units,
        len(run),
        int(master.lengths[run_units].sum()),
        sum(p.anchored for p in run),
        int((master.flat.anchors[run_units] > 0).sum()),
        int(page.lengths.sum()),
        # only where it can matter: could_be_rewrite's terms
        wording(pairs, page, master)
        if len(pairs) >= MIN_PAIRS and master_chars >= MIN_REWRITE_CHARS
        else 1.0,
    )


def wording(pairs: list[Pair], page: Sentences, master: Sentences) -> float:
    """The share of the aligned master units' *wording* that their page units keep: of the
    IDF weight of their codes that are no anchor (on either side), the part the page units
    hold too; 1 without any. Every report of an event keeps its names, places and numbers,
    and the words that go with them (the measure word, the thing counted), so aligned pairs
    are found between independent reports; a rewriter keeps the rest of the sentence too,
    its words swapped for synonyms that fold to the same codes, where another writer tells
    the fact in words of their own. On the development sets the copies keep 0.53 and more
    (the least: rewrites by hand; the tools' 0.7 and more), the stories from the same release
    told from their own angle 0.40–0.58, most below 0.5 (see bench.rewrites_diagnose)."""
    if not pairs:
        return 1.0
    pf, mf = page.flat, master.flat
    page_entries, page_pair = _entries(pf, [(p.page_first, p.page_last) for p in pairs])
    master_entries, master_pair = _entries(mf, [(p.master_first, p.master_last) for p in pairs])
    # (pair, code) as one integer: the codes numbered densely first
    codes, dense = np.unique(
        np.concatenate([pf.codes[page_entries], mf.codes[master_entries]]), return_inverse=True
    )
    page_keys = page_pair * len(codes) + dense[: len(page_entries)]
    master_keys = master_pair * len(codes) + dense[len(page_entries) :]
    free = ~mf.anchor[master_entries]
    free &= ~np.isin(master_keys, page_keys[pf.anchor[page_entries]])
    weights = mf.weights[master_entries][free]
    total = float(weights.sum())
    kept = float(weights[np.isin(master_keys[free], page_keys)].sum())
    return kept / total if total else 1.0


def _entries(flat: Flat, spans: list[tuple[int, int]]) -> tuple[np.ndarray, np.ndarray]:
    """The entries of the units in the spans ``[first, last]``, with each one's span."""
    first = np.array([a for a, _ in spans], dtype=np.int64)
    lengths = np.array([b - a + 1 for a, b in spans], dtype=np.int64)
    span = np.repeat(np.arange(len(spans)), lengths)
    units = ranges(first, lengths)
    sizes = flat.ptr[units + 1] - flat.ptr[units]
    return flat.gather(units), np.repeat(span, sizes)


def _chars(sentences: Sentences, spans: list[tuple[int, int]]) -> int:
    """The folded characters of the units in the spans ``[first, last]``."""
    return sum(int(sentences.lengths[a : b + 1].sum()) for a, b in spans)


def passage(pairs: list[Pair]) -> list[Pair]:
    """The longest run of pairs (sorted by page) that rewrites one passage of the page: each
    next on the page to the one before (``PASSAGE_GAP`` units skipped at most), wherever in
    the master (a rewriter re-orders sentences and paragraphs). A copied passage is such a
    run; chance pairs between two texts telling alike of other things are scattered among
    the page's own sentences."""
    best: list[Pair] = []
    run: list[Pair] = []
    for p in pairs:
        if run and p.page_first - run[-1].page_last > PASSAGE_GAP + 1:
            run = []
        run.append(p)
        if len(run) > len(best):
            best = list(run)
    return best


def own_pairs(
    alignments: dict[int, RewriteAlignment],
    page: Sentences,
    masters: dict[int, Sentences],
    versions: Callable[[int, int], bool] = lambda a, b: False,
) -> dict[int, RewriteAlignment]:
    """Each alignment with only the pairs whose page units no other master aligns as well
    (within ``OWN_MARGIN`` of the cosine), unless that master is a ``version`` of it (the same
    text registered twice): a sentence in a formula many masters share (an agency's way of
    telling a flood) proves a copy of none of them, as the verbatim detector's partial-copy
    rule counts only the evidence no other master explains (:mod:`tracker.matching.shared`)."""
    by_unit: dict[int, list[tuple[float, int]]] = {}
    for doc, alignment in alignments.items():
        for p in alignment.pairs:
            for i in range(p.page_first, p.page_last + 1):
                by_unit.setdefault(i, []).append((p.cosine, doc))

    def own(doc: int, p: Pair) -> bool:
        return not any(
            other != doc and cosine >= p.cosine - OWN_MARGIN and not versions(doc, other)
            for i in range(p.page_first, p.page_last + 1)
            for cosine, other in by_unit[i]
        )

    found = {}
    for doc, alignment in alignments.items():
        kept = [p for p in alignment.pairs if own(doc, p)]
        found[doc] = (
            alignment
            if len(kept) == len(alignment.pairs)
            else summary(kept, page, masters[doc], alignment.conflicts, alignment.anchored_units)
        )
    return found


def _between(pairs: list[Pair], prows: np.ndarray, mrows: np.ndarray) -> np.ndarray:
    """The cells (kept page row, kept master row) of units between two aligned pairs in the
    same place on both sides: one pair ends right before the page unit and the master unit,
    another starts right after both (a mask over ``prows`` × ``mrows``; either unit may be
    used already, by a pair of its own or, the master's, elsewhere)."""
    mask = np.zeros((len(prows), len(mrows)), dtype=bool)
    starts = {p.page_first: p.master_first for p in pairs}
    for p in pairs:
        unit, master_unit = p.page_last + 1, p.master_last + 1
        if starts.get(unit + 1) != master_unit + 1:
            continue
        i, j = np.searchsorted(prows, unit), np.searchsorted(mrows, master_unit)
        if i < len(prows) and prows[i] == unit and j < len(mrows) and mrows[j] == master_unit:
            mask[i, j] = True
    return mask


def _near(used: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """Kept units next to a used one in the text."""
    near = np.zeros_like(used)
    adjacent = _adjacent(rows)
    near[1:] |= used[:-1] & adjacent
    near[:-1] |= used[1:] & adjacent
    return near


def _filtered(pairs: list[Pair]) -> list[Pair]:
    """Pairs in groups of at least ``MIN_FRAGMENT_PAIRS`` close on the page."""
    kept: list[Pair] = []
    group: list[Pair] = []
    for p in sorted(pairs, key=lambda p: p.page_first):
        if group and p.page_first - group[-1].page_last > MAX_GAP_UNITS:
            if len(group) >= MIN_FRAGMENT_PAIRS:
                kept.extend(group)
            group = []
        group.append(p)
    if len(group) >= MIN_FRAGMENT_PAIRS:
        kept.extend(group)
    return kept


def is_rewrite(alignment: RewriteAlignment) -> bool:
    """Whether the aligned sentences prove a rewritten copy: a share of the master rewritten
    as one passage of the page (:func:`is_passage`); a share of the master long enough
    (``MIN_PARTIAL_CHARS``) that it cannot be a few quoted or stock sentences; or, of a short
    master, most of it, making ``MIN_PAGE_SHARE`` of the page.

    The page's share is asked of short evidence because chance grows with the page: each
    page sentence is one more draw at a seed, so a long page on the master's subject (the
    other half of a newspaper feature, quoting a paragraph of it) collects a few loose
    pairs, and three or four pairs are most of a short master. A rewrite of a short master
    is most of its page (0.4 and up on the development set, whatever was added), a page
    sharing a paragraph with it a fifth."""
    if not could_be_rewrite(alignment) or alignment.wording < MIN_WORDING:
        return False  # too little evidence; or the facts retold in other words
    if is_passage(alignment):
        return True
    if not alignment.anchored and (
        alignment.conflicts or alignment.anchored_units >= MIN_ANCHORED_UNITS
    ):
        # the same formulas about other names, places and numbers; or a master telling of
        # names and numbers "rewritten" without any of them
        return False
    if alignment.master_chars >= MIN_PARTIAL_CHARS:
        return alignment.coverage >= MIN_PARTIAL_SHARE
    return alignment.coverage >= MOST_OF_THE_MASTER and alignment.page_share >= MIN_PAGE_SHARE


def could_be_rewrite(alignment: RewriteAlignment) -> bool:
    """:func:`is_rewrite`'s first test: ``MIN_PAIRS`` pairs and ``MIN_REWRITE_CHARS`` of the
    master aligned. Monotone: an alignment failing it fails it with any of its pairs taken
    away (as :func:`own_pairs` takes them)."""
    return len(alignment.pairs) >= MIN_PAIRS and alignment.master_chars >= MIN_REWRITE_CHARS


def is_passage(alignment: RewriteAlignment) -> bool:
    """A share of the master rewritten as one passage of the page (:func:`passage`): of
    ``MIN_PASSAGE_PAIRS`` pairs and ``MIN_PASSAGE_CHARS`` of the master's characters, shorter
    than ``MIN_PARTIAL_CHARS`` (a rewritten 40 % of a short chapter inside other text), and
    ``MIN_PASSAGE_SHARE`` of the master: a hand rewrite of 30-40 % of a chapter aligns 0.2 to
    0.3 of it, its heaviest rewritten sentences left unaligned (the wording rule of
    :func:`is_rewrite` still holds); its anchors kept, as for the whole (when its master units
    hold ``MIN_ANCHORED_UNITS`` anchors, one pair shares one)."""
    return (
        alignment.coverage >= MIN_PASSAGE_SHARE
        and alignment.passage_pairs >= MIN_PASSAGE_PAIRS
        and alignment.passage_chars >= MIN_PASSAGE_CHARS
        and not alignment.conflicts
        and (
            alignment.passage_anchored > 0 or alignment.passage_anchored_units < MIN_ANCHORED_UNITS
        )
    )


def is_partial_passage(alignment: RewriteAlignment) -> bool:
    """A rewrite (:func:`is_rewrite`) of a part of the master, rewritten as one passage of the
    page (:func:`is_passage`), and less than ``MOST_OF_THE_MASTER`` of it: what a master
    named by a single sentence key may be found as (:mod:`tracker.matching.rewrites`). Such
    a page rewrites few of the master's units, so it keeps few of their keys; a page
    retelling most of a master keeps one key a sentence it rewrites, and with one key left
    it is another report of the same facts (the development set's stories from one press
    release)."""
    return (
        is_rewrite(alignment) and is_passage(alignment) and alignment.coverage < MOST_OF_THE_MASTER
    )


def evidence(
    alignment: RewriteAlignment,
    page: NormalizedText,
    page_units: Sentences,
    master: NormalizedText,
    master_units: Sentences,
    max_text: int = 2000,
) -> list[dict]:
    """The aligned pairs as spans: the page's sentence beside the master's, with the words
    swapped (same canonical code, other word), added by the page and left out of the master."""
    spans = []
    for p in alignment.pairs:
        pu = page_units.units[p.page_first : p.page_last + 1]
        mu = master_units.units[p.master_first : p.master_last + 1]
        page_start, page_end = _source_span(page, pu[0].start, pu[-1].end)
        master_start, master_end = _source_span(master, mu[0].start, mu[-1].end)
        page_words = {c: w for u in pu for w, c in zip(u.words, u.word_codes, strict=True)}
        master_words = {c: w for u in mu for w, c in zip(u.words, u.word_codes, strict=True)}
        swaps = [
            [page_words[c], master_words[c]]
            for c in page_words
            if c in master_words and page_words[c] != master_words[c]
        ]
        spans.append(
            {
                "page_start": page_start,
                "page_end": page_end,
                "master_start": master_start,
                "master_end": master_end,
                "text": page.source[page_start:page_end][:max_text],
                "master_text": master.source[master_start:master_end][:max_text],
                "swapped": swaps,
                "added": [w for c, w in page_words.items() if c not in master_words],
                "dropped": [w for c, w in master_words.items() if c not in page_words],
                "cosine": round(p.cosine, 3),
                "dice": round(p.dice, 3),
            }
        )
    return spans


def _source_span(text: NormalizedText, start: int, end: int) -> tuple[int, int]:
    """Source offsets of folded characters ``[start, end)``."""
    if not len(text.chars):
        return 0, 0
    first = int(text.char_pos[min(start, len(text.chars) - 1)])
    last = int(text.char_pos[max(min(end, len(text.chars)) - 1, 0)]) + 1
    return first, last
