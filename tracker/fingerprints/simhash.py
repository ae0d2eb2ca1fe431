"""SimHash-64 (Charikar, "Similarity estimation techniques from rounding algorithms", STOC 2002).

Every feature *f* with weight *w(f)* is hashed to 64 bits *h(f)*; the fingerprint's bit *b* is 1
when  Σ_f w(f)·(+1 if h(f)_b = 1 else −1)  > 0. Texts whose feature multisets are close get
fingerprints within a small Hamming distance; Manku et al. (WWW 2007) call two web pages
near-duplicates when their fingerprints differ in at most 3 bits.

Features here are jieba words of the folded text (Simplified, no punctuation), stop words
removed, weighted by TF × IDF with jieba's IDF table (so frequent function words weigh little
and rare names and terms weigh much). Only the segmentation (rjieba) works word by word: the
words' hashes, weights and votes are computed for the whole text with a few vector operations
(:func:`word_hashes`, :class:`_WeightTable`, :func:`simhash_weighted`).

A normalised text is segmented line by line (:func:`simhash_normalized`): no word spans two
lines of the page, so the votes of a text are the sums of its lines' votes (:class:`Votes`),
and dropping a line (a site's boilerplate, :mod:`pipelines.boilerplate`) takes its votes away
without segmenting the rest of the page again.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import cache
from itertools import chain
from pathlib import Path

import numpy as np

from tracker.disk_cache import cached_arrays
from tracker.fingerprints.anchors import mix
from tracker.fingerprints.batches import owners
from tracker.text.normalize import NormalizedText, codepoints

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


def idf_table() -> tuple[list[str], np.ndarray, float]:
    """jieba's bundled IDF weights: words, their IDF, and the median (for unknown words)."""
    fields = _idf_path().read_text(encoding="utf-8").split()
    values = np.array(fields[1::2], dtype=np.float64)
    return fields[0::2], values, float(np.median(values))


def _idf_path() -> Path:
    # Found without importing jieba (0.3 s), which rjieba makes unnecessary.
    spec = importlib.util.find_spec("jieba")
    if spec is None or not spec.submodule_search_locations:  # pragma: no cover - a dependency
        raise ImportError("jieba is needed for its IDF table")
    return Path(spec.submodule_search_locations[0]) / "analyse" / "idf.txt"


@cache
def _segmenter() -> Callable[[str], list[str]]:
    """rjieba's cut (jieba's Rust port, ~15x faster), loaded on first use: its dictionary takes
    0.15 s, which commands that never segment (``tracker report``) need not pay.

    Dictionary words only, without jieba's HMM guessing of new words: the guess depends on
    the characters around an unknown run, so typos and homophone swaps would change words far
    from the edit; and the dictionary-only cut is ~20 % faster on clean text."""
    try:
        from rjieba import cut

        return lambda text: cut(text, False)
    except ImportError:  # pragma: no cover - rjieba is a declared dependency
        from jieba import lcut

        return lambda text: lcut(text, HMM=False)


def tokenize(folded: str) -> list[str]:
    """jieba words of a folded text."""
    return _segmenter()(folded)


# Word hashes are computed for all words of a text at once, from its code points and the words'
# lengths, with no Python work per word: a polynomial hash  Σ_i c_i·P^i  (mod 2^64) of each word
# is a difference of prefix sums of c_j·P^-j, rescaled by P^start (P is odd, so invertible).
_P = 0x100000001B3
_P_INVERSE = pow(_P, -1, 1 << 64)
_LENGTH_SALT = np.uint64(0x9E3779B97F4A7C15)


class _Powers:
    """P^i and P^-i (mod 2^64) for i < size, grown on demand."""

    def __init__(self) -> None:
        self.up = self.down = np.ones(1, dtype=np.uint64)

    def get(self, size: int) -> tuple[np.ndarray, np.ndarray]:
        if size > len(self.up):
            size = max(size, 2 * len(self.up), 4096)
            up = np.full(size, _P, dtype=np.uint64)
            down = np.full(size, _P_INVERSE, dtype=np.uint64)
            up[0] = down[0] = 1
            self.up, self.down = np.cumprod(up), np.cumprod(down)  # wraps mod 2^64
        return self.up, self.down


_POWERS = _Powers()


