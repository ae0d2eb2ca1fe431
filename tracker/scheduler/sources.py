"""Master sources the scheduler pulls new work from: a drop folder and a MongoDB collection.

Each source keeps a cursor in MongoDB (``master_sources``) that advances only after the
documents before it are ingested (MongoDB and index), one batch at a time. A pull killed at any
moment therefore loses nothing, and a restart re-ingests at most the batch that was in flight,
which is harmless: ingesting an id again replaces it, index included, so every document ends up
in the library exactly once.

*Drop folder*: ``.txt`` books and ``.jsonl`` files (see :mod:`tracker.reading.readers`) anywhere
under the folder. A file's cursor is its content hash and the number of its documents ingested, so a
file is read again only when it changes, and a changed file is ingested again from its start. Names
starting with ``.`` or ``~`` and other extensions (``.part``, ``.tmp``) are ignored: copy a file in
under such a name and rename it when complete. A malformed file is logged, counted and skipped until
it changes.

*MongoDB collection*: documents ``{_id, id?, work?, title?, text}`` read in order of a cursor
field (``_id`` by default, or e.g. an ``updated_at`` that the producer sets), ties broken by
``_id``; the last ``(value, _id)`` ingested is the cursor. Documents without text are logged,
counted and passed over.
"""

from __future__ import annotations

import hashlib
import logging
import threading
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pymongo.database import Database
from pymongo.errors import PyMongoError
from redis.exceptions import RedisError

from tracker.batching import batches
from tracker.config import Settings
from tracker.matching.library import MasterLibrary
from tracker.model import MasterDocument
from tracker.reading.readers import SUPPORTED, InputError, read_documents
from tracker.stores.sources import SourceCollection, SourceCursorStore
from tracker.text.encoding import DecodeError

log = logging.getLogger(__name__)


@dataclass
class PullSummary:
    """What one pull did; ``documents`` counts documents ingested (committed batches)."""

    files: int = 0
    documents: int = 0
    added: int = 0
    replaced: int = 0
    unchanged: int = 0  # read again, stored already as they are: left as they were
    skipped: int = 0  # malformed files and source documents, and empty texts
    errors: list[str] = field(default_factory=list)
    interrupted: bool = False
    failed: bool = False  # a source could not be read to its end

    def merge(self, other: PullSummary) -> None:
        self.files += other.files
        self.documents += other.documents
        self.added += other.added
        self.replaced += other.replaced
        self.unchanged += other.unchanged
        self.skipped += other.skipped
        self.errors += other.errors
        self.interrupted |= other.interrupted
        self.failed |= other.failed

    def to_dict(self) -> dict[str, Any]:
        return {
            "files": self.files,
            "documents": self.documents,
            "added": self.added,
            "replaced": self.replaced,
            "unchanged": self.unchanged,
            "skipped": self.skipped,
            "errors": self.errors[:20],
            "interrupted": self.interrupted,
            "failed": self.failed,
        }


def _ingest(library: MasterLibrary, batch: list[MasterDocument], summary: PullSummary) -> None:
    result = library.ingest(batch)
    summary.documents += len(batch)
    summary.added += result.added
    summary.replaced += result.replaced
    summary.unchanged += result.unchanged
    summary.skipped += len(result.skipped_empty)
    if result.replaced:  # nothing leaves the library unsaid (kept: index restore-deleted)
        log.warning(
            "replaced %d master(s) with new text: %s (the former versions are kept for "
            "`tracker index restore-deleted`)",
            result.replaced,
            ", ".join(result.replaced_ids),
        )
    for doc_id, before, after in result.retitled:
        log.warning("%s: the title changed under its key, from %r to %r", doc_id, before, after)


