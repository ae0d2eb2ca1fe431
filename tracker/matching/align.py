"""Align a page with a master text to find the copied passages (the evidence of a match).

Seeds are the *w*-token shingles the two texts share (pinyin syllable tokens, so homophones and
Traditional characters still match). Seeds on one diagonal (j − i constant) are merged into
runs; runs are chained into passages while the gap between them stays under ``max_gap`` tokens
in both texts and the diagonal drifts by at most ``max_gap`` — so typos, inserted ad lines and
dropped characters break no passage. Passages shorter than ``min_tokens`` are dropped: short
stock phrases are shared by unrelated texts.

``coverage`` is the share of the master's tokens inside some passage: Broder's containment of
the master in the page, measured on aligned passages rather than sampled shingles.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from tracker.fingerprints.anchors import GRAM, gram_hashes
from tracker.fingerprints.sentences import ranges


@dataclass(frozen=True)
class Passage:
    page_start: int  # token offsets, end exclusive
    page_end: int
    master_start: int
    master_end: int
    seeds: int  # shared shingles inside the passage

    @property
    def length(self) -> int:
        return self.master_end - self.master_start


@dataclass(frozen=True)
class Alignment:
    passages: list[Passage]
    coverage: float  # share of master tokens inside passages
    page_share: float  # share of page tokens inside passages
    master_tokens: int  # master tokens inside passages

    @property
    def longest(self) -> int:
        return max((p.length for p in self.passages), default=0)


# Shingles are sorted as one array of packed values: the hash's top bits with the position in
# the low ``POSITION_BITS``. A plain sort of those (SIMD on x86) is ~10x faster than a stable
# argsort of the hashes and gives the same grouping, positions ascending within a value; the
# 38 bits of hash left make a chance equality of two different shingles ~2⁻³⁸ per pair.
POSITION_BITS = 26
_POSITIONS = np.uint64((1 << POSITION_BITS) - 1)
_VALUE = ~_POSITIONS


@dataclass(frozen=True)
class Shingles:
    """A text's shingle hashes sorted, with where each came from and how often its value
    occurs: computed once per text, then intersected with many others by binary search."""

    order: np.ndarray  # text position of each sorted hash
    ordered: np.ndarray  # the hashes (top 64 − POSITION_BITS bits), sorted
    repeats: np.ndarray  # occurrences in the text of each sorted hash's value

    @classmethod
    def of(cls, hashes: np.ndarray) -> Shingles:
        hashes = np.asarray(hashes, dtype=np.uint64)
        if len(hashes) < 1 << POSITION_BITS:
            packed = (hashes & _VALUE) | np.arange(len(hashes), dtype=np.uint64)
            packed.sort()
            order = (packed & _POSITIONS).astype(np.int32)
            ordered = packed & _VALUE
        else:  # a text of 67M+ tokens: positions do not fit beside the hash
            order = np.argsort(hashes, kind="stable")
            ordered = hashes[order] & _VALUE
        starts = np.flatnonzero(np.r_[True, ordered[1:] != ordered[:-1]])
        sizes = np.diff(np.r_[starts, len(ordered)])
        repeats = np.repeat(np.minimum(sizes, np.iinfo(np.uint16).max), sizes)
        return cls(order.astype(np.int32), ordered, repeats.astype(np.uint16))

    def __len__(self) -> int:
        return len(self.ordered)


def seed_runs(page: Shingles, master: Shingles, max_repeats: int = 8) -> np.ndarray:
    """Runs of consecutive shared shingles on one diagonal: rows of (page_i, master_j, length).

    Every page occurrence of a shared value is paired with every master occurrence, unless the
    value occurs more than ``max_repeats`` times in the master (a refrain, not evidence).
    Sorted master values are searched in the sorted page values: both sides sorted, the binary
    searches walk forward through memory.
    """
    if len(page) == 0 or len(master) == 0:
        return np.zeros((0, 3), dtype=np.int64)
    lo = np.searchsorted(page.ordered, master.ordered, side="left")
    shared = np.flatnonzero(
        (page.ordered[np.minimum(lo, len(page) - 1)] == master.ordered)
        & (master.repeats <= max_repeats)
    )
    if len(shared) == 0:
        return np.zeros((0, 3), dtype=np.int64)
    lo = lo[shared]
    counts = np.searchsorted(page.ordered, master.ordered[shared], side="right") - lo
    page_i = page.order[ranges(lo, counts)].astype(np.int64)
    master_j = master.order[np.repeat(shared, counts)].astype(np.int64)
    # Sorted by diagonal, then page position: one sort of packed (diagonal, position) keys,
    # unique since each (page_i, master_j) pair occurs once.
    shift = np.int64(len(page.order) + 1)  # diagonals made non-negative
    keys = ((master_j - page_i + shift) << 32) | page_i
    keys.sort()
    page_i, diagonal = keys & 0xFFFFFFFF, (keys >> 32) - shift
    new_run = np.ones(len(page_i), dtype=bool)
    new_run[1:] = (diagonal[1:] != diagonal[:-1]) | (page_i[1:] != page_i[:-1] + 1)
    starts = np.flatnonzero(new_run)
    lengths = np.diff(np.append(starts, len(page_i)))
    runs = np.column_stack((page_i[starts], page_i[starts] + diagonal[starts], lengths))
    by_page = np.argsort((runs[:, 0] << 32) | (diagonal[starts] + shift))  # unique keys
    return runs[by_page]


def align(
    page_tokens: np.ndarray,
    master_tokens: np.ndarray,
    *,
    gram: int = GRAM,
    max_gap: int = 16,
    min_tokens: int = 12,
    min_density: float = 0.25,
    page_shingles: Shingles | None = None,
    master_shingles: Shingles | None = None,
) -> Alignment:
    """Passages of ``master_tokens`` copied in ``page_tokens`` (the shingles of either may be
    given, when already computed)."""
    if page_shingles is None:
        page_shingles = Shingles.of(gram_hashes(page_tokens, gram))
    if master_shingles is None:
        master_shingles = Shingles.of(gram_hashes(master_tokens, gram))
    runs = seed_runs(page_shingles, master_shingles)
    chains: list[list[int]] = []  # [page_start, page_end, master_start, master_end, diag, seeds]
    active: list[list[int]] = []
    for i, j, length in runs.tolist():
        end_i, end_j, diag = i + length - 1 + gram, j + length - 1 + gram, j - i
        still_active = []
        best = None
        for chain in active:
            if chain[1] < i - max_gap:
                continue  # too far behind: closed
            still_active.append(chain)
            if (
                j >= chain[3] - gram - max_gap
                and j <= chain[3] + max_gap
                and abs(diag - chain[4]) <= max_gap
                and (best is None or abs(diag - chain[4]) < abs(diag - best[4]))
            ):
                best = chain
        active = still_active
        if best is None:
            chain = [i, end_i, j, end_j, diag, length]
            chains.append(chain)
            active.append(chain)
        else:
            best[1] = max(best[1], end_i)
            best[3] = max(best[3], end_j)
            best[2] = min(best[2], j)
            best[4] = diag
            best[5] += length
    passages = [
        Passage(c[0], c[1], c[2], c[3], c[5])
        for c in chains
        if c[1] - c[0] >= min_tokens
        and c[3] - c[2] >= min_tokens
        and c[5] >= min_density * (c[1] - c[0] - gram + 1)
    ]
    return _alignment(passages, len(master_tokens), len(page_tokens))


def merge(
    passages: list[Passage], master_length: int, page_length: int, max_gap: int = 16
) -> Alignment:
    """One alignment of a master from passages found apart (in the overlapping segments of a
    long page, shifted to page offsets): passages that overlap or come within ``max_gap``
    tokens on both sides, on diagonals at most ``max_gap`` apart, become one, so a chapter
    cut by a segment boundary is one passage again and one found twice is counted once."""
    merged: list[Passage] = []
    for p in sorted(passages, key=lambda p: (p.page_start, p.master_start)):
        for k, q in enumerate(merged):
            if (
                p.page_start <= q.page_end + max_gap
                and p.master_start <= q.master_end + max_gap
                and q.master_start <= p.master_end + max_gap
                and abs((p.master_start - p.page_start) - (q.master_end - q.page_end)) <= max_gap
            ):
                merged[k] = Passage(
                    q.page_start,
                    max(q.page_end, p.page_end),
                    min(q.master_start, p.master_start),
                    max(q.master_end, p.master_end),
                    max(q.seeds, p.seeds) if p.page_start < q.page_end else q.seeds + p.seeds,
                )
                break
        else:
            merged.append(p)
    return _alignment(merged, master_length, page_length)


def _alignment(passages: list[Passage], master_length: int, page_length: int) -> Alignment:
    master_tokens_covered = _union_length([(p.master_start, p.master_end) for p in passages])
    page_tokens_covered = _union_length([(p.page_start, p.page_end) for p in passages])
    return Alignment(
        passages=sorted(passages, key=lambda p: p.page_start),
        coverage=master_tokens_covered / master_length if master_length else 0.0,
        page_share=page_tokens_covered / page_length if page_length else 0.0,
        master_tokens=master_tokens_covered,
    )


def _union_length(intervals: list[tuple[int, int]]) -> int:
    total, reach = 0, -1
    for start, end in sorted(intervals):
        if end <= reach:
            continue
        total += end - max(start, reach)
        reach = end
    return total
