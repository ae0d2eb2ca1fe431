"""The index of the whole master library: SimHash tables, DNA windows and shingle anchors."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from tracker.fingerprints.document import DocumentFingerprint
from tracker.index.anchor_index import AnchorIndex
from tracker.index.dna_index import DnaIndex
from tracker.index.simhash_index import SimHashIndex
from tracker.index.storage import Storage


@dataclass
class Candidates:
    near_duplicates: dict[int, int]  # n -> Hamming distance
    anchor_votes: Counter[int]
    dna_votes: Counter[int]

    def ranked(self, min_anchor_votes: int = 2, limit: int = 30) -> list[int]:
        score: Counter[int] = Counter()
        for n in self.near_duplicates:
            score[n] += 1000
        for n, votes in self.anchor_votes.items():
            if votes >= min_anchor_votes:
                score[n] += votes
        for n, votes in self.dna_votes.items():
            score[n] += votes
        return [n for n, _ in score.most_common(limit)]

    def methods(self, n: int) -> str:
        found = []
        if n in self.near_duplicates:
            found.append("simhash")
        if self.anchor_votes.get(n):
            found.append("shingle")
        if self.dna_votes.get(n):
            found.append("dna")
        return "+".join(found) or "shingle"


class MasterIndex:
    def __init__(self, storage: Storage, simhash_k: int = 3, simhash_blocks: int = 4) -> None:
        self.storage = storage
        self.simhash = SimHashIndex(storage, k=simhash_k, blocks=simhash_blocks)
        self.dna = DnaIndex(storage)
        self.anchors = AnchorIndex(storage)

    def add(self, items: Iterable[tuple[int, DocumentFingerprint]]) -> None:
        items = list(items)
        self.simhash.add((n, fp.simhash) for n, fp in items if fp.simhash)
        for n, fp in items:
            self.dna.add(n, fp.dna)
            self.anchors.add(n, fp.anchors)

    def remove(self, n: int, fp: DocumentFingerprint) -> None:
        if fp.simhash:
            self.simhash.remove([(n, fp.simhash)])
        self.dna.remove(n, fp.dna.tolist())
        self.anchors.remove(n, fp.anchors.tolist())

    def candidates(
        self, fp: DocumentFingerprint, simhashes_of: Callable[[set[int]], dict[int, int]]
    ) -> Candidates:
        near = self.simhash.query(fp.simhash, simhashes_of) if fp.simhash else {}
        return Candidates(near, self.anchors.query(fp.anchors), self.dna.query(fp.dna))

    def clear(self) -> None:
        self.storage.clear()
