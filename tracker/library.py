"""The master library: ingest documents (MongoDB first, then the Redis index), delete them,
and rebuild the index from MongoDB, which is the source of truth."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from itertools import islice
from typing import TypeVar

from tracker.config import Settings
from tracker.fingerprints.document import DocumentFingerprint, fingerprint_many
from tracker.index.master_index import MasterIndex
from tracker.index.storage import RedisStorage, Storage
from tracker.matching.detector import Detector
from tracker.model import MasterDocument
from tracker.runtime import Runtime
from tracker.stores.masters import MasterStore


@dataclass
class IngestSummary:
    added: int = 0
    replaced: int = 0
    skipped_empty: list[str] = field(default_factory=list)
    characters: int = 0
    works: set[str] = field(default_factory=set)


T = TypeVar("T")


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
        self,
        documents: Iterable[MasterDocument],
        progress: Callable[[int], None] | None = None,
    ) -> IngestSummary:
        """Fingerprint, store and index ``documents``; an id seen before is replaced.

        Batches are pipelined: while one batch is written (MongoDB first, then the Redis index;
        a writer thread, as the writes mostly wait on the servers) the next one is fingerprinted.
        """
        summary = IngestSummary()
        with ThreadPoolExecutor(1) as writer:
            writing: Future[int] | None = None
            for batch in _batches(documents, self.BATCH):
                prints = [fp for _, fp in fingerprint_many([doc.text for doc in batch])]
                if writing is not None:
                    self._written(writing, progress)
                # After the previous batch is stored, so an id repeated across batches is seen.
                rows, new_ids = self._prepare(batch, prints, summary)
                writing = writer.submit(self._write, rows, new_ids, len(batch))
            if writing is not None:
                self._written(writing, progress)
        self.index.compact()
        return summary

    @staticmethod
    def _written(writing: Future[int], progress: Callable[[int], None] | None) -> None:
        done = writing.result()  # re-raises a write error here
        if progress:
            progress(done)

    def _prepare(
        self, batch: list[MasterDocument], prints: list[DocumentFingerprint], summary: IngestSummary
    ) -> tuple[list[tuple[int, MasterDocument, DocumentFingerprint]], set[str]]:
        """Assign ids (an existing id keeps its number; its old index entries are removed);
        the rows to write and the ids new to the library."""
        latest = {doc.doc_id: (doc, fp) for doc, fp in zip(batch, prints, strict=True)}
        existing = self.store.existing(latest)  # the last version of an id in a batch wins
        new_ns = iter(self.store.allocate_ns(sum(1 for d in latest if d not in existing)))
        rows = []
        for doc_id, (doc, fp) in latest.items():
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
        return rows, set(latest) - set(existing)

    def _write(
        self,
        rows: list[tuple[int, MasterDocument, DocumentFingerprint]],
        new_ids: set[str],
        batch_size: int,
    ) -> int:
        self.store.save(rows, new_ids)  # MongoDB first: the index can always be rebuilt from it
        self.index.add((n, fp) for n, _, fp in rows)
        return batch_size

    def delete(self, doc_id: str) -> bool:
        removed = self.store.delete(doc_id)
        if removed is None:
            return False
        n, fp = removed
        if fp is not None:
            self.index.remove(n, fp)
        return True

    def rebuild_index(self, progress: Callable[[int], None] | None = None) -> int:
        """Recreate the Redis index from MongoDB; fingerprints stored by an older version of
        the code are recomputed from the master text first."""
        self.index.clear()
        total = 0
        for batch in _batches(self.store.iter_fingerprints(), 1000):
            current = [(n, fp) for n, fp in batch if fp is not None]
            stale = [n for n, fp in batch if fp is None]
            self.index.add(current + (self.store.refingerprint(stale) if stale else []))
            total += len(batch)
            if progress:
                progress(len(batch))
        self.index.compact()
        self.store.drop_legacy()
        return total


def _batches(items: Iterable[T], size: int) -> Iterator[list[T]]:
    iterator = iter(items)
    while batch := list(islice(iterator, size)):
        yield batch
