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

from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import cached_property

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

    def gather(self, units: np.ndarray) -> np.ndarray:
        """The entries of ``units``, unit by unit."""
        return ranges(self.ptr[units], self.ptr[units + 1] - self.ptr[units])


def ranges(starts: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """``starts[i], starts[i] + 1, …, starts[i] + counts[i] - 1``, range after range, in one
    array (without a Python loop over the ranges)."""
    total = int(counts.sum())
    return np.repeat(starts - np.cumsum(counts) + counts, counts) + np.arange(total)


_NONE = np.zeros(0, dtype=np.int64)


@dataclass(frozen=True, eq=False)
class Sentences:
    """A text's units as arrays: ``flat`` (all that the keys and the alignment read) and each
    unit's ``[starts, ends)`` in the folded characters; its :class:`Unit` objects (with their
    words, for the evidence of a reported match) are built on first use of :attr:`units`.
    ``words`` are the text's words (numbers joined), ``content`` the positions of its content
    words in text order (unit by unit, from ``content_ptr[u]`` to ``content_ptr[u + 1]``) and
    ``content_codes`` their codes."""

    chars: int  # folded characters of the whole text
    flat: Flat = field(repr=False)
    starts: np.ndarray  # int64, a unit
    ends: np.ndarray  # int64, a unit
    words: list[str] = field(repr=False)
    content: np.ndarray = field(repr=False)  # int64
    content_codes: np.ndarray = field(repr=False)  # uint64
    content_ptr: np.ndarray = field(repr=False)  # int64, units + 1

    @classmethod
    def empty(cls, chars: int) -> Sentences:
        """The units of a text with none (or that will not be looked at)."""
        zero, codes, f = np.zeros(1, np.int64), np.zeros(0, np.uint64), np.zeros(0, np.float64)
        flat = Flat(zero, _NONE, codes, f, _NONE > 0, f, _NONE, _NONE)
        return cls(chars, flat, _NONE, _NONE, [], _NONE, codes, zero)

    def __len__(self) -> int:
        return len(self.starts)

    @cached_property
    def lengths(self) -> np.ndarray:
        """Each unit's folded characters (int64)."""
        return self.ends - self.starts

    @cached_property
    def units(self) -> list[Unit]:
        f = self.flat
        codes, weights, anchor = f.codes.tolist(), f.weights.tolist(), f.anchor.tolist()
        ptr, norms = f.ptr.tolist(), f.norms.tolist()
        words = [self.words[k] for k in self.content.tolist()]
        word_codes, word_ptr = self.content_codes.tolist(), self.content_ptr.tolist()
        units = []
        spans = zip(self.starts.tolist(), self.ends.tolist(), strict=True)
        for k, (start, end) in enumerate(spans):
            a, b, wa, wb = ptr[k], ptr[k + 1], word_ptr[k], word_ptr[k + 1]
            units.append(
                Unit(
                    start,
                    end,
                    tuple(words[wa:wb]),
                    tuple(word_codes[wa:wb]),
                    tuple(codes[a:b]),
                    tuple(weights[a:b]),
                    frozenset(c for c, x in zip(codes[a:b], anchor[a:b], strict=True) if x),
                    norms[k],
                )
            )
        return units


#: a code point (of the BMP) → 1: it ends a sentence, 2: a clause
_BREAKS = np.zeros(0x10000, dtype=np.int8)
_BREAKS[[ord(c) for c in SENTENCE_ENDS]] = 1
_BREAKS[[ord(c) for c in CLAUSE_MARKS]] = 2


def boundaries(text: NormalizedText) -> tuple[np.ndarray, np.ndarray]:
    """``[start, end)`` in ``text.chars`` of each unit (sentences, long ones cut at clauses),
    as two int64 arrays."""
    n = len(text.chars)
    if n == 0:
        return _NONE, _NONE
    kind = _BREAKS[np.minimum(codepoints(text.source), 0xFFFF)]
    found = np.flatnonzero(kind)
    at = np.searchsorted(text.char_pos, found)
    is_end = kind[found] == 1
    cuts = np.unique(np.append(at[is_end], n))
    cuts = cuts[cuts > 0]  # sentence ends, the last at n
    starts = np.concatenate(([0], cuts[:-1]))
    # a long sentence is cut at each clause mark that leaves MIN_CLAUSE_CHARS on both sides
    long = cuts - starts > LONG_UNIT_CHARS
    extra = []
    if long.any():
        clauses = np.unique(at[~is_end])
        first, last = starts[long], cuts[long]
        lo, hi = np.searchsorted(clauses, first, "right"), np.searchsorted(clauses, last)
        for start, end, a, b in zip(*(x.tolist() for x in (first, last, lo, hi)), strict=True):
            for c in clauses[a:b].tolist():
                if c - start >= MIN_CLAUSE_CHARS and end - c >= MIN_CLAUSE_CHARS:
                    extra.append(c)
                    start = c
    if extra:
        cuts = np.sort(np.append(cuts, extra))
        starts = np.concatenate(([0], cuts[:-1]))
    return starts.astype(np.int64), cuts.astype(np.int64)


def sentences_of(
    text: NormalizedText, words: list[str] | None = None, lex: Lexicon | None = None
) -> Sentences:
    """The units of ``text``; ``words``: its jieba words cut line by line, if already cut
    (:func:`tracker.fingerprints.simhash.segment_lines`), else cut here (:func:`sentences_many`
    of one text)."""
    return sentences_many([text], [words], lex)[0]


def _unit_words(
    text: NormalizedText, words: list[str] | None
) -> tuple[list[str], np.ndarray, np.ndarray, np.ndarray] | None:
    """A text's words (cut here unless ``words`` fit it), numbers joined, with the unit each
    belongs to, and its units' ``[start, end)``; None for a text without units."""
    from tracker.fingerprints.simhash import cut_lines

    n = len(text.chars)
    lengths = np.fromiter(map(len, words), np.int64, len(words)) if words is not None else None
    if lengths is None or lengths.sum() != n:
        words = cut_lines(text.lines())
        lengths = np.fromiter(map(len, words), np.int64, len(words))
    starts, ends = boundaries(text)
    if not len(ends) or not words:
        return None
    offsets = np.cumsum(lengths) - lengths
    # a word belongs to the unit it starts in
    owner = np.searchsorted(ends, offsets, side="right")
    words = with_decimal_points(words, offsets, decimal_points(text))
    words, owner = join_numbers(words, owner, codepoints(text.chars)[offsets])
    return words, owner, starts, ends


def sentences_many(
    texts: Sequence[NormalizedText],
    words: Sequence[list[str] | None],
    lex: Lexicon | None = None,
) -> list[Sentences]:
    """The units of each of ``texts`` (``words``: as :func:`sentences_of`'s). The words of
    all the texts are canonicalised at once (:meth:`Lexicon.entries`) and grouped into units
    by one set of array operations (a unit numbered after the previous texts' units): a
    check's batch of pages, or of candidates, pays the arrays' overhead once, not once a
    text. Each text's units are those :func:`sentences_of` gives it alone. The
    :class:`Unit` objects are built only when asked for (:attr:`Sentences.units`)."""
    lex = lex or lexicon()
    found: list[Sentences | None] = [None] * len(texts)
    parts = []  # (text number, its words, their units, unit starts, unit ends)
    for k, (text, w) in enumerate(zip(texts, words, strict=True)):
        cut = _unit_words(text, w)
        if cut is None:
            found[k] = Sentences.empty(len(text.chars))
        else:
            parts.append((k, *cut))
    if parts:
        all_words: list[str] = []
        owners, word_at, unit_at = [], [0], [0]
        for _, w, owner, _, ends in parts:
            all_words.extend(w)
            owners.append(owner + unit_at[-1])
            word_at.append(word_at[-1] + len(w))
            unit_at.append(unit_at[-1] + len(ends))
        owner = np.concatenate(owners)
        at, codes, weights, anchor = lex.entries(all_words)
        unit = owner[at]
        # each unit's distinct codes, rarest first (then by code): sorted, then deduplicated
        order = np.lexsort((codes, -weights, unit))
        su, sc, sw, sa = unit[order], codes[order], weights[order], anchor[order]
        first = np.ones(len(su), dtype=bool)
        first[1:] = (su[1:] != su[:-1]) | (sc[1:] != sc[:-1])
        starts_at = np.flatnonzero(first)
        any_anchor = np.logical_or.reduceat(sa, starts_at) if len(starts_at) else sa
        du, dc, dw = su[starts_at], sc[starts_at], sw[starts_at]
        present, sizes = np.unique(du, return_counts=True)
        norms = np.sqrt(np.bincount(du, dw * dw, unit_at[-1]))
        # where each text's units, entries and content words begin in those arrays
        text_present = np.searchsorted(present, unit_at)
        text_entries = np.searchsorted(du, unit_at)
        text_content = np.searchsorted(at, word_at)
        for j, (k, w, _, starts, ends) in enumerate(parts):
            p0, p1 = int(text_present[j]), int(text_present[j + 1])
            e0, e1 = int(text_entries[j]), int(text_entries[j + 1])
            c0, c1 = int(text_content[j]), int(text_content[j + 1])
            mine = present[p0:p1] - unit_at[j]
            my_sizes = sizes[p0:p1]
            my_du = du[e0:e1] - unit_at[j]
            my_anchor = any_anchor[e0:e1]
            my_unit = unit[c0:c1] - unit_at[j]
            flat = Flat(
                np.concatenate(([0], np.cumsum(my_sizes))).astype(np.int64),
                np.repeat(np.arange(len(mine), dtype=np.int64), my_sizes),
                dc[e0:e1],
                dw[e0:e1],
                my_anchor,
                norms[present[p0:p1]],
                my_sizes.astype(np.int64),
                np.bincount(np.searchsorted(mine, my_du[my_anchor]), minlength=len(mine)),
            )
            # the content words in text order, unit by unit
            content_ptr = np.searchsorted(
                my_unit, np.append(mine, mine[-1] + 1 if len(mine) else 0)
            )
            found[k] = Sentences(
                len(texts[k].chars),
                flat,
                starts[mine],
                ends[mine],
                w,
                at[c0:c1] - word_at[j],
                codes[c0:c1],
                content_ptr.astype(np.int64),
            )
    return found  # type: ignore[return-value]


_POINTS = (".", "\uff0e")  # a decimal point, half- and full-width


def decimal_points(text: NormalizedText) -> np.ndarray:
    """The folded characters (int64) that a decimal point stood before in the source: a digit
    right after ``1.`` of ``1.9万``. Folding drops the point with the other punctuation, and
    ``19万`` is another number (the verbatim fingerprints read the characters, and lose
    nothing by it; the sentence codes read values)."""
    source = text.source
    if not any(point in source for point in _POINTS):
        return _NONE
    cps = codepoints(source)
    at = np.flatnonzero((cps == ord(_POINTS[0])) | (cps == ord(_POINTS[1])))
    after = np.searchsorted(text.char_pos, at)  # the folded character after each point
    ok = (after > 0) & (after < len(text.chars))
    at, after = at[ok], after[ok]
    # the point sits between two folded characters that were right beside it, both digits
    ok = (text.char_pos[after] == at + 1) & (text.char_pos[after - 1] == at - 1)
    digits = codepoints(text.chars)
    is_digit = (digits >= ord("0")) & (digits <= ord("9"))
    ok &= is_digit[after] & is_digit[after - 1]
    return after[ok].astype(np.int64)


def with_decimal_points(words: list[str], offsets: np.ndarray, points: np.ndarray) -> list[str]:
    """``words`` (starting at folded characters ``offsets``) with the decimal ``points``
    (:func:`decimal_points`) put back: inside a word (``1.9``), or in front of the word that
    starts after it (``1`` ``.9万``: :func:`tracker.fingerprints.lexicon.join_numbers` joins
    them)."""
    if not len(points):
        return words
    words = list(words)
    owners = np.searchsorted(offsets, points, side="right") - 1
    # from the last point back, so that a word's earlier offsets stay right
    for point, k in sorted(zip(points.tolist(), owners.tolist(), strict=True), reverse=True):
        cut = point - int(offsets[k])
        words[k] = words[k][:cut] + "." + words[k][cut:]
    return words


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
    if len(sentences) >= SAMPLE_ABOVE_UNITS:
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
