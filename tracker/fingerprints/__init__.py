"""Fingerprints of normalised text: SimHash-64, pinyin-DNA windows and shingle anchors."""

from tracker.fingerprints.anchors import anchor_hashes, gram_hashes
from tracker.fingerprints.pinyin_dna import dna_windows
from tracker.fingerprints.simhash import hamming, simhash_tokens

__all__ = ["anchor_hashes", "dna_windows", "gram_hashes", "hamming", "simhash_tokens"]
