"""The master library: ingest documents (MongoDB first, then the Redis index), delete them,
and rebuild the index from MongoDB, which is the source of truth."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from tracker.config import Settings
from tracker.fingerprints.document import fingerprint
from tracker.index.master_index import MasterIndex
from tracker.index.storage import RedisStorage, Storage
from tracker.matching.detector import Detector
from tracker.runtime import Runtime
from tracker.stores.masters import MasterDocument, MasterStore


@dataclass
class IngestSummary:
    added: int = 0
    replaced: int = 0
    skipped_empty: list[str] = field(default_factory=list)
    characters: int = 0
    works: set[str] = field(default_factory=set)


class MasterLibrary:
    BATCH = 200

    def __init__(self, store: MasterStore, index: MasterIndex) -> None:
        self.store = store
        self.index = index

    @classmethod
    def from_runtime(cls, runtime: Runtime) -> MasterLibrary:
        store = MasterStore(runtime.db)
        store.ensure_indexes()
        storage: Storage = RedisStorage(runtime.redis, runtime.settings.redis_prefix + "ix:")
        return cls(store, MasterIndex(storage))

    def detector(self, settings: Settings | None = None) -> Detector:
        return Detector(self.store, self.index, settings)

    def ingest(
        self, documents: Iterable[MasterDocument], progress: Callable[[int], None] | None = None
    ) -> IngestSummary:
        summary = IngestSummary()
        batch: list[MasterDocument] = []
        for doc in documents:
            batch.append(doc)
            if len(batch) >= self.BATCH:
                self._ingest_batch(batch, summary)
                if progress:
                    progress(len(batch))
                batch = []
        if batch:
            self._ingest_batch(batch, summary)
            if progress:
                progress(len(batch))
        return summary

    def _ingest_batch(self, batch: list[MasterDocument], summary: IngestSummary) -> None:
        unique = {doc.doc_id: doc for doc in batch}  # the last version of an id in a batch wins
        existing = self.store.existing(unique)
        new_ns = iter(self.store.allocate_ns(sum(1 for d in unique if d not in existing)))
        rows = []
        for doc_id, doc in unique.items():
            _, fp = fingerprint(doc.text)
            if fp.length == 0:
                summary.skipped_empty.append(doc_id)
                continue
            if doc_id in existing:
                n, old = existing[doc_id]
                if old is not None:
                    self.index.remove(n, old)
                summary.replaced += 1
            else:
                n = next(new_ns)
                summary.added += 1
            rows.append((n, doc, fp))
            summary.characters += len(doc.text)
            summary.works.add(doc.work)
        self.store.save(rows)  # MongoDB first: the index can always be rebuilt from it
        self.index.add((n, fp) for n, _, fp in rows)

    def delete(self, doc_id: str) -> bool:
        removed = self.store.delete(doc_id)
        if removed is None:
            return False
        n, fp = removed
        if fp is not None:
            self.index.remove(n, fp)
        return True

    def rebuild_index(self, progress: Callable[[int], None] | None = None) -> int:
        self.index.clear()
        total, batch = 0, []
        for item in self.store.iter_fingerprints():
            batch.append(item)
            if len(batch) >= 1000:
                self.index.add(batch)
                total += len(batch)
                if progress:
                    progress(len(batch))
                batch = []
        if batch:
            self.index.add(batch)
            total += len(batch)
            if progress:
                progress(len(batch))
        return total
