"""A master's sentence units as a sketch: for each unit (:mod:`tracker.fingerprints.sentences`,
in its order), its number of codes, its norm (of the codes' weights, rounded down to 1/256)
and 16 bits of each of its canonical codes. Stored beside the master at ingest, it
tells a check which of a page's codes each master unit may hold, before the master is loaded
(:mod:`tracker.matching.rewrite_bound`).

A code the unit holds always matches its 16 bits; a code it lacks matches one of a unit's ``k``
codes with probability about ``k / 65536``, which only loosens the bound, never makes it wrong.
A 1,500-character chapter (~50 units, ~450 codes): ~1.1 KB. The header says the sketch's
version and the lexicon's stamp (:attr:`tracker.fingerprints.lexicon.Lexicon.stamp`): a sketch
made otherwise, or of codes another lexicon gave, is refused (the master is then loaded and
aligned, as without one).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import numpy as np

from tracker.fingerprints.sentences import Flat

FORMAT = 1
_HEADER = 1 + 4 + 4  # format, lexicon stamp, units
_LOW16 = np.uint64(0xFFFF)
_NORM_STEP = 256  # a norm is kept as floor(norm · 256), at most 0xFFFF (then below the norm)


def bits16(codes: np.ndarray) -> np.ndarray:
    """The 16 bits of each code a sketch keeps (uint16)."""
    return (np.asarray(codes, dtype=np.uint64) & _LOW16).astype(np.uint16)


@dataclass(frozen=True)
class UnitSketch:
    """Unit ``u``'s codes' bits are ``bits[ptr[u]:ptr[u + 1]]`` (``sizes``: its codes);
    ``norms``: at most its norm."""

    ptr: np.ndarray  # int64, units + 1
    norms: np.ndarray  # float64
    bits: np.ndarray  # uint16

    @property
    def sizes(self) -> np.ndarray:
        return np.diff(self.ptr)

    @cached_property
    def _by_bits(self) -> np.ndarray:
        return np.argsort(self.bits, kind="stable")

    @cached_property
    def sorted_bits(self) -> np.ndarray:
        """The bits of every code, sorted (for a join with a page's)."""
        return self.bits[self._by_bits]

    @cached_property
    def sorted_units(self) -> np.ndarray:
        """The unit of each of :attr:`sorted_bits` (int64)."""
        return np.repeat(np.arange(len(self)), self.sizes)[self._by_bits]

    def __len__(self) -> int:
        return len(self.ptr) - 1


def pack_units(flat: Flat, stamp: int) -> bytes:
    """The sketch of a text's units (``flat``: :attr:`Sentences.flat`), its codes given by a
    lexicon of ``stamp``: empty for a text without units."""
    sizes = np.asarray(flat.sizes, dtype=np.int64)
    if not len(sizes) or sizes.max() > 0xFFFF:
        return b""  # no units; or one too long to say its size in two bytes: no sketch
    header = bytes([FORMAT]) + (stamp & 0xFFFFFFFF).to_bytes(4, "little")
    header += len(sizes).to_bytes(4, "little")
    norms = np.minimum(np.floor(np.asarray(flat.norms) * _NORM_STEP), 0xFFFF)
    return (
        header
        + sizes.astype("<u2").tobytes()
        + norms.astype("<u2").tobytes()
        + bits16(flat.codes).astype("<u2").tobytes()
    )


def unpack_units(packed: bytes | None, stamp: int) -> UnitSketch | None:
    """The sketch ``packed``; None when it is none this code can read, or was made by another
    lexicon (the caller cannot bound)."""
    if not packed or len(packed) <= _HEADER or packed[0] != FORMAT or (len(packed) - _HEADER) % 2:
        return None
    if int.from_bytes(packed[1:5], "little") != stamp & 0xFFFFFFFF:
        return None
    units = int.from_bytes(packed[5:9], "little")
    body = np.frombuffer(packed, dtype="<u2", offset=_HEADER)
    if len(body) < 2 * units:
        return None
    sizes = body[:units].astype(np.int64)
    norms = body[units : 2 * units].astype(np.float64) / _NORM_STEP
    bits = body[2 * units :].astype(np.uint16)
    if int(sizes.sum()) != len(bits):
        return None
    return UnitSketch(np.concatenate(([0], np.cumsum(sizes))).astype(np.int64), norms, bits)
