"""``tracker index migrate-ids``: re-key the masters stored with positional ids.

Books were once stored as ``WORK/0001``, ``WORK/0002``… by a chapter's position in its file,
so a file of new chapters replaced the first ones. A chapter is now ``WORK/KEY``, ``KEY`` from
its own heading (:func:`tracker.text.chapters.chapter_key`); its stored title is that heading
(with the volumes above it), so the key of a stored chapter is found from its title alone.

A master is re-keyed when its id is ``WORK/`` and four or more digits, and it came from a
``.txt`` book (its ``source``; an empty one, from versions that did not keep it, counts as a
book): ids a ``.jsonl`` record or a MongoDB source gave are the rights holder's own and kept.
Two chapters of a work that get one key (a heading given twice) are told apart as a new
ingest does (``KEY~2``), in the order they were stored; so is a key another master of the work
holds already (a chapter ingested again since, under its new id).

The plan is stored before anything moves (:mod:`tracker.stores.id_migration`): a run cut short
is finished by the next, and a run over a migrated library does nothing. The run holds the
library's write lock, so no ingest interleaves, and advances the library version, so that the
processes running (the console, warm checkers, crawl workers) drop the masters they cached
under their old ids.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from itertools import groupby

from tracker.batching import ID_BATCH, batches
from tracker.matching.library import MasterLibrary
from tracker.stores.id_migration import IdMigrationStore
from tracker.text.chapters import AGAIN_MARK, chapter_key

_POSITIONAL = re.compile(r"/[0-9]{4,}$")


@dataclass
class Migration:
    planned: list[tuple[str, str]]  # (old id, new id) of this run, finished ones included
    resumed: int = 0  # renames a run cut short had planned, finished by this one
    done_before: int = 0  # renames finished by earlier runs


def plan(store: IdMigrationStore) -> list[tuple[str, str]]:
    """``(old id, new id)`` of every master stored with a positional id (module docstring)."""
    renames = []
    for work, masters in groupby(store.books(), key=lambda d: str(d.get("work", ""))):
        masters = list(masters)
        moving = [m for m in masters if _positional(m, work)]
        used = {str(m["_id"]) for m in masters} - {str(m["_id"]) for m in moving}
        for master in moving:
            new = f"{work}/{chapter_key(str(master.get('title') or ''))}"
            if new == master["_id"]:
                used.add(new)
                continue
            candidate, again = new, 2
            while candidate in used:
                candidate, again = f"{new}{AGAIN_MARK}{again}", again + 1
            used.add(candidate)
            renames.append((str(master["_id"]), candidate))
    return renames


def _positional(master: dict, work: str) -> bool:
    doc_id = str(master["_id"])
    source = str(master.get("source") or "").lower()
    from_book = not source or source.endswith(".txt")
    return from_book and doc_id.startswith(f"{work}/") and bool(_POSITIONAL.search(doc_id))


def migrate(
    library: MasterLibrary,
    dry_run: bool = False,
    progress: Callable[[int], None] | None = None,
) -> Migration:
    """Re-key the library's positional ids (or, with ``dry_run``, only say which)."""
    store = IdMigrationStore(library.store.db)
    if dry_run:
        return Migration(plan(store), done_before=store.done_count())
    with library.writing():
        pending = store.planned()
        done_before = store.done_count()
        for chunk in batches(pending, ID_BATCH):
            store.rename(chunk)
        renames = plan(store)
        store.add_plan(renames)
        for chunk in batches(renames, ID_BATCH):
            store.rename(chunk)
            if progress:
                progress(len(chunk))
        if pending or renames:
            # The index names masters by n and is unchanged; the version moves on so that
            # running checkers, the console and crawl workers drop the ids they cached.
            version = library.store.next_version()
            library.index.set_state(version, library.store.count())
    return Migration(pending + renames, len(pending), done_before)
