"""How the index files its postings: the layout, fixed when it is built, and each table's
depth, grown by splits since.

A lookup reads whole buckets, so with a fixed number of buckets every check reads a share of the
index that grows with the library. Scaling the buckets with the library keeps the records a
lookup reads per bucket constant: ``bucket_bits`` = 16 + round(log2(N / 300,000)) for N
chapters (16 up to ~420,000 chapters, 21 at 10M, 24 at 100M; the SimHash tables get as many more
bits over their 12). That is part of a check's growth only: at 300,000 chapters, 2^18 buckets
cut a check from 4.67 to 4.12 ms of CPU, and about 2.2 ms per million chapters grows whatever
the buckets (``deploy/CAPACITY.md``, A4). Master numbers are 24-bit (16.7M, the 5-byte
records) unless ``wide_ids`` (32-bit, 6-byte records, the page index's).

The layout is stored with the index (one counter, beside its version) when it is first built,
and an index is always read with its own: the settings' ``index_bucket_bits`` and
``index_wide_ids`` choose the layout of an index built from scratch (the first ingest, or
``tracker index rebuild``). An index built before layouts were stored has the original one:
16 bits, 24-bit numbers.

**Tables.** Each postings table has a *base*, the bits its check starts after (the layout's
``bucket_bits``; 3 fewer for the DNA windows, which are filed ~8 times less often than the
anchors), and a *depth*, its bucket bits, which starts at the base and grows as the table is
split (:mod:`tracker.index.growth`). Both are stored with the index, beside the layout; an
index built before they were stored (format 1) has every table at the layout's bits.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

from tracker.config import BUCKET_BITS_RANGE
from tracker.index.postings import MAX_DOC, RECORD, WIDE_RECORD

if TYPE_CHECKING:
    from tracker.config import Settings

MIN_BUCKET_BITS, MAX_BUCKET_BITS = BUCKET_BITS_RANGE  # the index_bucket_bits setting's range
SIMHASH_BUCKET_BITS = 12  # per permuted table, at 16 postings bits
DNA_BITS_BELOW = 3  # the DNA table's base, below the anchors' (see Tables)
# dense and sparse anchors, DNA windows, SimHash, sentence keys (rewritten copies)
TABLES = ("and", "ans", "dna", "sh", "rw")
REFERENCE_CHAPTERS = 300_000  # the library 2^16 buckets were measured at


@dataclass(frozen=True)
class IndexLayout:
    bucket_bits: int = MIN_BUCKET_BITS
    wide_ids: bool = False

    def __post_init__(self) -> None:
        if not MIN_BUCKET_BITS <= self.bucket_bits <= MAX_BUCKET_BITS:
            raise ValueError(
                f"index bucket bits must be {MIN_BUCKET_BITS}-{MAX_BUCKET_BITS}, "
                f"not {self.bucket_bits}"
            )

    @property
    def simhash_bucket_bits(self) -> int:
        return SIMHASH_BUCKET_BITS + self.bucket_bits - MIN_BUCKET_BITS

    @property
    def record(self) -> np.dtype:
        """The postings' record: 5 bytes with a 24-bit master number, 6 with a 32-bit one."""
        return WIDE_RECORD if self.wide_ids else RECORD

    @classmethod
    def configured(cls, settings: Settings) -> IndexLayout:
        """The layout the settings ask for an index built from scratch."""
        return cls(settings.index_bucket_bits, settings.index_wide_ids)

    @classmethod
    def for_library(cls, chapters: int) -> IndexLayout:
        """The layout a library of ``chapters`` masters calls for (the rule above)."""
        extra = round(math.log2(max(chapters, 1) / REFERENCE_CHAPTERS))
        bits = min(max(MIN_BUCKET_BITS + extra, MIN_BUCKET_BITS), MAX_BUCKET_BITS)
        return cls(bits, wide_ids=chapters > MAX_DOC * 0.9)

    def encode(self) -> int:
        """The layout as the counter stored with the index."""
        return self.bucket_bits | (int(self.wide_ids) << 8)

    @classmethod
    def decode(cls, value: int) -> IndexLayout:
        return cls(value & 0xFF, wide_ids=bool(value >> 8 & 1))

    def __str__(self) -> str:
        ids = "32-bit" if self.wide_ids else "24-bit"
        return f"2^{self.bucket_bits} buckets a table, {ids} master numbers"


#: The layout of an index built before layouts were stored, and the default one.
ORIGINAL = IndexLayout()


@dataclass(frozen=True)
class Tables:
    """Each table's ``(base, depth)`` (see the module's docstring), by name."""

    bits: dict[str, tuple[int, int]] = field(default_factory=dict)

    @classmethod
    def initial(cls, layout: IndexLayout, legacy: bool = False) -> Tables:
        """The tables of an index built with ``layout``; ``legacy``: of one built before
        tables were stored, where every postings table has the layout's bits."""
        b, s = layout.bucket_bits, layout.simhash_bucket_bits
        dna = b if legacy else b - DNA_BITS_BELOW
        return cls({"and": (b, b), "ans": (b, b), "dna": (dna, dna), "sh": (s, s), "rw": (b, b)})

    def base(self, name: str) -> int:
        return self.bits[name][0]

    def depth(self, name: str) -> int:
        return self.bits[name][1]

    def grown(self, name: str, depth: int) -> Tables:
        return Tables({**self.bits, name: (self.bits[name][0], depth)})

    def encode(self) -> bytes:
        return json.dumps({k: list(v) for k, v in sorted(self.bits.items())}).encode()

    @classmethod
    def decode(cls, raw: bytes) -> Tables:
        """The stored tables; a table added since they were stored (the sentence keys) at
        the anchors' base, unsplit: an index built before it holds none of its postings."""
        bits = {k: (int(v[0]), int(v[1])) for k, v in json.loads(raw).items()}
        if "rw" not in bits and "and" in bits:
            bits["rw"] = (bits["and"][0], bits["and"][0])
        return cls(bits)

    def __str__(self) -> str:
        return ", ".join(f"{name} 2^{self.depth(name)}" for name in TABLES if name in self.bits)
