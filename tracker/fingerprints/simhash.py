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


class _Vocabulary:
    """Words seen so far, each with its 64-bit hash and IDF weight in parallel arrays, so a
    text's features are gathered with one dictionary lookup per distinct word."""

    MAX_WORDS = 2_000_000  # a bound on the cache (~40 MB)

    def __init__(self) -> None:
        self.ids: dict[str, int] = {}
        self.hashes = np.zeros(4096, dtype=np.uint64)
        self.idf = np.zeros(4096, dtype=np.float64)

    def lookup(self, words: list[str]) -> tuple[np.ndarray, np.ndarray]:
        get = self.ids.get
        ids = [get(w, -1) for w in words]
        if -1 in ids:
            if len(self.ids) + ids.count(-1) > self.MAX_WORDS:  # a bounded cache: start again
                self.ids.clear()
                ids = [-1] * len(words)
            ids = [i if i >= 0 else self._add(w) for w, i in zip(words, ids, strict=True)]
        index = np.array(ids)
        return self.hashes[index], self.idf[index]

    def _add(self, word: str) -> int:
        slot = len(self.ids)
        if slot >= len(self.hashes):
            self.hashes = np.resize(self.hashes, 2 * len(self.hashes))
            self.idf = np.resize(self.idf, 2 * len(self.idf))
        idf, default_idf = idf_table()
        self.ids[word] = slot
        self.hashes[slot] = xxhash.xxh3_64_intdigest(word.encode())
        self.idf[slot] = idf.get(word, default_idf)
        return slot


_VOCABULARY = _Vocabulary()


def simhash_tokens(tokens: Sequence[str]) -> int:
    """SimHash-64 of word tokens, TF·IDF weighted, stop words and numbers dropped."""
    counts = Counter(tokens)
    for word in STOP_WORDS.intersection(counts):
        del counts[word]
    words = [w for w in counts if not w.isdigit()]
    if not words:
        return 0
    hashes, idf = _VOCABULARY.lookup(words)
    return simhash_weighted(hashes, idf * np.array([counts[w] for w in words]))


def simhash_weighted(hashes: np.ndarray, weights: np.ndarray) -> int:
    """Combine 64-bit feature hashes with their weights into one fingerprint (vectorised).

    Σ w·(2b − 1) > 0  ⇔  2·Σ w·b > Σ w, so one matrix product gives every bit's vote.
    """
    bits = np.unpackbits(hashes.astype(">u8").view(np.uint8).reshape(-1, 8), axis=1)  # n x 64
    votes = weights.astype(np.float32) @ bits.astype(np.float32)
    return int.from_bytes(np.packbits(votes * 2 > weights.sum()).tobytes(), "big")


def hamming(a: int, b: int) -> int:
    return (a ^ b).bit_count()
