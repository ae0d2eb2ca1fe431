"""The three baselines the tracker is compared with, on the same masters and the same cases.

* ``classic``: jieba words (the Python package, as in the classic setups), punctuation and stop
  words dropped, term-frequency weights, SimHash-64 (Charikar 2002: bit *b* is 1 when
  Σ_f tf(f)·(±1 by bit *b* of h(f)) > 0, h = xxHash64), a page matches every master within
  Hamming distance 3 (Manku et al. 2007), found by a linear scan (exact, no table pruning).
  No Traditional→Simplified folding, no ad removal: the text is taken as the crawler sees it.
* ``minhash-lsh``: datasketch MinHash (128 permutations) of the set of character 5-shingles of
  the text with punctuation and whitespace removed (Unicode categories other than L and N), in a
  ``MinHashLSH`` with Jaccard threshold 0.5. LSH estimates the Jaccard similarity
  |A∩B| / |A∪B|, a resemblance measure: a page that *contains* a master among other text
  (merged chapters, partial copies, a chapter split over pages) has a low Jaccard similarity with
  it however much is copied. 0.5 is a usual near-duplicate setting (datasketch's default is 0.9)
  and keeps false positives on innocents at zero while catching lightly disguised whole copies.
* ``naive``: Traditional→Simplified (OpenCC t2s) and NFKC, only letters and digits kept,
  character 8-shingles; a master is reported when its containment in the page
  |S(master) ∩ S(page)| / |S(master)| ≥ 0.2 (Broder 1997). Shingles are 64-bit hashes in a
  sorted array of (hash, master) pairs, so a page costs one ``searchsorted`` and a ``bincount``.
"""

from __future__ import annotations

import logging
import unicodedata
from collections.abc import Sequence
from functools import cache

import numpy as np
import xxhash

from tracker.model import MasterDocument

CLASSIC_MAX_DISTANCE = 3
LSH_THRESHOLD = 0.5
LSH_PERMUTATIONS = 128
LSH_SHINGLE = 5
NAIVE_SHINGLE = 8
NAIVE_MIN_CONTAINMENT = 0.2

_STOP = (
    "的 了 和 是 就 都 而 及 与 着 或 一个 没有 我们 你们 他们 她们 这 那 在 也 有 不 人 我 你 "
    "他 她 它 之 其 以 于 为 则 乃 即 又 所 者 矣 焉 哉 乎 兮 耳 曰 此 彼 且 但 却 把 被 让 给 "
    "向 从 对 将 这个 那个 什么 怎么 一 上 下 来 去 说 道 要 会 能 可 得 地 个 们 啊 呢 吧 吗 "
    "呀 么 还 再 很 太 更 最"
)
CLASSIC_STOP_WORDS = frozenset(_STOP.split())


@cache
def _keep_table() -> np.ndarray:
    """True for code points in Unicode categories L* and N* (the BMP; others are dropped)."""
    return np.array([unicodedata.category(chr(cp))[0] in "LN" for cp in range(0x10000)], dtype=bool)


def content_codepoints(text: str) -> np.ndarray:
    """Code points of the letters and digits of ``text`` (punctuation, spaces, zero-width out)."""
    cps = np.frombuffer(text.encode("utf-32-le", "surrogatepass"), dtype="<u4")
    cps = cps[cps < 0x10000]
    return cps[_keep_table()[cps]]


def shingle_hashes(cps: np.ndarray, size: int, unique: bool = True) -> np.ndarray:
    """64-bit hash of every ``size``-code-point shingle (polynomial + mixing), in text order,
    or sorted and unique."""
    n = len(cps) - size + 1
    if n <= 0:
        return np.zeros(0, dtype=np.uint64)
    h = np.zeros(n, dtype=np.uint64)
    with np.errstate(over="ignore"):
        for j in range(size):
            h = h * np.uint64(0x100000001B3) + cps[j : j + n].astype(np.uint64)
        h ^= h >> np.uint64(29)
        h *= np.uint64(0xBF58476D1CE4E5B9)
        h ^= h >> np.uint64(32)
    return np.unique(h) if unique else h


