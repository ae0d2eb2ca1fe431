"""A master's sentence units as a sketch: for each unit (:mod:`tracker.fingerprints.sentences`,
in its order), its number of codes, its norm (of the codes' weights, rounded down to 1/256)
and 12 bits of each of its canonical codes. Stored beside the master at ingest, it tells a
check which of a page's codes each master unit may hold, before the master is loaded
(:mod:`tracker.matching.rewrite_bound`).

A code the unit holds always matches its 12 bits; a code it lacks matches one of a unit's ``k``
codes with probability about ``k / 4096``, which only loosens the bound, never makes it wrong
(with 12 bits the bound rules out as many chance candidates as with 16, nearly; with 8, far
fewer). A 1,500-character chapter (~50 units, ~500 codes): ~0.9 KB. The header says the
sketch's format and the lexicon's stamp (:attr:`tracker.fingerprints.lexicon.Lexicon.stamp`):
a sketch made otherwise, or of codes another lexicon gave, is refused (the master is then
loaded and aligned, as without one).

Layout: format (1 byte), stamp (4), units ``n`` (4); each unit's number of codes (1 byte: a
text with a unit of more than 255 codes gets no sketch); each unit's norm (2 bytes,
``floor(norm · 256)``, at most 0xFFFF: then below the norm); the codes' bits, two in three
bytes.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import numpy as np

from tracker.fingerprints.sentences import Flat

FORMAT = 2  # 1: 16 bits a code, two bytes a size (never released)
BITS = 12
_HEADER = 1 + 4 + 4  # format, lexicon stamp, units
_MASK = np.uint64((1 << BITS) - 1)
_NORM_STEP = 256


def code_bits(codes: np.ndarray) -> np.ndarray:
    """The ``BITS`` bits of each code a sketch keeps (uint16)."""
    return (np.asarray(codes, dtype=np.uint64) & _MASK).astype(np.uint16)


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


def _pack12(values: np.ndarray) -> bytes:
    """12-bit values, two in three bytes (a last odd one padded with 0)."""
    v = np.asarray(values, dtype=np.uint16)
    if len(v) % 2:
        v = np.append(v, np.uint16(0))
    a, b = v[0::2], v[1::2]
    out = np.empty((len(a), 3), dtype=np.uint8)
    out[:, 0] = a & 0xFF
    out[:, 1] = (a >> 8) | ((b & 0xF) << 4)
    out[:, 2] = b >> 4
    return out.tobytes()


def _unpack12(data: bytes, count: int) -> np.ndarray:
    """The first ``count`` values :func:`_pack12` packed into ``data``."""
    raw = np.frombuffer(data, dtype=np.uint8).reshape(-1, 3).astype(np.uint16)
    values = np.empty(2 * len(raw), dtype=np.uint16)
    values[0::2] = raw[:, 0] | ((raw[:, 1] & 0xF) << 8)
    values[1::2] = (raw[:, 1] >> 4) | (raw[:, 2] << 4)
    return values[:count]


def pack_units(flat: Flat, stamp: int) -> bytes:
    """The sketch of a text's units (``flat``: :attr:`Sentences.flat`), its codes given by a
    lexicon of ``stamp``: empty for a text without units, or with a unit of more than 255
    codes."""
    sizes = np.asarray(flat.sizes, dtype=np.int64)
    if not len(sizes) or sizes.max() > 0xFF:
        return b""
    header = bytes([FORMAT]) + (stamp & 0xFFFFFFFF).to_bytes(4, "little")
    header += len(sizes).to_bytes(4, "little")
    norms = np.minimum(np.floor(np.asarray(flat.norms) * _NORM_STEP), 0xFFFF)
    return (
        header
        + sizes.astype(np.uint8).tobytes()
        + norms.astype("<u2").tobytes()
        + _pack12(code_bits(flat.codes))
    )


def unpack_units(packed: bytes | None, stamp: int) -> UnitSketch | None:
    """The sketch ``packed``; None when it is none this code can read, or was made by another
    lexicon (the caller cannot bound)."""
    if not packed or len(packed) <= _HEADER or packed[0] != FORMAT:
        return None
    if int.from_bytes(packed[1:5], "little") != stamp & 0xFFFFFFFF:
        return None
    units = int.from_bytes(packed[5:9], "little")
    at = _HEADER + 3 * units  # past the sizes and the norms
    if len(packed) < at:
        return None
    sizes = np.frombuffer(packed, dtype=np.uint8, count=units, offset=_HEADER).astype(np.int64)
    norms = np.frombuffer(packed, dtype="<u2", count=units, offset=_HEADER + units)
    count = int(sizes.sum())
    if len(packed) - at != 3 * ((count + 1) // 2):
        return None
    return UnitSketch(
        np.concatenate(([0], np.cumsum(sizes))).astype(np.int64),
        norms.astype(np.float64) / _NORM_STEP,
        _unpack12(packed[at:], count),
    )
