"""Sentences of a text as bags of canonical words, and their order-free keys.

The unit of rewritten-copy detection is the sentence, as in the text-alignment systems of PAN
(Potthast et al., "Overview of the 5th International Competition on Plagiarism Detection",
CLEF 2013; Sanchez-Perez, Sidorov and Gelbukh, "A Winning Approach to Text Alignment for Text
Reuse Detection at PAN 2014"): a rewriter changes the words of a sentence, rarely which
sentence says what. A text is cut at sentence ends (。！？；… and line breaks); a sentence of
more than ``LONG_UNIT_CHARS`` folded characters is cut again at clause marks (，：、) into
pieces of at least ``MIN_CLAUSE_CHARS``. Each unit is the bag of its words' canonical codes
(:mod:`tracker.fingerprints.lexicon`): synonyms one code, function words gone, numbers by
value.

**Keys.** A unit with at least ``MIN_KEY_CODES`` codes is filed under one key, the hash of
its two rarest codes (a set: order-free, in the sentence and in the text). Rare words are the
ones a rewriter keeps (names, places, numbers, terms) and synonyms share a code, so the key
survives swaps, fillers, cut clauses and re-ordering. A master files a content-defined
sample of its keys (those ≡ 0 mod ``KEY_SAMPLE``: Broder's MOD_m), so its records stay
within the index budget; a page looks up the pairs of its units' ``QUERY_RAREST`` rarest codes
that the sample would keep (a page's unit that gained a rare word, or lost one, still names
the master's pair).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from itertools import combinations

import numpy as np

from tracker.fingerprints.lexicon import Lexicon, join_numbers, lexicon
from tracker.text.normalize import NormalizedText, codepoints

SENTENCE_ENDS = "。！？!?；;…\n"
CLAUSE_MARKS = "，,：:、"
LONG_UNIT_CHARS = 60
MIN_CLAUSE_CHARS = 20
MIN_KEY_CODES = 3
QUERY_RAREST = 4
KEY_SAMPLE = 2
SAMPLE_ABOVE_UNITS = 40
_ENDS = np.array([ord(c) for c in SENTENCE_ENDS], dtype=np.uint32)
_CLAUSES = np.array([ord(c) for c in CLAUSE_MARKS], dtype=np.uint32)


@dataclass(frozen=True)
class Unit:
    """A sentence or clause: ``[start, end)`` in the folded characters, its content words in
    text order with their codes, and its distinct codes rarest first with their weights."""

    start: int
    end: int
    words: tuple[str, ...]
    word_codes: tuple[int, ...]
    codes: tuple[int, ...]
    weights: tuple[float, ...]
    anchors: frozenset[int]  # the codes that are anchors
    norm: float = 0.0  # of the weights, as a vector

    @property
    def chars(self) -> int:
        return self.end - self.start


@dataclass(frozen=True)
class Sentences:
    units: list[Unit]
    chars: int  # folded characters of the whole text

    def __len__(self) -> int:
        return len(self.units)


def boundaries(text: NormalizedText) -> list[tuple[int, int]]:
    """``[start, end)`` in ``text.chars`` of each unit (sentences, long ones cut at clauses)."""
    n = len(text.chars)
    if n == 0:
        return []
    source = codepoints(text.source)
    ends = np.searchsorted(text.char_pos, np.flatnonzero(np.isin(source, _ENDS)))
    clauses = np.searchsorted(text.char_pos, np.flatnonzero(np.isin(source, _CLAUSES)))
    cuts = np.unique(np.r_[ends, n])
    cuts = cuts[(cuts > 0) & (cuts <= n)].tolist()
    clause_list = np.unique(clauses).tolist()
    units, start, k = [], 0, 0
    for end in cuts:
        if end <= start:
            continue
        if end - start > LONG_UNIT_CHARS:
            while k < len(clause_list) and clause_list[k] <= start:
                k += 1
            last = start
            j = k
            while j < len(clause_list) and clause_list[j] < end:
                c = clause_list[j]
                if c - last >= MIN_CLAUSE_CHARS and end - c >= MIN_CLAUSE_CHARS:
                    units.append((last, c))
                    last = c
                j += 1
            units.append((last, end))
        else:
            units.append((start, end))
        start = end
    return units


def sentences_of(
    text: NormalizedText, words: list[str] | None = None, lex: Lexicon | None = None
) -> Sentences:
    """The units of ``text``; ``words``: its jieba words cut line by line, if already cut
    (:func:`tracker.fingerprints.simhash.segment_lines`), else cut here."""
    from tracker.fingerprints.simhash import cut_lines

    lex = lex or lexicon()
    if words is None or sum(map(len, words)) != len(text.chars):
        words = cut_lines(text.lines())
    bounds = boundaries(text)
    lengths = np.fromiter(map(len, words), np.int64, len(words))
    # unit k holds the words starting before its end, from where unit k - 1's stopped
    last = np.searchsorted(np.cumsum(lengths) - lengths, [end for _, end in bounds]).tolist()
    canon_of = lex.canon
    units: list[Unit] = []
    for (start, end), first, stop in zip(bounds, [0, *last][:-1], last, strict=True):
        unit_words, unit_codes = [], []
        weights: dict[int, float] = {}
        anchors = set()
        for word in join_numbers(words[first:stop]):
            canon = canon_of(word)
            if canon is None:
                continue
            unit_words.append(word)
            unit_codes.append(canon.code)
            weights[canon.code] = canon.weight
            if canon.anchor:
                anchors.add(canon.code)
        ranked = sorted(weights, key=lambda c: (-weights[c], c))
        units.append(
            Unit(
                start,
                end,
                tuple(unit_words),
                tuple(unit_codes),
                tuple(ranked),
                tuple(weights[c] for c in ranked),
                frozenset(anchors),
                math.sqrt(sum(w * w for w in weights.values())),
            )
        )
    return Sentences([u for u in units if u.codes], len(text.chars))


MASK64 = (1 << 64) - 1


def pair_key(a: int, b: int) -> int:
    """The order-free key of two codes: the smaller xor the larger rotated, through the
    splitmix64 finaliser (:func:`tracker.fingerprints.anchors.mix`, in Python integers: one
    pair at a time, numpy's per-call cost would be most of it)."""
    lo, hi = (a, b) if a < b else (b, a)
    h = lo ^ ((hi << 1 | hi >> 63) & MASK64)
    h ^= h >> 30
    h = (h * 0xBF58476D1CE4E5B9) & MASK64
    h ^= h >> 27
    h = (h * 0x94D049BB133111EB) & MASK64
    return h ^ (h >> 31)


def _kept(key: int) -> bool:
    return key % KEY_SAMPLE == 0


def master_keys(sentences: Sentences) -> np.ndarray:
    """The keys a master files: its units' rarest pairs, distinct (uint64); a long master
    (``SAMPLE_ABOVE_UNITS`` units or more) only the sampled ones."""
    sampled = len(sentences.units) >= SAMPLE_ABOVE_UNITS
    keys = {
        key
        for u in sentences.units
        if len(u.codes) >= MIN_KEY_CODES
        and (_kept(key := pair_key(u.codes[0], u.codes[1])) or not sampled)
    }
    return np.array(sorted(keys), dtype=np.uint64)


def query_keys(sentences: Sentences) -> tuple[np.ndarray, np.ndarray]:
    """The keys a page looks up: pairs of its units' ``QUERY_RAREST`` rarest codes, with the
    unit each comes from (uint64 keys, int64 units)."""
    keys: dict[int, int] = {}
    for k, u in enumerate(sentences.units):
        if len(u.codes) < MIN_KEY_CODES - 1:
            continue
        for a, b in combinations(u.codes[:QUERY_RAREST], 2):
            keys.setdefault(pair_key(a, b), k)
    return (
        np.fromiter(keys.keys(), np.uint64, len(keys)),
        np.fromiter(keys.values(), np.int64, len(keys)),
    )