class Baseline:
    name = ""

    def add(self, docs: Sequence[MasterDocument]) -> None:
        raise NotImplementedError

    def fingerprint(self, text: str) -> object:
        raise NotImplementedError

    def check(self, text: str) -> list[str]:
        raise NotImplementedError

    def warm_up(self) -> None:
        self.fingerprint("预热：加载词典与转换表。" * 4)


class ClassicSimHash(Baseline):
    name = "classic"

    def __init__(self, max_distance: int = CLASSIC_MAX_DISTANCE) -> None:
        self.max_distance = max_distance
        self.ids: list[str] = []
        self.prints = np.zeros(0, dtype=np.uint64)

    @staticmethod
    def tokens(text: str) -> list[str]:
        import jieba

        jieba.setLogLevel(logging.WARNING)
        return [
            w
            for w in jieba.lcut(text)
            if w not in CLASSIC_STOP_WORDS and any(ch.isalnum() for ch in w)
        ]

    def fingerprint(self, text: str) -> int:
        counts: dict[str, int] = {}
        for w in self.tokens(text):
            counts[w] = counts.get(w, 0) + 1
        if not counts:
            return 0
        hashes = np.array([xxhash.xxh64_intdigest(w.encode()) for w in counts], dtype=np.uint64)
        weights = np.fromiter(counts.values(), dtype=np.float64, count=len(counts))
        bits = np.unpackbits(hashes.astype(">u8").view(np.uint8).reshape(-1, 8), axis=1)
        votes = weights @ (bits.astype(np.float64) * 2.0 - 1.0)  # bit 0 = most significant
        packed = np.packbits(votes > 0).view(">u8")[0]
        return int(packed)

    def add(self, docs: Sequence[MasterDocument]) -> None:
        self.ids += [doc.doc_id for doc in docs]
        prints = np.array([self.fingerprint(doc.text) for doc in docs], dtype=np.uint64)
        self.prints = np.concatenate([self.prints, prints])

    def check(self, text: str) -> list[str]:
        distance = np.bitwise_count(self.prints ^ np.uint64(self.fingerprint(text)))
        return [self.ids[i] for i in np.flatnonzero(distance <= self.max_distance)]


class MinHashLSHBaseline(Baseline):
    name = "minhash-lsh"

    def __init__(
        self,
        threshold: float = LSH_THRESHOLD,
        num_perm: int = LSH_PERMUTATIONS,
        shingle: int = LSH_SHINGLE,
    ) -> None:
        from datasketch import MinHashLSH

        self.num_perm = num_perm
        self.shingle = shingle
        self.lsh = MinHashLSH(threshold=threshold, num_perm=num_perm)

    def fingerprint(self, text: str):
        from datasketch import MinHash

        chars = content_codepoints(text).astype("<u4").tobytes().decode("utf-32-le")
        shingles = {chars[i : i + self.shingle] for i in range(len(chars) - self.shingle + 1)}
        m = MinHash(num_perm=self.num_perm)
        m.update_batch([s.encode("utf-8") for s in shingles])
        return m

    def add(self, docs: Sequence[MasterDocument]) -> None:
        with self.lsh.insertion_session() as session:
            for doc in docs:
                session.insert(doc.doc_id, self.fingerprint(doc.text))

    def check(self, text: str) -> list[str]:
        return sorted(self.lsh.query(self.fingerprint(text)))


