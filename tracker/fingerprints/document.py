"""All fingerprints of one master text, computed in one pass over its normalised form."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
from bson import Binary

from tracker.fingerprints.lexicon import lexicon
from tracker.fingerprints.sentences import master_keys, pack_cuts, sentences_many
from tracker.fingerprints.simhash import segment_lines, simhash_normalized, simhash_segmented
from tracker.fingerprints.unit_sketch import pack_units
from tracker.index.anchor_index import AnchorIndex
from tracker.index.dna_index import master_windows_many
from tracker.text.normalize import NormalizedText, normalize

# Raised whenever a change makes stored fingerprints incomparable with new ones (2: SimHash
# word hashes computed in bulk; 3: words segmented without jieba's HMM, anchors winnowed with
# a window of 95; 4: every anchor winnowed, windows of 31 and 48, so that any passage of 100
# tokens shares two; 5: SimHash words cut line by line; 6: the dense sample for masters under
# 1,024 tokens, not 2,000: a chapter is filed sparse; 7: sentence keys for rewritten copies; 8:
# sentence codes keep a number's decimal point, 1.9万 is not 19万);
# ``tracker index rebuild`` recomputes older ones from the text.
VERSION = 8


@dataclass(frozen=True)
class DocumentFingerprint:
    simhash: int  # unsigned 64-bit
    dna: np.ndarray  # uint64 pinyin-DNA window values, in text order
    anchors: np.ndarray  # uint64 anchor shingle hashes kept in the index
    length: int  # tokens after normalisation
    # uint64 sentence keys (:mod:`tracker.fingerprints.sentences`), for rewritten copies
    sentences: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.uint64))
    # the jieba words' starts (:func:`tracker.fingerprints.sentences.pack_cuts`): a check
    # rebuilds the master's sentences without cutting it again; not in the index
    cuts: bytes = b""
    # its sentence units' sizes, norms and 12 bits of each code
    # (:mod:`tracker.fingerprints.unit_sketch`): a check bounds what aligning it could find
    # before loading it; not in the index
    unit_sketch: bytes = b""

    def to_mongo(self) -> dict:
        # MongoDB integers are signed 64-bit: store the two's-complement value.
        return {
            "simhash": to_signed(self.simhash),
            "dna": [int(v) for v in self.dna],
            "anchors": Binary(self.anchors.astype("<u8").tobytes()),
            "length": self.length,
            "sentences": Binary(self.sentences.astype("<u8").tobytes()),
            **({"cuts": Binary(self.cuts)} if self.cuts else {}),
            **({"unit_sketch": Binary(self.unit_sketch)} if self.unit_sketch else {}),
            "version": VERSION,
        }

    @classmethod
    def from_mongo(cls, doc: dict) -> DocumentFingerprint:
        return cls(
            simhash=to_unsigned(doc["simhash"]),
            dna=np.array(doc.get("dna", []), dtype=np.uint64),
            anchors=np.frombuffer(doc.get("anchors", b""), dtype="<u8").astype(np.uint64),
            length=int(doc.get("length", 0)),
            sentences=np.frombuffer(doc.get("sentences", b""), dtype="<u8").astype(np.uint64),
            cuts=bytes(doc.get("cuts") or b""),
            unit_sketch=bytes(doc.get("unit_sketch") or b""),
        )


def fingerprint(text: NormalizedText | str) -> tuple[NormalizedText, DocumentFingerprint]:
    """Normalise ``text`` (when needed) and compute SimHash, DNA windows and anchors."""
    return fingerprint_many([text])[0]


def fingerprint_many(
    texts: Sequence[NormalizedText | str],
) -> list[tuple[NormalizedText, DocumentFingerprint]]:
    """:func:`fingerprint` of several texts. Normalisation and word segmentation go text by
    text; hashing, weighing and counting run once over the whole batch, which saves numpy's
    per-call cost (~0.15 ms a text, as much as fingerprinting a 500-character article)."""
    normalized = [t if isinstance(t, NormalizedText) else normalize(t) for t in texts]
    tokens = [n.tokens for n in normalized]
    words = segment_lines(normalized)  # for the SimHash and the sentences
    simhashes = simhash_segmented([n.chars for n in normalized], words).tolist()
    windows = master_windows_many(tokens)
    anchors = AnchorIndex.master_anchors_many(tokens)
    units = sentences_many(normalized, words)
    stamp = lexicon().stamp
    return [
        (
            n,
            DocumentFingerprint(
                simhash=h,
                dna=d,
                anchors=a,
                length=len(n),
                sentences=master_keys(u),
                cuts=pack_cuts(w, len(n.chars)),
                unit_sketch=pack_units(u.flat, stamp),
            ),
        )
        for n, h, d, a, u, w in zip(
            normalized, simhashes, windows, anchors, units, words, strict=True
        )
    ]


def text_simhash(normalized: NormalizedText) -> int:
    """SimHash-64 of a normalised text's jieba words (0 for an empty text): all a crawled page
    needs to be looked up and grouped; DNA windows and anchors are for masters."""
    return int(simhash_normalized([normalized])[0])


def to_signed(value: int) -> int:
    return value - (1 << 64) if value >= 1 << 63 else value


def to_unsigned(value: int) -> int:
    return value + (1 << 64) if value < 0 else value
