"""SimHash-64 (Charikar, "Similarity estimation techniques from rounding algorithms", STOC 2002).

Every feature *f* with weight *w(f)* is hashed to 64 bits *h(f)*; the fingerprint's bit *b* is 1
when  Σ_f w(f)·(+1 if h(f)_b = 1 else −1)  > 0. Texts whose feature multisets are close get
fingerprints within a small Hamming distance; Manku et al. (WWW 2007) call two web pages
near-duplicates when their fingerprints differ in at most 3 bits.

Features here are jieba words of the folded text (Simplified, no punctuation), stop words
removed, weighted by TF × IDF with jieba's IDF table (so frequent function words weigh little
and rare names and terms weigh much).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from functools import cache
from importlib import resources

import numpy as np
import xxhash

STOP_WORDS = frozenset(
    [
        "的",
        "了",
        "和",
        "是",
        "就",
        "都",
        "而",
        "及",
        "与",
        "着",
        "或",
        "一个",
        "没有",
        "我们",
        "你们",
        "他们",
        "她们",
        "是否",
        "这",
        "那",
        "在",
        "也",
        "有",
        "不",
        "人",
        "我",
        "你",
        "他",
        "她",
        "它",
        "之",
        "其",
        "以",
        "于",
        "为",
        "则",
        "乃",
        "即",
        "又",
        "所",
        "者",
        "也",
        "矣",
        "焉",
        "哉",
        "乎",
        "兮",
        "耳",
        "曰",
        "此",
        "彼",
        "且",
        "但",
        "却",
        "把",
        "被",
        "让",
        "给",
        "向",
        "从",
        "对",
        "将",
        "这个",
        "那个",
        "什么",
        "怎么",
        "如何",
        "一",
        "上",
        "下",
        "来",
        "去",
        "说",
        "道",
        "要",
        "会",
        "能",
        "可",
        "得",
        "地",
        "个",
        "们",
        "啊",
        "呢",
        "吧",
        "吗",
        "呀",
        "么",
        "还",
        "再",
        "很",
        "太",
        "更",
        "最",
    ]
)


@cache
def idf_table() -> tuple[dict[str, float], float]:
    """jieba's bundled IDF weights and their median (used for unknown words)."""
    text = resources.files("jieba.analyse").joinpath("idf.txt").read_text(encoding="utf-8")
    idf: dict[str, float] = {}
    for line in text.splitlines():
        word, _, value = line.partition(" ")
        if value:
            idf[word] = float(value)
    median = float(np.median(np.fromiter(idf.values(), dtype=float)))
    return idf, median


def tokenize(folded: str) -> list[str]:
    """jieba words of a folded text (rjieba, jieba's Rust port, when present: ~15x faster)."""
    try:
        import rjieba

        return rjieba.cut(folded)
    except ImportError:  # pragma: no cover - rjieba is a declared dependency
        import jieba

        return jieba.lcut(folded)


_FEATURES: dict[str, tuple[int, float]] = {}
_MAX_CACHED_FEATURES = 1_000_000


def _feature(word: str) -> tuple[int, float]:
    """(64-bit hash, IDF weight) of a word, cached: the vocabulary of a library is finite."""
    feature = _FEATURES.get(word)
    if feature is None:
        idf, default_idf = idf_table()
        feature = (xxhash.xxh3_64_intdigest(word.encode()), idf.get(word, default_idf))
        if len(_FEATURES) < _MAX_CACHED_FEATURES:
            _FEATURES[word] = feature
    return feature


def simhash_tokens(tokens: Sequence[str]) -> int:
    """SimHash-64 of word tokens, TF·IDF weighted, stop words and numbers dropped."""
    counts = Counter(tokens)
    for word in STOP_WORDS.intersection(counts):
        del counts[word]
    words = [w for w in counts if not w.isdigit()]
    if not words:
        return 0
    features = [_feature(w) for w in words]
    hashes = np.fromiter((h for h, _ in features), np.uint64, len(words))
    weights = np.fromiter((idf for _, idf in features), np.float64, len(words))
    weights *= np.fromiter((counts[w] for w in words), np.float64, len(words))
    return simhash_weighted(hashes, weights)


def simhash_weighted(hashes: np.ndarray, weights: np.ndarray) -> int:
    """Combine 64-bit feature hashes with their weights into one fingerprint (vectorised).

    Σ w·(2b − 1) > 0  ⇔  2·Σ w·b > Σ w, so one matrix product gives every bit's vote.
    """
    bits = np.unpackbits(hashes.astype(">u8").view(np.uint8).reshape(-1, 8), axis=1)  # n x 64
    votes = weights.astype(np.float32) @ bits.astype(np.float32)
    return int.from_bytes(np.packbits(votes * 2 > weights.sum()).tobytes(), "big")


def hamming(a: int, b: int) -> int:
    return (a ^ b).bit_count()
