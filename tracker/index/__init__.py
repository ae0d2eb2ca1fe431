"""Indexes of master fingerprints, over a pluggable storage (in memory or Redis)."""

from tracker.index.anchor_index import AnchorIndex
from tracker.index.dna_index import DnaIndex
from tracker.index.simhash_index import SimHashIndex
from tracker.index.storage import MemoryStorage, RedisStorage, Storage

__all__ = ["AnchorIndex", "DnaIndex", "MemoryStorage", "RedisStorage", "SimHashIndex", "Storage"]
