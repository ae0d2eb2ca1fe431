"""The master library: ingest documents (MongoDB first, then the Redis index), delete them,
and keep the index true to MongoDB, which is the source of truth.

**Changes cannot half-happen.** Every change (an ingest batch, a deletion) runs under one
Redis lock, the *library write lock*, and goes in three steps:

1. MongoDB: the library version advances (``counters.library_version``), the change is written
   in the journal (``library_journal``: the ids, their numbers and the fingerprints the index
   may hold for them), and the changed masters are stored stamped with the version (deleted
   ones removed);
2. Redis: the old fingerprints' entries are removed, the new ones added, and the index's own
   version and master count set to MongoDB's (one MULTI);
3. MongoDB: the change leaves the journal.

A writer that dies anywhere leaves its change in the journal, and the next command that opens
the library finishes it (step 2 again from the journal and the stored masters: removing
entries and adding them back is idempotent) before it reads anything. Doc numbers are
allocated inside the lock, so two ingests of the same ids, even at once, give each id one
number and leave no orphan postings.

**The index checks itself** (:meth:`MasterLibrary.verify`, run whenever the library is opened):
MongoDB's library version and master count are compared with the index's; a gap left by a
writer that died is closed by finishing its journaled changes, anything else (an index lost or
restored from an older file, writes of its last second lost in a crash, masters lost by
MongoDB, on a Redis Cluster a node that lost writes the others kept: see
:meth:`tracker.index.master_index.MasterIndex.lagging`) rebuilds the index from MongoDB, with a
log line saying why.
"""

from __future__ import annotations

import logging
import multiprocessing
import os
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import Future, ProcessPoolExecutor, ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import TypeVar

from tracker.batching import batches
from tracker.config import Settings
from tracker.fingerprints.document import DocumentFingerprint, fingerprint_many
from tracker.index.layout import IndexLayout
from tracker.index.master_index import MasterIndex
from tracker.index.storage import RedisStorage, Storage
from tracker.matching.detector import Detector
from tracker.model import MasterDocument
from tracker.servers.locks import HeldLock
from tracker.servers.runtime import Runtime
from tracker.stores.master_trash import MasterTrash
from tracker.stores.masters import IndexedPrints, MasterStore
from tracker.stores.pages import MatchStore

log = logging.getLogger(__name__)

WRITE_LOCK_TTL_S = 10.0  # a writer that dies blocks the others this long at most


MAX_KEPT = 100_000  # works a summary names at most (a bulk load may hold millions)
MAX_LISTED = 10  # empty documents and repeated ids a summary names
BULK_BATCH = 1000  # documents a batch with fingerprinting workers: one insert, one round trip


FINGERPRINT_BATCH = 200  # texts fingerprinted together: larger batches ran 25 % slower


def _fingerprints(texts: list[str]) -> list[DocumentFingerprint]:
    """The fingerprints of master texts (in a fingerprinting worker, or in process), in
    batches of ``FINGERPRINT_BATCH`` (numpy's per-call cost paid once per batch, while the
    SimHash votes' counts stay in the CPU's caches)."""
    return [fp for part in batches(texts, FINGERPRINT_BATCH) for _, fp in fingerprint_many(part)]


def _start_worker(parent: int) -> None:
    """A fingerprinting worker's start: its tables loaded, and a watch on the process that
    started it, which it outlives by a second at most (one killed with ``kill -9`` cannot stop
    its pool: the worker would wait for batches for ever)."""
    _fingerprints(["预热词典，加载表格。"])

    def watch() -> None:
        while True:
            time.sleep(1.0)
            try:
                os.kill(parent, 0)
            except ProcessLookupError:
                os._exit(1)
            except PermissionError:  # the pid was taken by another user's process
                os._exit(1)

    threading.Thread(target=watch, name="parent-watch", daemon=True).start()


def _fingerprint_pool(workers: int) -> ProcessPoolExecutor:
    """Worker processes for fingerprinting, spawned (this process has server connections and
    their threads, which a forked child must not inherit), each with its tables and
    dictionaries loaded before its first batch."""
    context = multiprocessing.get_context("spawn")
    return ProcessPoolExecutor(
        workers, mp_context=context, initializer=_start_worker, initargs=(os.getpid(),)
    )


