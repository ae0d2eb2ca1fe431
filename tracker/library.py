"""The master library: ingest documents (MongoDB first, then the Redis index), delete them,
and keep the index true to MongoDB, which is the source of truth.

**Changes cannot half-happen.** Every change (an ingest batch, a deletion) runs under one
Redis lock, the *library write lock*, and goes in three steps:

1. MongoDB: the library version advances (``counters.library_version``) and the changed
   masters are stored stamped with it, *pending*, each with the fingerprints it replaces;
2. Redis: the replaced fingerprints' entries are removed, the new ones added, and the index's
   own version and master count set to MongoDB's (one MULTI);
3. MongoDB: the pending marks are cleared (deleted masters removed).

A writer that dies anywhere leaves pending masters, and the next command that opens the
library finishes them (steps 2 and 3 again: removing entries and adding them back is
idempotent) before it reads anything. Doc numbers are allocated inside the lock, so two
ingests of the same ids, even at once, give each id one number and leave no orphan postings.

**The index checks itself** (:meth:`MasterLibrary.verify`, run whenever the library is opened):
MongoDB's library version and master count are compared with the index's; a gap left by a
writer that died is closed by finishing its pending masters, anything else (an index lost or
restored from an older file, writes of its last second lost in a crash, masters lost by
MongoDB) rebuilds the index from MongoDB, with a log line saying why.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import TypeVar

from tracker.batching import batches
from tracker.config import Settings
from tracker.fingerprints.document import DocumentFingerprint, fingerprint_many
from tracker.index.master_index import MasterIndex
from tracker.index.storage import RedisStorage, Storage
from tracker.locks import HeldLock
from tracker.matching.detector import Detector
from tracker.model import MasterDocument
from tracker.runtime import Runtime
from tracker.stores.masters import IndexedPrints, MasterStore
from tracker.stores.pages import MatchStore

log = logging.getLogger(__name__)

WRITE_LOCK_TTL_S = 10.0  # a writer that dies blocks the others this long at most


@dataclass
class IngestSummary:
    added: int = 0
    replaced: int = 0
    skipped_empty: list[str] = field(default_factory=list)
    characters: int = 0
    works: set[str] = field(default_factory=set)


@dataclass(frozen=True)
class Verification:
    """What :meth:`MasterLibrary.verify` found: both sides' version and count, and what it did
    (``"ok"``, ``"finished"`` pending changes, or ``"rebuilt"``, with the reason)."""

    mongo_version: int
    mongo_count: int
    index_version: int | None
    index_count: int | None
    action: str
    reason: str = ""
    finished: int = 0  # pending masters finished


T = TypeVar("T")


class MasterLibrary:
    BATCH = 200

    def __init__(
        self,
        store: MasterStore,
        index: MasterIndex,
        write_lock: Callable[[], HeldLock] | None = None,
    ) -> None:
        self.store = store
        self.index = index
        # Tests and one-process tools may run without Redis locks (an in-memory index).
        self._write_lock = write_lock

    @classmethod
    def from_runtime(cls, runtime: Runtime, verify: bool = True) -> MasterLibrary:
        """The library on ``runtime``'s servers; with ``verify``, its index checked (and
        repaired) first, as every command that uses the library does."""
        store = MasterStore(runtime.db)
        store.ensure_indexes()
        prefix = runtime.settings.redis_prefix
        storage: Storage = RedisStorage(runtime.redis, prefix + "ix:")
        library = cls(
            store,
            MasterIndex(storage),
            lambda: HeldLock(runtime.redis, prefix + "library:lock", WRITE_LOCK_TTL_S),
        )
        if verify:
            library.verify()
        return library

    def detector(self, settings: Settings | None = None) -> Detector:
        return Detector(self.store, self.index, settings)

    @contextmanager
    def writing(self) -> Iterator[None]:
        """Hold the library write lock (waiting for another writer, or for the lock of one
        that died to expire)."""
        if self._write_lock is None:
            yield
            return
        lock = self._write_lock()
        lock.acquire(wait=threading.Event(), poll=0.05)
        try:
            yield
        finally:
            lock.release()

    # ------------------------------------------------------------------------------ ingest

    def ingest(
        self,
        documents: Iterable[MasterDocument],
        progress: Callable[[int], None] | None = None,
    ) -> IngestSummary:
        """Fingerprint, store and index ``documents``; an id seen before is replaced.

        Batches are pipelined: while one batch is written (under the write lock, in a writer
        thread, as the writes mostly wait on the servers) the next one is fingerprinted.
        """
        summary = IngestSummary()
        with ThreadPoolExecutor(1) as writer:
            writing: Future[int] | None = None
            for batch in batches(documents, self.BATCH):
                prints = [fp for _, fp in fingerprint_many([doc.text for doc in batch])]
                if writing is not None:
                    self._written(writing, progress)
                writing = writer.submit(self._write_batch, batch, prints, summary)
            if writing is not None:
                self._written(writing, progress)
        self.index.compact()
        return summary

    @staticmethod
    def _written(writing: Future[int], progress: Callable[[int], None] | None) -> None:
        done = writing.result()  # re-raises a write error here
        if progress:
            progress(done)

    def _write_batch(
        self,
        batch: list[MasterDocument],
        prints: list[DocumentFingerprint],
        summary: IngestSummary,
    ) -> int:
        latest = {doc.doc_id: (doc, fp) for doc, fp in zip(batch, prints, strict=True)}
        with self.writing():
            self._finish_pending()
            existing = self.store.existing(latest)  # the last version of an id in a batch wins
            rows = []
            new_ids = [d for d, (_, fp) in latest.items() if d not in existing and fp.length]
            new_ns = iter(self.store.allocate_ns(len(new_ids)))
            for doc_id, (doc, fp) in latest.items():
                if fp.length == 0:
                    summary.skipped_empty.append(doc_id)
                    continue
                if doc_id in existing:
                    old = existing[doc_id]
                    rows.append((old.n, doc, fp, old.all()))
                    summary.replaced += 1
                else:
                    rows.append((next(new_ns), doc, fp, []))
                    summary.added += 1
                summary.characters += len(doc.text)
                summary.works.add(doc.work)
            if rows:
                version = self.store.next_version()
                self.store.save(rows, set(new_ids), version)  # MongoDB first: pending
                for n, _, _, replaced in rows:
                    for old in replaced:
                        self.index.remove(n, old)
                self.index.add((n, fp) for n, _, fp, _ in rows)
                self.index.set_state(version, self.store.count())
                self.store.settle([doc.doc_id for _, doc, _, _ in rows], version)
        return len(batch)

    # ------------------------------------------------------------------------------ delete

    def delete(self, doc_id: str) -> bool:
        """Remove a master from MongoDB and the index, and close the pages' matches of it (a
        report names only masters of the library as it stands); False if there is no such
        master."""
        with self.writing():
            self._finish_pending()
            if doc_id not in self.store.existing([doc_id]):
                return False
            version = self.store.next_version()
            prints = self.store.mark_deleted(doc_id, version)
            if prints is None:
                return False
            self._unindex(prints)
            self.store.settle([doc_id], version)
            self.index.set_state(version, self.store.count())
        MatchStore(self.store.db).close_doc(doc_id)
        return True

    def _unindex(self, prints: IndexedPrints) -> None:
        for fp in prints.all():
            self.index.remove(prints.n, fp)

    # ------------------------------------------------------------------ pending and verify

    def _finish_pending(self) -> int:
        """Finish the changes a dead writer left pending (under the write lock): every
        fingerprint they may have left in the index removed, the current one added back (not
        for deletions), the index state set. Returns how many there were."""
        pending = self.store.pending()
        if not pending:
            return 0
        for change in pending:
            self._unindex(change["prints"])
            if not change["deleted"] and change["prints"].fingerprint is not None:
                self.index.add([(change["prints"].n, change["prints"].fingerprint)])
        self.store.settle([change["_id"] for change in pending])
        log.warning(
            "finished %d master change(s) a writer left half-done (in MongoDB, not yet in "
            "the index)",
            len(pending),
        )
        return len(pending)

    def verify(self, repair: bool = True) -> Verification:
        """Compare MongoDB and the index (library version and master count) and, with
        ``repair``, make them agree: finish pending changes, or rebuild the index when they
        cannot explain the difference. Cheap when they agree (two reads, no lock)."""
        mongo_version, index_state = self.store.version(), self.index.state()
        if index_state == (mongo_version, self.store.count()) and not self.store.has_pending():
            return Verification(mongo_version, index_state[1] or 0, *index_state, "ok")
        if not repair:
            return Verification(
                mongo_version, self.store.count(), *index_state, "differ", _why(index_state)
            )
        with self.writing():  # a writer in the middle of a change is waited for
            index_version, _ = self.index.state()
            pending = self.store.pending()
            explained = {change["changed_in"] for change in pending}
            mongo_version = self.store.version()
            finished = self._finish_pending() if index_version is not None else 0
            gap = set(range((index_version or 0) + 1, mongo_version + 1))
            count = self.store.count()
            if index_version is None and mongo_version == 0 and count == 0:
                index_version = 0  # a new library: nothing to index yet
            if index_version is not None and index_version <= mongo_version and gap <= explained:
                self.index.set_state(mongo_version, count)
            index_state = self.index.state()
            if index_state == (mongo_version, count):
                action = "finished" if finished else "ok"
                return Verification(mongo_version, count, *index_state, action, "", finished)
            reason = _why(index_state, mongo_version, count)
            log.warning("the index disagrees with MongoDB (%s): rebuilding it", reason)
            self._rebuild()
            return Verification(mongo_version, count, *index_state, "rebuilt", reason, finished)

    def rebuild_index(self, progress: Callable[[int], None] | None = None) -> int:
        """Recreate the Redis index from MongoDB; fingerprints stored by an older version of
        the code are recomputed from the master text first."""
        with self.writing():
            return self._rebuild(progress)

    def _rebuild(self, progress: Callable[[int], None] | None = None) -> int:
        self.index.clear()
        for change in self.store.pending():
            if change["deleted"]:
                self.store.settle([change["_id"]])
        total = 0
        for batch in batches(self.store.iter_fingerprints(), 1000):
            current = [(n, fp) for n, fp in batch if fp is not None]
            stale = [n for n, fp in batch if fp is None]
            self.index.add(current + (self.store.refingerprint(stale) if stale else []))
            total += len(batch)
            if progress:
                progress(len(batch))
        self.index.compact()
        self.store.settle([change["_id"] for change in self.store.pending()])
        self.store.drop_legacy()
        self.index.set_state(self.store.version(), self.store.count())
        return total


def _why(
    index_state: tuple[int | None, int | None], version: int | None = None, count: int | None = None
) -> str:
    index_version, index_count = index_state
    if index_version is None:
        return "the index has no library version: it was never built, or was lost"
    if version is not None and index_version > version:
        return f"the index is at library version {index_version}, MongoDB at {version}"
    if version is not None and index_version < version:
        return f"the index is at library version {index_version}, MongoDB at {version}"
    if count is not None and index_count != count:
        return f"the index holds {index_count} masters, MongoDB {count}"
    return "pending changes"