class DropFolder:
    """New and changed ``.txt``/``.jsonl`` files under ``root``."""

    def __init__(self, root: Path) -> None:
        self.root = Path(root)

    def __str__(self) -> str:
        return f"drop folder {self.root}"

    def files(self) -> list[Path]:
        if not self.root.is_dir():
            return []
        found = []
        for path in sorted(self.root.rglob("*")):
            relative = path.relative_to(self.root)
            if any(part.startswith((".", "~")) for part in relative.parts):
                continue
            if path.suffix.lower() in SUPPORTED and path.is_file():
                found.append(path)
        return found

    def source_id(self, path: Path) -> str:
        return f"drop:{path.relative_to(self.root).as_posix()}"

    def pull(
        self,
        library: MasterLibrary,
        cursors: SourceCursorStore,
        batch_size: int,
        stop: threading.Event | None = None,
    ) -> PullSummary:
        summary = PullSummary()
        files = self.files()
        known = cursors.many([self.source_id(p) for p in files])
        for path in files:
            if stop is not None and stop.is_set():
                summary.interrupted = True
                break
            source_id = self.source_id(path)
            try:
                self._pull_file(
                    path,
                    source_id,
                    known.get(source_id, {}),
                    library,
                    cursors,
                    batch_size,
                    summary,
                    stop,
                )
            except OSError as exc:  # vanished or unreadable: try again next time
                log.warning("could not read %s: %s", path, exc)
                summary.errors.append(f"{path}: {exc}")
        return summary

    def _pull_file(
        self,
        path: Path,
        source_id: str,
        cursor: dict[str, Any],
        library: MasterLibrary,
        cursors: SourceCursorStore,
        batch_size: int,
        summary: PullSummary,
        stop: threading.Event | None,
    ) -> None:
        stat = path.stat()
        unchanged_stat = (cursor.get("size"), cursor.get("mtime_ns")) == (
            stat.st_size,
            stat.st_mtime_ns,
        )
        if unchanged_stat and cursor.get("status") in ("done", "failed"):
            return
        digest = hashlib.blake2b(path.read_bytes(), digest_size=16).hexdigest()
        same_content = cursor.get("digest") == digest
        if same_content and cursor.get("status") in ("done", "failed"):
            cursors.set(source_id, size=stat.st_size, mtime_ns=stat.st_mtime_ns)  # touched only
            return
        try:
            documents = list(read_documents(path))  # the whole file parses before any write
        except (InputError, DecodeError) as exc:
            log.error("skipped malformed master file %s: %s", path, exc)
            summary.skipped += 1
            summary.errors.append(str(exc))
            cursors.set(
                source_id,
                status="failed",
                error=str(exc),
                digest=digest,
                size=stat.st_size,
                mtime_ns=stat.st_mtime_ns,
                done=0,
            )
            return
        done = int(cursor.get("done", 0)) if same_content else 0
        summary.files += 1
        if done:
            log.info("resuming %s after %d of its %d documents", path, done, len(documents))
        cursors.set(
            source_id,
            status="partial",
            digest=digest,
            size=stat.st_size,
            mtime_ns=stat.st_mtime_ns,
            done=done,
            total=len(documents),
            error=None,
        )
        for batch in batches(documents[done:], batch_size):
            if stop is not None and stop.is_set():
                summary.interrupted = True
                return
            _ingest(library, batch, summary)
            done += len(batch)
            cursors.set(source_id, done=done)  # after the batch is in MongoDB and the index
        cursors.set(source_id, status="done", done=done)
        log.info("ingested %s: %d documents", path, len(documents))


@dataclass(frozen=True)
class CollectionSource:
    """New documents of a MongoDB collection (:class:`~tracker.stores.sources.SourceCollection`),
    ingested in its cursor order."""

    documents: SourceCollection

    @property
    def source_id(self) -> str:
        return self.documents.source_id

    @property
    def cursor_field(self) -> str:
        return self.documents.cursor_field

    def __str__(self) -> str:
        return self.source_id

    def pull(
        self,
        library: MasterLibrary,
        cursors: SourceCursorStore,
        batch_size: int,
        stop: threading.Event | None = None,
    ) -> PullSummary:
        summary = PullSummary()
        self.documents.ensure_index()
        cursor = cursors.get(self.source_id)
        batch: list[MasterDocument] = []
        last: dict[str, Any] | None = None

        def commit() -> None:
            if batch:
                _ingest(library, batch, summary)
                batch.clear()
            if last is not None:
                cursors.set(
                    self.source_id,
                    last_id=last["_id"],
                    last_value=last.get(self.cursor_field),
                    field=self.cursor_field,
                )

        for doc in self.documents.after(cursor):
            document = master_document(doc)
            if document is None:
                log.error(
                    "skipped source document %r of %s: no text", doc.get("_id"), self.source_id
                )
                summary.skipped += 1
            else:
                batch.append(document)
            last = doc
            if len(batch) >= batch_size:
                commit()
                last = None
                if stop is not None and stop.is_set():
                    summary.interrupted = True
                    return summary
        commit()
        return summary


def master_document(doc: dict[str, Any]) -> MasterDocument | None:
    """A source document as a master document; None when it has no text."""
    text = doc.get("text")
    if not isinstance(text, str) or not text.strip():
        return None
    doc_id = str(doc.get("id") or doc["_id"])
    return MasterDocument(
        doc_id=doc_id,
        work=str(doc.get("work") or doc_id),
        title=str(doc.get("title") or doc_id),
        text=text,
        source=f"mongo:{doc['_id']}",
    )


def drop_folder(settings: Settings) -> Path:
    """The configured drop folder (default ``<data_dir>/inbox``)."""
    if settings.drop_dir:
        return Path(settings.drop_dir).expanduser()
    return Path(settings.data_dir) / "inbox"


def configured_sources(
    settings: Settings, default_db: Database
) -> tuple[DropFolder, CollectionSource | None]:
    """The drop folder and (when configured) the MongoDB source of ``settings``; close the
    source's documents (:meth:`~tracker.stores.sources.SourceCollection.close`) when done."""
    drop = DropFolder(drop_folder(settings))
    if not settings.master_source_collection:
        return drop, None
    documents = SourceCollection.connect(
        default_db,
        settings.master_source_collection,
        settings.master_source_db or settings.mongo_db,
        url=settings.master_source_url,
        cursor_field=settings.master_source_cursor or "_id",
    )
    return drop, CollectionSource(documents)


def pull_all(
    library: MasterLibrary,
    cursors: SourceCursorStore,
    sources: Iterable[DropFolder | CollectionSource | None],
    batch_size: int,
    stop: threading.Event | None = None,
) -> PullSummary:
    """Pull every source in turn; one failing source does not stop the others."""
    total = PullSummary()
    for source in sources:
        if source is None:
            continue
        try:
            total.merge(source.pull(library, cursors, batch_size, stop))
        except (PyMongoError, RedisError) as exc:  # what was committed stays committed
            log.error("pull from %s failed: %s", source, exc)
            total.errors.append(f"{source}: {exc}")
            total.failed = True
        if total.interrupted:
            break
    return total
