"""All fingerprints of one text, computed in one pass over its normalised form."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from tracker.fingerprints.anchors import anchor_hashes
from tracker.fingerprints.pinyin_dna import dna_windows
from tracker.fingerprints.simhash import simhash_tokens, tokenize
from tracker.text.normalize import NormalizedText, normalize


@dataclass(frozen=True)
class DocumentFingerprint:
    simhash: int  # unsigned 64-bit
    dna: np.ndarray  # uint64 window values, in text order
    anchors: np.ndarray  # uint64 anchor shingle hashes, in text order
    length: int  # tokens after normalisation

    def to_mongo(self) -> dict:
        # MongoDB integers are signed 64-bit: store the two's-complement value.
        return {
            "simhash": to_signed(self.simhash),
            "dna": [int(v) for v in self.dna],
            "anchors": [to_signed(int(v)) for v in self.anchors],
            "length": self.length,
        }

    @classmethod
    def from_mongo(cls, doc: dict) -> DocumentFingerprint:
        return cls(
            simhash=to_unsigned(doc["simhash"]),
            dna=np.array(doc.get("dna", []), dtype=np.uint64),
            anchors=np.array([to_unsigned(v) for v in doc.get("anchors", [])], dtype=np.uint64),
            length=int(doc.get("length", 0)),
        )


def fingerprint(text: NormalizedText | str) -> tuple[NormalizedText, DocumentFingerprint]:
    normalized = text if isinstance(text, NormalizedText) else normalize(text)
    simhash = simhash_tokens(tokenize(normalized.chars)) if normalized.chars else 0
    _, anchors = anchor_hashes(normalized.tokens)
    return normalized, DocumentFingerprint(
        simhash=simhash, dna=dna_windows(normalized.tokens), anchors=anchors, length=len(normalized)
    )


def to_signed(value: int) -> int:
    return value - (1 << 64) if value >= 1 << 63 else value


def to_unsigned(value: int) -> int:
    return value + (1 << 64) if value < 0 else value