class NaiveContainment(Baseline):
    name = "naive"

    def __init__(
        self, shingle: int = NAIVE_SHINGLE, min_containment: float = NAIVE_MIN_CONTAINMENT
    ) -> None:
        self.shingle = shingle
        self.min_containment = min_containment
        self.ids: list[str] = []
        self.sizes = np.zeros(0, dtype=np.int64)
        self.hashes = np.zeros(0, dtype=np.uint64)  # sorted
        self.owners = np.zeros(0, dtype=np.int32)  # master index of each hash

    @staticmethod
    @cache
    def _t2s():
        import opencc

        return opencc.OpenCC("t2s")

    def fingerprint(self, text: str, unique: bool = True) -> np.ndarray:
        folded = unicodedata.normalize("NFKC", self._t2s().convert(text)).lower()
        return shingle_hashes(content_codepoints(folded), self.shingle, unique)

    def add(self, docs: Sequence[MasterDocument]) -> None:
        prints = [self.fingerprint(doc.text) for doc in docs]
        first = len(self.ids)
        self.ids += [doc.doc_id for doc in docs]
        self.sizes = np.concatenate([self.sizes, [len(p) for p in prints]])
        owners = np.concatenate(
            [self.owners, *[np.full(len(p), first + i, np.int32) for i, p in enumerate(prints)]]
        )
        hashes = np.concatenate([self.hashes, *prints])
        order = np.argsort(hashes, kind="stable")
        self.hashes, self.owners = hashes[order], owners[order]

    def longest_shared(self, text: str) -> int:
        """Length in characters of the longest passage of the text (folded) that also occurs in
        the masters: the longest run of consecutive shingles found in the index, + shingle − 1.
        Used to vet innocent texts."""
        page = self.fingerprint(text, unique=False)
        if len(page) == 0 or len(self.hashes) == 0:
            return 0
        lo = np.minimum(np.searchsorted(self.hashes, page), len(self.hashes) - 1)
        found = np.concatenate([[False], self.hashes[lo] == page, [False]]).astype(np.int8)
        edges = np.flatnonzero(np.diff(found))
        runs = edges[1::2] - edges[::2]
        return int(runs.max()) + self.shingle - 1 if len(runs) else 0

    def related(self, docs: Sequence[MasterDocument], min_chars: int) -> dict[str, set[str]]:
        """Pairs of indexed masters sharing a passage of ``min_chars`` or more (after folding):
        the corpus repeats itself (a block of 红楼梦 ch. 120 also sits in ch. 55, laws printed
        twice), and a copy of one such master legitimately contains the other."""
        related: dict[str, set[str]] = {}
        need = min_chars - self.shingle + 1  # consecutive shared shingles
        for doc in docs:
            positions, owners = self._postings(self.fingerprint(doc.text, unique=False))
            for other in np.flatnonzero(np.bincount(owners, minlength=len(self.ids)) >= need):
                if self.ids[other] == doc.doc_id:
                    continue
                mine = np.unique(positions[owners == other])
                breaks = np.flatnonzero(np.diff(mine) != 1)
                runs = np.diff(np.concatenate([[-1], breaks, [len(mine) - 1]]))
                if runs.max() >= need:
                    related.setdefault(doc.doc_id, set()).add(self.ids[other])
                    related.setdefault(self.ids[other], set()).add(doc.doc_id)
        return related

    def _postings(self, page: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(position in ``page``, owning master) of every index entry matching a page shingle."""
        lo = np.searchsorted(self.hashes, page, side="left")
        counts = np.searchsorted(self.hashes, page, side="right") - lo
        hit = np.flatnonzero(counts)
        counts = counts[hit]
        offsets = np.arange(counts.sum()) - np.repeat(np.cumsum(counts) - counts, counts)
        return np.repeat(hit, counts), self.owners[np.repeat(lo[hit], counts) + offsets]

    def check(self, text: str) -> list[str]:
        _, owners = self._postings(self.fingerprint(text))
        if len(owners) == 0:
            return []
        shared = np.bincount(owners, minlength=len(self.ids))
        containment = shared / np.maximum(self.sizes, 1)
        return [self.ids[i] for i in np.flatnonzero(containment >= self.min_containment)]


BASELINES = {b.name: b for b in (ClassicSimHash, MinHashLSHBaseline, NaiveContainment)}