def word_hashes(codes: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """64-bit hash of each word, the words being consecutive runs of ``lengths`` code points of
    ``codes`` (so equal words get equal hashes wherever they occur)."""
    ends = np.cumsum(lengths)
    starts = ends - lengths
    up, down = _POWERS.get(len(codes) + 1)
    prefix = np.zeros(len(codes) + 1, dtype=np.uint64)
    np.cumsum(codes.astype(np.uint64) * down[: len(codes)], out=prefix[1:])
    h = (prefix[ends] - prefix[starts]) * up[starts]
    return mix(h ^ (lengths.astype(np.uint64) * _LENGTH_SALT))


class _WeightTable:
    """jieba's IDF table keyed by :func:`word_hashes`, as a direct-mapped hash table so that a
    text's words are weighed with a couple of vector gathers (a binary search of the 270k sorted
    hashes costs 3x more). Each word sits in one of two slots named by bits of its hash; a slot
    holds 24 more bits of the hash, to check it, and the IDF in steps of 1/16. Stop words weigh
    0, unknown words the median IDF. 8 MB."""

    SLOT_BITS = 21
    STEP = 16

    def __init__(self, slots: np.ndarray | None = None, median: float = 0.0) -> None:
        if slots is not None:
            self.slots, self.median = slots, np.float32(median)
            return
        words, values, median = idf_table()
        stop = sorted(STOP_WORDS)  # placed first, so that they take the slots: weight 0
        words, values = stop + words, np.concatenate([np.zeros(len(stop)), values])
        hashes = word_hashes(codepoints("".join(words)), _lengths(words))
        entries = self._check(hashes) | np.round(values * self.STEP).clip(0, 255).astype(np.uint32)
        self.median = np.float32(round(median * self.STEP) / self.STEP)
        self.slots = np.zeros(1 << self.SLOT_BITS, dtype=np.uint32)  # 0: empty
        for slot_of in (self._first, self._second):  # the few words left out weigh the median
            where = slot_of(hashes)
            free = self.slots[where] == 0
            _, first = np.unique(where[free], return_index=True)  # one word per free slot
            chosen = np.flatnonzero(free)[first]
            self.slots[where[chosen]] = entries[chosen]
            left = np.ones(len(hashes), dtype=bool)
            left[chosen] = False
            hashes, entries = hashes[left], entries[left]

    def _first(self, hashes: np.ndarray) -> np.ndarray:
        return (hashes >> np.uint64(64 - self.SLOT_BITS)).astype(np.intp)

    def _second(self, hashes: np.ndarray) -> np.ndarray:
        return (hashes & np.uint64((1 << self.SLOT_BITS) - 1)).astype(np.intp)

    @staticmethod
    def _check(hashes: np.ndarray) -> np.ndarray:
        # Bits 21..44 (clear of both slot numbers), shifted above the 8 weight bits; never 0.
        return (((hashes >> np.uint64(21)) & np.uint64(0xFFFFFF)) | np.uint64(1)).astype(
            np.uint32
        ) << np.uint32(8)

    def lookup(self, hashes: np.ndarray) -> np.ndarray:
        check = self._check(hashes)
        found = self.slots[self._first(hashes)]
        weights = (found & np.uint32(0xFF)).astype(np.float32) / self.STEP
        missed = (found ^ check) >> np.uint32(8) != 0
        if missed.any():
            found = self.slots[self._second(hashes[missed])]
            weights[missed] = np.where(
                (found ^ check[missed]) >> np.uint32(8) == 0,
                (found & np.uint32(0xFF)).astype(np.float32) / self.STEP,
                self.median,
            )
        return weights


@cache
def _weight_table() -> _WeightTable:
    """The table, built once per machine (0.5 s) and then loaded from the user's cache."""
    source = _idf_path().stat()
    key = f"{source.st_size}:{source.st_mtime_ns}:{_WeightTable.SLOT_BITS}:{_WeightTable.STEP}:"
    key += ",".join(sorted(STOP_WORDS))

    def build() -> dict[str, np.ndarray]:
        table = _WeightTable()
        return {"slots": table.slots, "median": np.array(table.median)}

    arrays = cached_arrays("simhash-weights", key, build)
    return _WeightTable(arrays["slots"], float(arrays["median"]))


def idf_weights(words: Sequence[str]) -> tuple[np.ndarray, float]:
    """jieba's IDF of each word as SimHash weighs it (0 for a stop word, the median for a word
    the table lacks), and that median (high: most of the table's entries are rare words)."""
    table = _weight_table()
    if not words:
        return np.zeros(0), float(table.median)
    hashes = word_hashes(codepoints("".join(words)), _lengths(words))
    return table.lookup(hashes).astype(np.float64), float(table.median)


def _lengths(words: Sequence[str]) -> np.ndarray:
    return np.fromiter(map(len, words), np.int64, len(words))


def simhash_text(folded: str) -> int:
    """SimHash-64 of the jieba words of one folded line (0 when none is weighted). A page's is
    cut line by line of its source: :func:`simhash_normalized`."""
    return votes_of_lines([folded]).fingerprint


def simhash_segmented(folded: Sequence[str], words: Sequence[list[str]]) -> np.ndarray:
    """SimHash-64 (uint64) of each folded text, already segmented into ``words``: only the
    segmentation runs text by text; hashes, weights and votes of all the texts' words are
    computed together, so a batch pays numpy's per-call cost once, not per text."""
    return Votes.fingerprints(*votes_segmented(folded, words))


def votes_segmented(
    folded: Sequence[str], words: Sequence[list[str]]
) -> tuple[np.ndarray, np.ndarray]:
    """The votes of texts already segmented into ``words``: an ``n × 64`` array of the weight
    of each text's words having each bit set, and each text's total weight (see
    :class:`Votes`)."""
    counts = np.fromiter(map(len, words), np.int64, len(words))
    lengths = _lengths(list(chain.from_iterable(words)))
    covered = np.bincount(owners(counts), weights=lengths, minlength=len(words))
    # A segmenter that drops or changes characters: hash the words it returned instead.
    pieces = [
        text if covered[i] == len(text) else "".join(words[i]) for i, text in enumerate(folded)
    ]
    return _vote_groups(codepoints("".join(pieces)), lengths, counts)


def segment_lines(texts: Sequence[NormalizedText]) -> list[list[str]]:
    """jieba words of each normalised text, line by line of its page (no word spans two
    lines). rjieba segments without holding the GIL, so this may run in a thread beside other
    work (only making the words' ``str`` objects needs it)."""
    return [cut_lines(text.lines()) for text in texts]


def cut_lines(lines: Sequence[str]) -> list[str]:
    """jieba words of folded ``lines``, each cut alone."""
    return list(chain.from_iterable(map(_segmenter(), lines)))


def simhash_normalized(texts: Sequence[NormalizedText]) -> np.ndarray:
    """SimHash-64 of each normalised text's jieba words, cut line by line (uint64)."""
    return simhash_segmented([t.chars for t in texts], segment_lines(texts))


def votes_normalized(text: NormalizedText) -> Votes:
    """The :class:`Votes` of a normalised text (its SimHash is their ``fingerprint``)."""
    return votes_of_lines(text.lines())


def votes_of_lines(lines: Sequence[str]) -> Votes:
    """The :class:`Votes` of folded ``lines``' words, each line cut alone.

    The lines are cut in one call, joined by line breaks: jieba splits a text into blocks at
    every character outside its word classes (a line break is one) and segments each block
    alone, and a line break outside a block is a word of its own. So the words of the joined
    lines are each line's words, with a ``"\n"`` between lines, left out here
    (:func:`_joined_words`). Where that cannot be told apart (a line holding a line break or
    a carriage return before one), the lines are cut one by one."""
    found = _joined_words(lines)
    if found is None:
        ones, totals = votes_segmented(["".join(lines)], [cut_lines(lines)])
    else:
        codes, lengths = found
        ones, totals = _vote_groups(codes, lengths, np.array([len(lengths)]))
    return Votes(ones[0], float(totals[0]))


_SEPARATOR = "\x00"  # between the words joined to read their lengths; never in folded text


def _joined_words(lines: Sequence[str]) -> tuple[np.ndarray, np.ndarray] | None:
    """The code points and lengths of the words of ``lines``, cut in one call of the lines
    joined by line breaks, without the line breaks between them; None when the words do not
    give back the joined text with each line break a word of its own."""
    text = "\n".join(lines)
    if not lines or text.count("\n") != len(lines) - 1:
        return None
    words = _segmenter()(text)
    # The words' lengths without a Python call per word: joined by a separator, read back
    # (word k ends where separator k stands, less the k separators before it).
    codes = codepoints(_SEPARATOR.join(words))
    separator = codes == ord(_SEPARATOR)
    at = np.flatnonzero(separator)
    if len(at) != len(words) - 1 or len(codes) - len(at) != len(text):
        return None
    ends = np.empty(len(words), dtype=np.int64)
    np.subtract(at, np.arange(len(at)), out=ends[:-1])
    ends[-1] = len(text)
    lengths = np.diff(ends, prepend=0)
    codes = codes[~separator]
    breaks = (lengths == 1) & (codes[np.minimum(ends - 1, len(codes) - 1)] == 10)
    if np.count_nonzero(breaks) != len(lines) - 1:
        return None
    return codes[codes != 10], lengths[~breaks]


@dataclass(frozen=True)
class Votes:
    """A SimHash before its signs are taken: per bit b, the weight ``ones[b]`` of the words
    whose hash has bit b set, and the weight ``total`` of all; bit b of the fingerprint is 1
    when  2·ones[b] > total  (the same as  Σ w·(2·h_b − 1) > 0).

    Weights are sixteenths, so their sums are exact in float64 whatever their order: the votes
    of a text less those of some of its lines (cut as the text's, line by line) are exactly
    the votes of the text without them."""

    ones: np.ndarray  # float64, 64
    total: float

    @property
    def fingerprint(self) -> int:
        return int(self.fingerprints(self.ones[None, :], np.array([self.total]))[0])

    def __sub__(self, other: Votes) -> Votes:
        return Votes(self.ones - other.ones, self.total - other.total)

    @staticmethod
    def fingerprints(ones: np.ndarray, totals: np.ndarray) -> np.ndarray:
        """The fingerprints (uint64) of ``n × 64`` votes and their ``n`` totals."""
        set_bits = ones > (np.asarray(totals, dtype=np.float64) / 2)[:, None]
        return np.packbits(set_bits, axis=1, bitorder="little").view("<u8").reshape(-1)


def simhash_tokens(tokens: Sequence[str]) -> int:
    """SimHash-64 of word tokens, TF·IDF weighted, stop words and numbers dropped.

    Each occurrence of a word adds its IDF to the votes, so a word's total weight is TF × IDF.
    """
    tokens = [t for t in tokens if t]
    lengths = _lengths(tokens)
    counts = np.array([len(tokens)])
    return int(Votes.fingerprints(*_vote_groups(codepoints("".join(tokens)), lengths, counts))[0])


def _vote_groups(
    codes: np.ndarray, lengths: np.ndarray, counts: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """The votes (``n × 64``) and total weights of consecutive groups of words: ``counts[g]``
    words for group g, the words being runs of ``lengths`` code points of ``codes``."""
    if len(lengths) == 0:
        return np.zeros((len(counts), 64)), np.zeros(len(counts))
    hashes = word_hashes(codes, lengths)
    weights = _weight_table().lookup(hashes).astype(np.float64)
    digit = (codes - 0x30) < 10  # unsigned: only '0'..'9'
    if digit.any():  # numbers carry no evidence (chapter numbers, dates): they weigh 0
        starts = np.cumsum(lengths) - lengths
        weights[np.add.reduceat(digit.astype(np.int32), starts) == lengths] = 0.0
    return weighted_votes(hashes, weights, owners(counts), len(counts))


def simhash_weighted(hashes: np.ndarray, weights: np.ndarray) -> int:
    """Combine 64-bit feature hashes with their weights into one fingerprint."""
    groups = np.zeros(len(hashes), dtype=np.intp)
    return int(Votes.fingerprints(*weighted_votes(hashes, np.asarray(weights), groups, 1))[0])


ONE_PRODUCT_WORDS = 1 << 16  # up to this many words, one text's votes are one matrix product
# _BYTE_BITS[v, j]: bit j of the byte value v.
_BYTE_BITS = ((np.arange(256)[:, None] >> np.arange(8)) & 1).astype(np.float64)


def weighted_votes(
    hashes: np.ndarray, weights: np.ndarray, groups: np.ndarray, n_groups: int
) -> tuple[np.ndarray, np.ndarray]:
    """The votes of each group of weighted 64-bit feature hashes: per group and bit b, the
    weight of its features with bit b set (``n_groups × 64``), and each group's total weight
    (bit b of a fingerprint is set when  2·Σ_{h_b=1} w > Σ w, see :class:`Votes`).

    The votes are counted a byte at a time: per group, the weight of each of the 256 values of
    hash byte k (one ``bincount``), times the 256 × 8 table of those values' bits; no n × 64
    matrix of bits is made, except for a single group, where its one product is the faster
    way. Weights in steps of 1/16 add up exactly in float64, so the result does not depend on
    the order of the sum.
    """
    weights = np.asarray(weights, dtype=np.float64)
    totals = np.bincount(groups, weights=weights, minlength=n_groups)
    octets = hashes.astype("<u8").view(np.uint8).reshape(-1, 8)
    if n_groups == 1 and len(hashes) <= ONE_PRODUCT_WORDS:
        # One text (a page being checked): one n x 64 product is faster, in float32 while
        # that stays exact (sums of sixteenths below 2^20). Not for a whole book on one page,
        # whose n x 64 matrix would take gigabytes: the byte-wise counts below take O(n).
        exact = np.float32 if totals[0] < 1 << 20 else np.float64
        bits = np.unpackbits(octets, axis=1, bitorder="little").astype(exact)
        return (weights.astype(exact) @ bits).astype(np.float64)[None, :], totals
    base = np.asarray(groups, dtype=np.intp) * 256
    ones = np.empty((n_groups, 64))
    for k in range(8):
        sums = np.bincount(base + octets[:, k], weights=weights, minlength=n_groups * 256)
        ones[:, 8 * k : 8 * k + 8] = sums.reshape(n_groups, 256) @ _BYTE_BITS
    return ones, totals


def hamming(a: int, b: int) -> int:
    return (a ^ b).bit_count()