@dataclass
class IngestSummary:
    added: int = 0
    replaced: int = 0
    unchanged: int = 0  # stored already, the same text, work and title: left as they were
    skipped_empty: list[str] = field(default_factory=list)
    empty: int = 0  # documents with no text after normalisation (the first named above)
    characters: int = 0
    works: set[str] = field(default_factory=set)  # the first MAX_KEPT
    # An id met again in the same ingest (its first source, then the one stored): the first few.
    again: list[tuple[str, str, str]] = field(default_factory=list)
    repeated: int = 0
    replaced_ids: list[str] = field(default_factory=list)  # the first MAX_LISTED
    # A master stored again under a new title (id, the title it had, the new one): first few.
    retitled: list[tuple[str, str, str]] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)  # deleted by replace_works
    ids: dict[str, set[str]] | None = None  # work -> ids read (``track_ids``: replace_works)

    def add_work(self, work: str) -> None:
        if len(self.works) < MAX_KEPT:
            self.works.add(work)


@dataclass(frozen=True)
class Verification:
    """What :meth:`MasterLibrary.verify` found: both sides' version and count, and what it did
    (``"ok"``, ``"finished"`` changes left half-done, or ``"rebuilt"``, with the reason)."""

    mongo_version: int
    mongo_count: int
    index_version: int | None
    index_count: int | None
    action: str
    reason: str = ""
    finished: int = 0  # masters of changes left half-done, finished


T = TypeVar("T")


