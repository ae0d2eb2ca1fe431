"""Fingerprints of normalised text: SimHash-64, pinyin-DNA windows and shingle anchors."""

from tracker.fingerprints.anchors import gram_hashes, mod_sample, winnow
from tracker.fingerprints.pinyin_dna import dna_windows
from tracker.fingerprints.simhash import hamming, simhash_tokens

__all__ = ["dna_windows", "gram_hashes", "hamming", "mod_sample", "simhash_tokens", "winnow"]
