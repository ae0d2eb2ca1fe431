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
    gives its minimum). Van Herk / Gil-Werman: prefix and suffix minima within blocks of
    ``window`` give each sliding minimum in O(1), so the whole pass is a few vector operations.
    """
    n = len(hashes)
    if n == 0:
        return hashes[:0]
    if n <= window:
        return hashes[np.argmin(hashes) :][:1]
    pad = (-n) % window
    padded = np.concatenate([hashes, np.full(pad, np.iinfo(np.uint64).max, dtype=np.uint64)])
    blocks = padded.reshape(-1, window)
    prefix = np.minimum.accumulate(blocks, axis=1).ravel()
    suffix = np.minimum.accumulate(blocks[:, ::-1], axis=1)[:, ::-1].ravel()
    starts = np.arange(n - window + 1)
    return np.unique(np.minimum(suffix[starts], prefix[starts + window - 1]))