class MasterLibrary:
    BATCH = 200

    def __init__(
        self,
        store: MasterStore,
        index: MasterIndex,
        write_lock: Callable[[], HeldLock] | None = None,
        trash: MasterTrash | None = None,
    ) -> None:
        self.store = store
        self.index = index
        self.trash = trash  # where replaced and deleted masters are kept (None: nowhere)
        # Tests and one-process tools may run without Redis locks (an in-memory index).
        self._write_lock = write_lock

    @classmethod
    def from_runtime(cls, runtime: Runtime, verify: bool = True) -> MasterLibrary:
        """The library on ``runtime``'s servers; with ``verify``, its index checked (and
        repaired) first, as every command that uses the library does."""
        store = MasterStore(runtime.db)
        prefix = runtime.settings.redis_prefix
        storage: Storage = RedisStorage(runtime.redis, prefix + "ix:")
        library = cls(
            store,
            MasterIndex.open(storage, IndexLayout.configured(runtime.settings)),
            lambda: HeldLock(runtime.redis, prefix + "library:lock", WRITE_LOCK_TTL_S),
            MasterTrash(runtime.db, runtime.settings.master_trash_days),
        )
        if verify:
            library.verify()
        return library

    def detector(self, settings: Settings | None = None) -> Detector:
        return Detector(self.store, self.index, settings)

    @contextmanager
    def writing(self) -> Iterator[None]:
        """Hold the library write lock (waiting for another writer, or for the lock of one
        that died to expire), writing the index with its stored layout (a rebuild by another
        process, under the same lock, may have changed it)."""
        if self._write_lock is None:
            self.index.follow_stored_layout()
            yield
            return
        lock = self._write_lock()
        lock.acquire(wait=threading.Event(), poll=0.05)
        try:
            self.index.follow_stored_layout()
            yield
        finally:
            lock.release()

    # ------------------------------------------------------------------------------ ingest

    def ingest(
        self,
        documents: Iterable[MasterDocument],
        progress: Callable[[int], None] | None = None,
        workers: int = 0,
        batch: int | None = None,
        track_ids: bool = False,
    ) -> IngestSummary:
        """Fingerprint, store and index ``documents``; an id seen before is replaced (its
        former version kept in the trash), or left as it is when its text, work and title are
        unchanged (so an ingest run again, or cut short and run again, redoes nothing it
        finished). With ``track_ids`` the summary holds every id read, by work
        (:meth:`replace_works`).

        Documents are read as they are used, in batches of ``batch`` (``BATCH``, or
        ``BULK_BATCH`` with ``workers``), and pipelined: while one batch is written (under the
        write lock, in a writer thread, as the writes mostly wait on the servers: one bulk
        insert, one pipelined round trip of appends) the next ones are fingerprinted, in
        ``workers`` processes (0: in this one). Memory holds a few batches whatever the
        input's size. ``progress`` is told of each batch written (its documents).
        """
        summary = IngestSummary(ids={} if track_ids else None)
        size = batch or (BULK_BATCH if workers else self.BATCH)
        if self.index.state()[0] != self.store.version():
            self.verify()  # a master stored unchanged is passed over: the index must hold it
        started = self.store.version()  # ids stored after this were stored by this ingest
        pool = _fingerprint_pool(workers) if workers else None
        try:
            with ThreadPoolExecutor(1) as writer:
                writing: Future[int] | None = None
                ahead: deque[tuple[list[MasterDocument], Future | None]] = deque()
                for docs in batches(documents, size):
                    texts = [doc.text for doc in docs]
                    ahead.append((docs, pool.submit(_fingerprints, texts) if pool else None))
                    if len(ahead) > workers:  # the workers keep that many batches ahead
                        writing = self._hand_over(
                            writer, writing, ahead.popleft(), summary, started, progress
                        )
                while ahead:
                    writing = self._hand_over(
                        writer, writing, ahead.popleft(), summary, started, progress
                    )
                if writing is not None:
                    self._written(writing, progress)
            with self.writing():
                self.index.compact()
        finally:
            if pool is not None:
                pool.shutdown(cancel_futures=True)
        return summary

    def _hand_over(
        self,
        writer: ThreadPoolExecutor,
        writing: Future[int] | None,
        batch: tuple[list[MasterDocument], Future | None],
        summary: IngestSummary,
        started: int,
        progress: Callable[[int], None] | None,
    ) -> Future[int]:
        """The batch's fingerprints (from its worker, or made here while the previous batch is
        written), then its write, once the previous one is done (batches are written in order)."""
        docs, fingerprinting = batch
        if fingerprinting is not None:
            prints = fingerprinting.result()
        else:
            prints = _fingerprints([doc.text for doc in docs])
        if writing is not None:
            self._written(writing, progress)
        return writer.submit(self._write_batch, docs, prints, summary, started)

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
        started: int = 0,
    ) -> int:
        latest: dict[str, tuple[MasterDocument, DocumentFingerprint]] = {}
        for doc, fp in zip(batch, prints, strict=True):
            if summary.ids is not None:
                summary.ids.setdefault(doc.work, set()).add(doc.doc_id)
            if doc.doc_id in latest:
                self._again(summary, doc.doc_id, latest[doc.doc_id][0].source, doc.source)
            latest[doc.doc_id] = (doc, fp)  # the last version of an id in a batch wins
        with self.writing():
            self._finish_open_changes()
            existing = self.store.existing(latest)
            rows, journal = [], []
            for doc_id, (doc, fp) in list(latest.items()):
                before = existing.get(doc_id)
                if before is not None and before.changed_in > started:
                    self._again(summary, doc_id, before.source, doc.source)
                if fp.length == 0:
                    summary.empty += 1
                    if len(summary.skipped_empty) < MAX_LISTED:
                        summary.skipped_empty.append(doc_id)
                    del latest[doc_id]
                elif before is not None and before.same(doc):
                    summary.unchanged += 1
                    del latest[doc_id]
            new_ids = [d for d in latest if d not in existing]
            new_ns = iter(self.store.allocate_ns(len(new_ids)))
            replaced = [d for d in latest if d in existing]
            if replaced and self.trash is not None:
                self.trash.keep(self.store.texts(replaced).values(), "replaced")
            for doc_id, (doc, fp) in latest.items():
                if doc_id in existing:
                    before = existing[doc_id]
                    summary.replaced += 1
                    if len(summary.replaced_ids) < MAX_LISTED:
                        summary.replaced_ids.append(doc_id)
                    retitled = before.title and before.title != doc.title
                    if retitled and len(summary.retitled) < MAX_LISTED:
                        summary.retitled.append((doc_id, before.title, doc.title))
                else:
                    before = IndexedPrints(next(new_ns), None)
                    summary.added += 1
                rows.append((before.n, doc, fp))
                journal.append((doc_id, before))
                summary.characters += len(doc.text)
                summary.add_work(doc.work)
            if rows:
                version = self.store.next_version()
                self.store.begin(version, journal, deleted=False)
                self.store.log_change(version, [doc.doc_id for _, doc, _ in rows])
                self.store.save(rows, set(new_ids), version)  # MongoDB first
                count = self.store.counted(len(new_ids))
                for _, before in journal:
                    self._unindex(before)
                self.index.add((n, fp) for n, _, fp in rows)
                self.index.set_state(version, count)
                self.store.end(version)
                self.index.maybe_compact()  # a bulk load: its buckets split as they fill
        return len(batch)

    @staticmethod
    def _again(summary: IngestSummary, doc_id: str, first: str, later: str) -> None:
        summary.repeated += 1
        if len(summary.again) < MAX_LISTED:
            summary.again.append((doc_id, first, later))

    # ------------------------------------------------------------------------------ delete

    def delete(self, doc_id: str, reason: str = "deleted") -> bool:
        """Remove a master from MongoDB and the index (kept in the trash first, for
        ``reason``), and close the pages' matches of it (a report names only masters of the
        library as it stands); False if there is no such master."""
        with self.writing():
            self._finish_open_changes()
            before = self.store.existing([doc_id]).get(doc_id)
            if before is None:
                return False
            if self.trash is not None:
                self.trash.keep(self.store.texts([doc_id]).values(), reason)
            version = self.store.next_version()
            self.store.begin(version, [(doc_id, before)], deleted=True)
            self._unindex(before)
            self.store.delete([doc_id])
            self.index.set_state(version, self.store.counted(-1))
            self.store.end(version)
        MatchStore(self.store.db).close_doc(doc_id)
        return True

    def replace_works(self, summary: IngestSummary) -> list[str]:
        """Delete the masters of the works ``summary``'s ingest read (run with
        ``track_ids``) that it did not bring: the works are replaced as wholes. Returns the
        ids deleted (kept in the trash)."""
        removed = []
        for work, ids in sorted((summary.ids or {}).items()):
            for entry in list(self.store.listing(work)):
                if entry.doc_id not in ids and self.delete(entry.doc_id, "replace-work"):
                    removed.append(entry.doc_id)
        return removed

    def restore(self, kept: list[dict]) -> IngestSummary:
        """Ingest these kept versions (:meth:`MasterTrash.newest`) again, and forget them: a
        master they replace goes to the trash in turn."""
        docs = [
            MasterDocument(d["doc_id"], d["work"], d["title"], d["text"], d.get("source", ""))
            for d in kept
        ]
        summary = self.ingest(docs)
        if self.trash is not None:
            self.trash.forget(d["_id"] for d in kept)
        return summary

    def _unindex(self, prints: IndexedPrints) -> None:
        for fp in prints.all():
            self.index.remove(prints.n, fp)

    # --------------------------------------------------------------- open changes and verify

    def _finish_open_changes(self) -> int:
        """Finish the changes a dead writer began (under the write lock): every fingerprint
        they may have left in the index removed, each master's stored one added back (none for
        a deletion, whose masters are removed), the index state set. Returns how many masters
        they touched."""
        changes = self.store.open_changes()
        if not changes:
            return 0
        touched = 0
        for change in changes:
            for doc_id, prints in change["changes"]:
                self._unindex(prints)
                if change["deleted"]:
                    self.store.delete([doc_id])
                elif prints.fingerprint is not None:
                    self.index.add([(prints.n, prints.fingerprint)])
                touched += 1
            self.store.end(change["version"])
        self.store.recount()  # the writer may have died before recording its count
        log.warning(
            "finished %d change(s) of %d master(s) a writer left half-done (in MongoDB, not yet "
            "in the index)",
            len(changes),
            touched,
        )
        return touched

    def verify(self, repair: bool = True, thorough: bool = False) -> Verification:
        """Compare MongoDB and the index (library version and master count) and, with
        ``repair``, make them agree: finish open changes, or rebuild the index when they
        cannot explain the difference. Cheap when they agree (a few reads, no lock), as the
        MongoDB side's count is the one recorded with its version; ``thorough`` counts the
        masters instead (``tracker index stats`` and ``verify``: masters lost by MongoDB)."""
        mongo_version, index_state = self.store.version(), self.index.state()
        count = self.store.count_stored() if thorough else self.store.count()
        if (
            index_state == (mongo_version, count)
            and not self.store.has_open_changes()
            and not self.index.lagging(mongo_version)
        ):
            return Verification(mongo_version, count, *index_state, "ok")
        if not repair:
            if index_state[0] is None and mongo_version == 0 and count == 0:
                return Verification(mongo_version, count, *index_state, "ok")  # nothing yet
            return Verification(mongo_version, count, *index_state, "differ", _why(index_state))
        with self.writing():  # a writer in the middle of a change is waited for
            index_version, _ = self.index.state()
            lagging = self.index.lagging(index_version) if index_version is not None else 0
            if lagging:  # before any new state raises the marks of the servers that kept up
                reason = (
                    f"{lagging} groups of buckets are older than the index's library version "
                    f"{index_version}: a Redis Cluster node lost writes"
                )
                log.warning("the index disagrees with itself (%s): rebuilding it", reason)
                count = self.store.recount()
                self._rebuild()
                return Verification(self.store.version(), count, *index_state, "rebuilt", reason)
            explained = {change["version"] for change in self.store.open_changes()}
            mongo_version = self.store.version()
            finished = self._finish_open_changes() if index_version is not None else 0
            gap = set(range((index_version or 0) + 1, mongo_version + 1))
            count = self.store.recount()
            if index_version is None and mongo_version == 0 and count == 0:
                self.index.set_state(0, 0)  # a new library: nothing to index yet
            elif index_version is not None and gap and gap <= explained:
                # the versions the index lacks were all journaled, and are finished now (with
                # no gap, a count that differs is not explained by any change)
                self.index.set_state(mongo_version, count)
            index_state = self.index.state()
            if index_state == (mongo_version, count):
                action = "finished" if finished else "ok"
                return Verification(mongo_version, count, *index_state, action, "", finished)
            reason = _why(index_state, mongo_version, count)
            log.warning("the index disagrees with MongoDB (%s): rebuilding it", reason)
            self._rebuild()
            return Verification(mongo_version, count, *index_state, "rebuilt", reason, finished)

    def rebuild_index(
        self, progress: Callable[[int], None] | None = None, layout: IndexLayout | None = None
    ) -> int:
        """Recreate the Redis index from MongoDB (with ``layout``, else the one it has);
        fingerprints stored by an older version of the code are recomputed from the master
        text first."""
        with self.writing():
            return self._rebuild(progress, layout)

    def _rebuild(
        self, progress: Callable[[int], None] | None = None, layout: IndexLayout | None = None
    ) -> int:
        self.index.clear()
        if layout is not None:
            self.index.use_layout(layout)
        for change in self.store.open_changes():
            if change["deleted"]:
                self.store.delete([doc_id for doc_id, _ in change["changes"]])
        self.store.clear_journal()
        total = 0
        for batch in batches(self.store.iter_fingerprints(), 1000):
            current = [(n, fp) for n, fp in batch if fp is not None]
            stale = [n for n, fp in batch if fp is None]
            self.index.add(current + (self.store.refingerprint(stale) if stale else []))
            self.index.maybe_compact()
            total += len(batch)
            if progress:
                progress(len(batch))
        self.index.compact()
        self.store.drop_legacy()
        self.index.set_state(self.store.version(), self.store.recount())
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
    return "changes left half-done"
