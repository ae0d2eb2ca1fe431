"""Pinyin-DNA window fingerprints.

The method of a commercial tracking system for pirated news and novels: text → pinyin → first
letters (homophones and encodings collapse to the same letters); windows of *m* letters taken with
an overlap rate (50 %: [1, m], [m/2, 3m/2], [m, 2m], …); per window the distribution of the 20
commonest initial letters, minus a reference distribution, normalised into [0, radix) per letter
and concatenated in letter order into one number — with radix 4, 20 letters × 2 bits = 40 bits.
Large windows tolerate more edits, small ones are more sensitive.

Normalisation: for letter *l* with window frequency *f* and reference *r*, the relative deviation
(f − r)/r is cut at ``EDGES`` into radix levels.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from tracker.fingerprints.batches import owners, split
from tracker.text import tables

# The 20 commonest pinyin initial letters and their frequencies, measured on 红楼梦, 西游记,
# 呐喊 and People's Daily (Jan 1998): 3.4M syllables.
LETTERS = "zdysjlxgbhcwtqmnfrkp"
REFERENCE = np.array(
    [
        0.1019,
        0.0919,
        0.0906,
        0.0894,
        0.0771,
        0.0607,
        0.0533,
        0.0483,
        0.0475,
        0.0430,
        0.0401,
        0.0363,
        0.0362,
        0.0345,
        0.0316,
        0.0277,
        0.0262,
        0.0233,
        0.0166,
        0.0115,
    ]
)
EDGES = np.array([-0.3, 0.0, 0.3])  # radix 4: below −30 %, −30…0 %, 0…+30 %, above +30 %
BITS_PER_LETTER = 2
DEFAULT_WINDOW = 160
DEFAULT_OVERLAP = 0.5

_LETTER_SLOT = np.full(256, 255, dtype=np.uint8)
for _slot, _letter in enumerate(LETTERS):
    _LETTER_SLOT[ord(_letter) - ord("a")] = _slot


def dna_windows(
    tokens: np.ndarray, window: int = DEFAULT_WINDOW, overlap: float = DEFAULT_OVERLAP
) -> np.ndarray:
    """One 40-bit DNA value per window (uint64 array); a text shorter than a window gives one."""
    return dna_windows_many([tokens], window, overlap)[0]


def dna_windows_many(
    texts: Sequence[np.ndarray], window: int = DEFAULT_WINDOW, overlap: float = DEFAULT_OVERLAP
) -> list[np.ndarray]:
    """:func:`dna_windows` of several token arrays, computed together.

    Letters are counted per block of gcd(window, step) letters of each text with one
    ``bincount``; a window is then a difference of prefix sums over whole blocks (two blocks at
    50 % overlap). A text of at most one window is one window of its own length.
    """
    if not texts:
        return []
    tokens = np.concatenate(texts) if len(texts) != 1 else texts[0]
    slots = _LETTER_SLOT[tables.first_letter_table()[tokens]]
    kept = slots < len(LETTERS)  # tokens without an initial letter are dropped
    letters = slots[kept]
    step = max(1, round(window * (1 - overlap)))
    block = math.gcd(window, step)
    if len(texts) == 1:  # a page being checked: no owners to track
        sizes = np.array([len(letters)])
        block_of = np.arange(len(letters)) // block
        blocks = -(-sizes // block)
        first_block = np.zeros(1, dtype=np.int64)
    else:
        owner = owners([len(t) for t in texts])[kept]
        sizes = np.bincount(owner, minlength=len(texts))
        blocks = -(-sizes // block)  # per text, the last one possibly partial
        first_block = np.cumsum(blocks) - blocks
        position = np.arange(len(letters)) - (np.cumsum(sizes) - sizes)[owner]  # in its text
        block_of = first_block[owner] + position // block
    per_block = np.bincount(
        block_of * len(LETTERS) + letters, minlength=int(blocks.sum()) * len(LETTERS)
    ).reshape(-1, len(LETTERS))
    prefix = np.zeros((len(per_block) + 1, len(LETTERS)), dtype=np.int64)
    np.cumsum(per_block, axis=0, out=prefix[1:])
    # Windows: (text, first block, blocks spanned, letters); a short text spans all its blocks.
    long = sizes > window
    count = np.where(long, (sizes - window) // step + 1, (sizes > 0).astype(np.int64))
    text_of = owners(count)
    rank = np.arange(len(text_of)) - np.repeat(np.cumsum(count) - count, count)
    starts = first_block[text_of] + rank * (step // block)
    spans = np.where(long[text_of], window // block, blocks[text_of])
    length = np.where(long[text_of], window, sizes[text_of])
    counts = prefix[starts + spans] - prefix[starts]
    deviation = counts / length[:, None] / REFERENCE - 1.0
    levels = np.searchsorted(EDGES, deviation, side="right").astype(np.uint64)
    values = np.bitwise_or.reduce(levels << _SHIFTS, axis=1)
    return split(values, count)


_SHIFTS = np.arange(len(LETTERS) - 1, -1, -1, dtype=np.uint64) * np.uint64(BITS_PER_LETTER)
