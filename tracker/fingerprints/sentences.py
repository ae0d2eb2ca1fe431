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

**Stored cuts.** A master's jieba words are cut once, at ingest, and kept as a bitmap of the
folded characters that start a word (:func:`pack_cuts`: an eighth of a byte a character), so
that a check meeting a master not cached rebuilds its units without cutting it again
(:func:`unpack_cuts`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from itertools import chain

import numpy as np

from tracker.fingerprints.anchors import mix
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
class Flat:
    """A text's units as flat arrays, for the alignment: entry ``e`` is code ``codes[e]`` of
    unit ``unit[e]`` (units in order, each unit's codes rarest first, from ``ptr[u]`` to
    ``ptr[u + 1]``), with its weight and whether it is an anchor; per unit, its norm, its
    number of codes and of anchors."""

    ptr: np.ndarray  # int64, units + 1
    unit: np.ndarray  # int64
    codes: np.ndarray  # uint64
    weights: np.ndarray  # float64
    anchor: np.ndarray  # bool
    norms: np.ndarray  # float64
    sizes: np.ndarray  # int64
    anchors: np.ndarray  # int64

    @classmethod
    def of(cls, units: list[Unit]) -> Flat:
        sizes = np.fromiter((len(u.codes) for u in units), np.int64, len(units))
        codes = np.fromiter(chain.from_iterable(u.codes for u in units), np.uint64, sizes.sum())
        anchor = np.array([c in u.anchors for u in units for c in u.codes], dtype=bool)
        return cls(
            np.r_[0, np.cumsum(sizes)].astype(np.int64),
            np.repeat(np.arange(len(units), dtype=np.int64), sizes),
            codes,
            np.fromiter(chain.from_iterable(u.weights for u in units), np.float64, len(codes)),
            anchor.reshape(len(codes)),
            np.fromiter((u.norm for u in units), np.float64, len(units)),
            sizes,
            np.fromiter((len(u.anchors) for u in units), np.int64, len(units)),
        )

    def gather(self, units: np.ndarray) -> np.ndarray:
        """The entries of ``units``, unit by unit."""
        lengths = self.ptr[units + 1] - self.ptr[units]
        first = np.repeat(self.ptr[units] - np.cumsum(lengths) + lengths, lengths)
        return first + np.arange(lengths.sum())


@dataclass(frozen=True)
class Sentences:
    units: list[Unit]
    chars: int  # folded characters of the whole text
    prepared: Flat | None = field(default=None, repr=False, compare=False)

    def __len__(self) -> int:
        return len(self.units)

    @cached_property
    def flat(self) -> Flat:
        return self.prepared or Flat.of(self.units)


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
    (:func:`tracker.fingerprints.simhash.segment_lines`), else cut here. The words are
    canonicalised all at once (:meth:`Lexicon.entries`), and grouped into units by numpy."""
    from tracker.fingerprints.simhash import cut_lines

    lex = lex or lexicon()
    if words is None or sum(map(len, words)) != len(text.chars):
        words = cut_lines(text.lines())
    bounds = boundaries(text)
    if not bounds or not words:
        return Sentences([], len(text.chars))
    lengths = np.fromiter(map(len, words), np.int64, len(words))
    ends = np.array([end for _, end in bounds], dtype=np.int64)
    # a word belongs to the unit it starts in
    owner = np.searchsorted(ends, np.cumsum(lengths) - lengths, side="right").tolist()
    words, owner = join_numbers(words, owner)
    at, codes, weights, anchor = lex.entries(words)
    unit = np.asarray(owner, dtype=np.int64)[at]
    # each unit's distinct codes, rarest first (then by code): sorted, then deduplicated
    order = np.lexsort((codes, -weights, unit))
    su, sc, sw, sa = unit[order], codes[order], weights[order], anchor[order]
    first = np.ones(len(su), dtype=bool)
    first[1:] = (su[1:] != su[:-1]) | (sc[1:] != sc[:-1])
    starts = np.flatnonzero(first)
    any_anchor = np.logical_or.reduceat(sa, starts) if len(starts) else sa
    du, dc, dw = su[starts], sc[starts], sw[starts]
    present, counts = np.unique(du, return_counts=True)
    norms = np.sqrt(np.bincount(du, dw * dw, len(bounds)))
    ptr = np.r_[0, np.cumsum(counts)].tolist()
    # the content words in text order, unit by unit
    word_list = [words[k] for k in at.tolist()]
    word_ptr = np.searchsorted(unit, np.r_[present, present[-1] + 1] if len(present) else [0])
    word_ptr = word_ptr.tolist()
    all_codes, all_weights = dc.tolist(), dw.tolist()
    all_word_codes = codes.tolist()
    anchor_codes = dc[any_anchor].tolist()
    anchor_unit = du[any_anchor].tolist()
    anchors_of: dict[int, set[int]] = {}
    for u, c in zip(anchor_unit, anchor_codes, strict=True):
        anchors_of.setdefault(u, set()).add(c)
    units = []
    for k, u in enumerate(present.tolist()):
        a, b = ptr[k], ptr[k + 1]
        wa, wb = word_ptr[k], word_ptr[k + 1]
        start, end = bounds[u]
        units.append(
            Unit(
                start,
                end,
                tuple(word_list[wa:wb]),
                tuple(all_word_codes[wa:wb]),
                tuple(all_codes[a:b]),
                tuple(all_weights[a:b]),
                frozenset(anchors_of.get(u, ())),
                float(norms[u]),
            )
        )
    sizes = np.asarray(counts, dtype=np.int64)
    flat = Flat(
        np.asarray(ptr, dtype=np.int64),
        np.repeat(np.arange(len(units), dtype=np.int64), sizes),
        dc,
        dw,
        any_anchor,
        norms[present],
        sizes,
        np.bincount(np.searchsorted(present, du[any_anchor]), minlength=len(units)),
    )
    return Sentences(units, len(text.chars), flat)


def pack_cuts(words: list[str], chars: int) -> bytes:
    """Where ``words`` (a text's jieba words, in order) start, as a bitmap over its ``chars``
    folded characters (bit 7 of byte 0 is character 0); empty unless they cover them all (as
    :func:`sentences_of` wants them)."""
    lengths = np.fromiter(map(len, words), np.int64, len(words))
    if not chars or lengths.sum() != chars:
        return b""
    starts = np.zeros(int(lengths.sum()), dtype=bool)
    starts[np.cumsum(lengths) - lengths] = True
    return np.packbits(starts).tobytes()


def unpack_cuts(cuts: bytes | None, chars: str) -> list[str] | None:
    """The words of the folded characters ``chars`` cut where :func:`pack_cuts` says; None
    when ``cuts`` is missing or cannot be the bitmap of a cut of ``chars`` (another length,
    no word at 0, bits past the end): the caller cuts the text again."""
    n = len(chars)
    if not cuts or not n or len(cuts) != (n + 7) // 8:
        return None
    bits = np.unpackbits(np.frombuffer(cuts, dtype=np.uint8))
    if not bits[0] or bits[n:].any():
        return None
    starts = np.flatnonzero(bits[:n]).tolist()
    return [chars[a:b] for a, b in zip(starts, [*starts[1:], n], strict=True)]


_ROTATE = np.uint64(63)
_PAIRS = [(a, b) for a in range(QUERY_RAREST) for b in range(a + 1, QUERY_RAREST)]


def pair_keys(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """The order-free key of each two codes (uint64): the smaller xor the larger rotated,
    through the splitmix64 finaliser (:func:`tracker.fingerprints.anchors.mix`)."""
    lo, hi = np.minimum(a, b), np.maximum(a, b)
    with np.errstate(over="ignore"):
        return mix(lo ^ ((hi << np.uint64(1)) | (hi >> _ROTATE)))


def pair_key(a: int, b: int) -> int:
    """:func:`pair_keys` of one pair."""
    return int(pair_keys(np.array([a], np.uint64), np.array([b], np.uint64))[0])


def _kept(keys: np.ndarray) -> np.ndarray:
    return keys % np.uint64(KEY_SAMPLE) == 0


def master_keys(sentences: Sentences) -> np.ndarray:
    """The keys a master files: its units' rarest pairs, distinct (uint64); a long master
    (``SAMPLE_ABOVE_UNITS`` units or more) only the sampled ones."""
    flat = sentences.flat
    units = np.flatnonzero(flat.sizes >= MIN_KEY_CODES)
    keys = pair_keys(flat.codes[flat.ptr[units]], flat.codes[flat.ptr[units] + 1])
    if len(sentences.units) >= SAMPLE_ABOVE_UNITS:
        keys = keys[_kept(keys)]
    return np.unique(keys)


def query_keys(
    sentences: Sentences, among: np.ndarray | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """The keys a page looks up: pairs of its units' ``QUERY_RAREST`` rarest codes, with the
    (first) unit each comes from (uint64 keys, int64 units); only of the units ``among``
    these, if given (sorted)."""
    flat = sentences.flat
    units = np.flatnonzero(flat.sizes >= MIN_KEY_CODES - 1)
    if among is not None:
        units = np.intersect1d(units, among)
    sizes, base = flat.sizes[units], flat.ptr[units]
    keys, owners = [], []
    for a, b in _PAIRS:
        has = sizes > b
        keys.append(pair_keys(flat.codes[base[has] + a], flat.codes[base[has] + b]))
        owners.append(units[has])
    all_keys, all_owners = np.concatenate(keys), np.concatenate(owners)
    # the first unit of each key, in the order of the units
    order = np.argsort(all_owners, kind="stable")
    all_keys, all_owners = all_keys[order], all_owners[order]
    _, first = np.unique(all_keys, return_index=True)
    first.sort()
    return all_keys[first], all_owners[first]
