"""Shingle hashes over pinyin-syllable tokens and content-defined anchors.

A *w*-shingle is a run of *w* consecutive tokens (Broder, "On the resemblance and containment
of documents", 1997). Hashing every shingle gives the dense set used for alignment. For the
index only a sample is kept, chosen by content, not position, so that a passage copied anywhere
into a page selects the same anchors as in the master:

* Broder's MOD_m rule keeps the shingles whose hash ≡ 0 (mod m): on average L/m anchors in a
  passage of L shingles, but with Poisson-distributed gaps.
* Winnowing (Schleimer, Wilkerson, Aiken, "Winnowing: local algorithms for document
  fingerprinting", SIGMOD 2003) keeps the minimum hash of every window of *W* consecutive
  shingles: density ≈ 2/(W+1) and a *guarantee* — any shared passage of at least W + w − 1
  tokens shares at least one anchor, because a window lying inside it selects the same minimum
  in both texts.
"""

from __future__ import annotations

import numpy as np

from tracker.fingerprints.batches import owners, split

GRAM = 5
_PRIME = np.uint64(0x100000001B3)


def mix(h: np.ndarray) -> np.ndarray:
    """splitmix64 finaliser: spreads polynomial hashes uniformly over 64 bits."""
    h = h ^ (h >> np.uint64(30))
    h = h * np.uint64(0xBF58476D1CE4E5B9)
    h = h ^ (h >> np.uint64(27))
    h = h * np.uint64(0x94D049BB133111EB)
    return h ^ (h >> np.uint64(31))


def gram_hashes(tokens: np.ndarray, gram: int = GRAM) -> np.ndarray:
    """64-bit hash of every ``gram``-token shingle; element i covers tokens[i : i + gram]."""
    n = len(tokens) - gram + 1
    if n <= 0:
        return np.zeros(0, dtype=np.uint64)
    t = tokens.astype(np.uint64) + np.uint64(1)
    h = np.zeros(n, dtype=np.uint64)
    with np.errstate(over="ignore"):
        for j in range(gram):
            h = h * _PRIME + t[j : j + n]
        return mix(h)


def mod_sample(hashes: np.ndarray, modulus: int) -> np.ndarray:
    """Broder's MOD_m sample: the hashes ≡ 0 (mod ``modulus``), in text order."""
    return hashes[hashes % np.uint64(modulus) == 0]


def winnow(hashes: np.ndarray, window: int) -> np.ndarray:
    """Distinct minima of every ``window`` consecutive hashes (a text shorter than one window
    gives its minimum)."""
    n = len(hashes)
    if n == 0:
        return hashes[:0]
    if n <= window:
        return hashes[np.argmin(hashes) :][:1]
    return _distinct_minima(window_minima(hashes, window))


def winnow_two(hashes: np.ndarray, small: int, large: int) -> tuple[np.ndarray, np.ndarray]:
    """``(winnow(hashes, small), winnow(hashes, large))`` with one pass of window minima: a
    window of ``large`` hashes starting at *i* is the union of the ``small`` ones starting at
    *i* and at *i* + ``large`` − ``small`` (when ``large`` ≤ 2 ``small``), so its minimum is
    the smaller of theirs."""
    n = len(hashes)
    if not small < large <= 2 * small or n <= large:
        return winnow(hashes, small), winnow(hashes, large)
    minima = window_minima(hashes, small)
    count = n - large + 1
    wide = np.minimum(minima[:count], minima[large - small : large - small + count])
    return _distinct_minima(minima), _distinct_minima(wide)


def _distinct_minima(minima: np.ndarray) -> np.ndarray:
    # A minimum stays the minimum of many consecutive windows: sort one of each run.
    return distinct(minima[runs(minima)])


def runs(ordered: np.ndarray) -> np.ndarray:
    """Where each run of equal consecutive values starts (a mask)."""
    first = np.empty(len(ordered), dtype=bool)
    first[:1] = True
    np.not_equal(ordered[1:], ordered[:-1], out=first[1:])
    return first


def distinct(values: np.ndarray) -> np.ndarray:
    """The distinct values, sorted: :func:`numpy.unique` without its ~20 µs a call, which
    the short arrays of a lookup (a few hundred values) paid many times a page."""
    ordered = np.sort(values)
    return ordered[runs(ordered)]


def winnow_many(hashes: np.ndarray, sizes: np.ndarray, window: int) -> list[np.ndarray]:
    """:func:`winnow` of consecutive pieces of ``hashes`` (``sizes`` long), all in one pass:
    the windows that straddle two pieces are left out."""
    sizes = np.asarray(sizes, dtype=np.int64)
    owner = owners(sizes)
    values, of = hashes[:0], owner[:0]
    if len(hashes) >= window:
        minima = window_minima(hashes, window)
        starts = np.arange(len(minima))
        first, last = owner[starts], owner[starts + window - 1]
        inside = first == last
        # A minimum stays the minimum of many consecutive windows: a run of them counts once.
        kept = inside.copy()
        kept[1:] &= ~(inside[:-1] & (minima[1:] == minima[:-1]) & (first[1:] == first[:-1]))
        values, of = minima[kept], first[kept]
    short = np.flatnonzero((sizes > 0) & (sizes < window))  # no whole window: their minimum
    if len(short):
        firsts = np.cumsum(sizes) - sizes
        nonempty = np.flatnonzero(sizes > 0)
        minima = np.minimum.reduceat(hashes, firsts[nonempty])
        picked = np.isin(nonempty, short)
        values = np.concatenate([values, minima[picked]])
        of = np.concatenate([of, nonempty[picked]])
    order = np.lexsort((values, of))
    values, of = values[order], of[order]
    first = np.ones(len(values), dtype=bool)
    first[1:] = (values[1:] != values[:-1]) | (of[1:] != of[:-1])
    return split(values[first], np.bincount(of[first], minlength=len(sizes)))


def window_minima(hashes: np.ndarray, window: int) -> np.ndarray:
    """The minimum of each ``window`` consecutive hashes (``len(hashes) ≥ window``). Van Herk /
    Gil-Werman: prefix and suffix minima within blocks of ``window`` give each sliding minimum
    in O(1), so the whole pass is a few vector operations."""
    n = len(hashes)
    pad = (-n) % window
    padded = np.concatenate([hashes, np.full(pad, np.iinfo(np.uint64).max, dtype=np.uint64)])
    blocks = padded.reshape(-1, window)
    prefix = np.minimum.accumulate(blocks, axis=1).ravel()
    suffix = np.minimum.accumulate(blocks[:, ::-1], axis=1)[:, ::-1].ravel()
    starts = np.arange(n - window + 1)
    return np.minimum(suffix[starts], prefix[starts + window - 1])
