"""``tracker index stats|verify|rebuild``, ``tracker index list [--work W]``, ``tracker index
delete DOC_ID…``, ``tracker index restore-deleted`` and ``tracker index migrate-ids``."""

from __future__ import annotations

import argparse
import re
from typing import TYPE_CHECKING

from tracker.cli._output import print_table
from tracker.config import Settings
from tracker.formats import count, number_ranges, when
from tracker.servers.connect import connect

if TYPE_CHECKING:
    from tracker.index.layout import IndexLayout, Tables
    from tracker.index.storage import StorageMemory
    from tracker.servers.runtime import Runtime


def register(commands: argparse._SubParsersAction) -> None:
    from tracker.cli import actions_help, settings_help

    parser = commands.add_parser(
        "index",
        help="list the master library's works (list), compare the Redis index with MongoDB "
        "(stats), repair it (verify), rebuild it, or delete master documents",
        description="The master library (in MongoDB) and its index (in Redis). Exit status: 0 "
        "done; 1 stats: the index and MongoDB differ, delete: some ids not found, list: no such "
        "work; 2 error.",
        epilog=actions_help(
            {
                "list": "the library's works: documents, size, first and last ingested "
                "(--work W: the documents of W, the chapter numbers held and the gaps)",
                "stats": "MongoDB's masters and library version beside the index's, its layout "
                "and memory (read only)",
                "verify": "repair the index: finish half-done changes, or rebuild it; file "
                "stored pages missing from the page index",
                "rebuild": "rebuild the index and the page index from MongoDB, in the layout "
                "the settings ask for",
                "delete": "delete the master documents DOC_ID… (their matches are closed; "
                "they are kept for master_trash_days)",
                "restore-deleted": "bring back masters deleted or replaced: DOC_ID…, --work W, "
                "or --all (the newest kept version of each); with no argument, list them",
                "migrate-ids": "re-key chapters stored with positional ids (WORK/0001) by their "
                "own headings (WORK/1, WORK/卷2.1…), and the matches that name them; "
                "resumable, and a no-op once done (--dry-run: only list them)",
            }
        )
        + "\n\n"
        + settings_help(
            "master_trash_days", "index_bucket_bits", "index_wide_ids", "page_index_days"
        ),
    )
    parser.add_argument(
        "action",
        choices=ACTIONS,
        metavar="ACTION",
        help="list, stats, verify, rebuild, delete, restore-deleted or migrate-ids (below)",
    )
    parser.add_argument(
        "doc_ids", nargs="*", default=[], metavar="DOC_ID", help="for delete, restore-deleted"
    )
    parser.add_argument(
        "--work", metavar="W", help="for list, restore-deleted: the documents of work W"
    )
    parser.add_argument("--all", action="store_true", help="for restore-deleted: every master kept")
    parser.add_argument(
        "--dry-run", action="store_true", help="for migrate-ids: list the renames, change nothing"
    )
    parser.add_argument("--wide", action="store_true", help="for list: one line per row")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace, settings: Settings) -> int:
    runtime = connect(settings, redis=args.action != "list")
    try:
        return ACTIONS[args.action](args, runtime)
    finally:
        runtime.close()


def stats(args: argparse.Namespace, runtime: Runtime) -> int:
    """Both sides, read only: MongoDB's library version and masters, the index's, and the
    Redis memory the index's own keys take (not the server's, which holds more)."""
    from tracker.index.page_index import PageIndex
    from tracker.matching.library import MasterLibrary
    from tracker.servers.redis_cluster import used_memory
    from tracker.stores.pages import PageStore

    library = MasterLibrary.from_runtime(runtime, verify=False)
    found = library.verify(repair=False, thorough=True)
    masters = library.index.storage.memory()
    pages = PageIndex.from_runtime(runtime).storage.memory()
    everywhere = " (all primaries)" if runtime.settings.redis_cluster else ""
    print(f"MongoDB: {found.mongo_count} master documents, library version {found.mongo_version}")
    if found.index_version is None and found.action == "ok":
        print("index:   empty: nothing ingested yet (`tracker ingest` or `tracker demo`)")
    else:
        print(
            f"index:   {_or_none(found.index_count)} master documents, library version "
            f"{_or_none(found.index_version)}\n         {_memory(masters)}"
            f"{_per_document(masters, found.mongo_count)}"
        )
    print(f"pages:   {count(PageStore(runtime.db).count())} stored; their index {_memory(pages)}")
    print(
        f"Redis:   used_memory {used_memory(runtime.redis):,} bytes{everywhere}: the whole "
        "server, its own baseline and every other key included"
    )
    _print_layout(library.index.layout, runtime.settings, found.mongo_count)
    _print_tables(library.index.tables)
    if found.action != "ok":
        print(f"they differ ({found.reason}): run `tracker index verify` to repair the index")
        return 1
    return 0


#: A per-document figure is shown once the records are most of the index's bytes: while most
#: buckets hold a posting or two, Redis's bytes per key are most of it, and dividing them by
#: the documents predicts nothing about a larger library (9 chapters: ~11 KB each; 100,000
#: chapters: ~780 bytes each, see bench/README.md).
MEANINGFUL_PAYLOAD = 0.5


def _memory(memory: StorageMemory) -> str:
    if not memory.keys:
        return "no keys"
    how = "" if memory.exact else f", estimated from {memory.sampled:,} keys"
    return f"{memory.keys:,} keys, {memory.bytes:,} bytes (MEMORY USAGE{how})"


def _per_document(memory: StorageMemory, documents: int) -> str:
    if not documents or not memory.keys:
        return ""
    if 1.0 - memory.overhead < MEANINGFUL_PAYLOAD:
        return (
            f"; per document: not meaningful yet ({memory.overhead:.0%} of it is Redis's "
            "bytes per key, which a larger library shares; about 780 bytes a chapter at "
            "100,000)"
        )
    return f"; {memory.bytes / documents:,.0f} bytes per document"


def _print_layout(layout: IndexLayout, settings: Settings, masters: int) -> None:
    """The index's layout, and what to do when the library has outgrown it (or when the
    settings ask for another)."""
    from tracker.index.layout import IndexLayout

    print(f"layout:  {layout}")
    wanted = IndexLayout.configured(settings)
    called_for = IndexLayout.for_library(masters)
    if called_for.bucket_bits > layout.bucket_bits or called_for.wide_ids > layout.wide_ids:
        print(
            f"a library of {masters:,} masters calls for {called_for}: set index_bucket_bits = "
            f"{called_for.bucket_bits}{', index_wide_ids = true' if called_for.wide_ids else ''}"
            " and run `tracker index rebuild`"
        )
    elif wanted != layout:
        print(f"the settings ask for {wanted}: `tracker index rebuild` applies it")


def _print_tables(tables: Tables) -> None:
    """Each table's buckets, grown by splits since the index was built; past ``DEEP`` splits
    a lookup's chance matches grow (the checks are as long as when it was built), so a
    rebuild with more bits is advised."""
    print(f"tables:  {tables}")
    deep = [  # a SimHash record holds its whole fingerprint: no chance match
        name for name, (base, depth) in tables.bits.items() if depth - base > DEEP and name != "sh"
    ]
    if deep:
        print(
            f"tables {', '.join(deep)} have split {DEEP}+ times since the index was built: set "
            "index_bucket_bits higher and run `tracker index rebuild`"
        )


DEEP = 4


def verify(args: argparse.Namespace, runtime: Runtime) -> int:
    """Compare, and repair: finish journaled changes or rebuild the index; the page index too."""
    from tracker.matching.library import MasterLibrary
    from tracker.matching.rematch import Rematcher

    library = MasterLibrary.from_runtime(runtime, verify=False)
    found = library.verify(thorough=True)
    described = {
        "ok": "the index agrees with MongoDB",
        "finished": f"finished half-done changes ({found.finished} masters); the index agrees",
        "rebuilt": f"rebuilt the index ({found.reason})",
    }[found.action]
    print(
        f"{described}: {found.mongo_count} master documents, library version {found.mongo_version}"
    )
    refiled = Rematcher(runtime, library).verify_page_index()
    if refiled:
        print(f"filed {refiled} page(s) missing from the page index")
    return 0


def rebuild(args: argparse.Namespace, runtime: Runtime) -> int:
    from tracker.index.layout import IndexLayout
    from tracker.matching.library import MasterLibrary
    from tracker.matching.rematch import Rematcher

    library = MasterLibrary.from_runtime(runtime, verify=False)
    layout = IndexLayout.configured(runtime.settings)
    count = library.rebuild_index(layout=layout)
    pages = Rematcher(runtime, library).rebuild_page_index()
    print(f"re-indexed {count} master documents and {pages} stored pages from MongoDB ({layout})")
    return 0


def delete(args: argparse.Namespace, runtime: Runtime) -> int:
    if not args.doc_ids:
        print("tracker index delete: give one or more DOC_IDs")
        return 2
    from tracker.matching.library import MasterLibrary

    library = MasterLibrary.from_runtime(runtime)
    deleted, missing = [], []
    for doc_id in args.doc_ids:
        (deleted if library.delete(doc_id) else missing).append(doc_id)
    days = runtime.settings.master_trash_days
    kept = (
        f"; kept for {days} days (`tracker index restore-deleted ID…`)"
        if days
        else "; not kept (master_trash_days = 0)"
    )
    print(
        f"deleted {len(deleted)} document(s)"
        + (f": {', '.join(deleted)}{kept}" if deleted else "")
        + (f"; not found: {', '.join(missing)}" if missing else "")
    )
    return 1 if missing else 0


def restore_deleted(args: argparse.Namespace, runtime: Runtime) -> int:
    """Ingest again the newest kept version of the masters asked for; with nothing asked, list
    what is kept (read only)."""
    from tracker.matching.library import MasterLibrary
    from tracker.stores.master_trash import MasterTrash

    trash = MasterTrash(runtime.db, runtime.settings.master_trash_days)
    if not (args.doc_ids or args.work or args.all):
        rows = [
            (d["doc_id"], d["title"], d["reason"], when(d["removed_at"]), when(d["expires_at"]))
            for d in trash.newest(everything=True)
        ]
        if not rows:
            print("no deleted or replaced masters are kept")
            return 0
        print_table(("doc_id", "title", "removed", "at", "kept until"), rows, args.wide)
        print("restore them with `tracker index restore-deleted DOC_ID…`, --work W or --all")
        return 0
    kept = list(trash.newest(args.doc_ids, args.work, args.all))
    missing = sorted(set(args.doc_ids) - {d["doc_id"] for d in kept})
    if kept:
        library = MasterLibrary.from_runtime(runtime)
        summary = library.restore(kept)
        restored = ", ".join(d["doc_id"] for d in kept[:10]) + (" …" if len(kept) > 10 else "")
        print(
            f"restored {len(kept)} document(s): {restored} ({summary.added} back, "
            f"{summary.replaced} replacing the version stored, {summary.unchanged} the same)"
        )
        if summary.replaced:
            print("the versions they replaced are kept in turn (`tracker index restore-deleted`)")
    if missing or not kept:
        print(f"nothing kept for: {', '.join(missing) or args.work or 'the library'}")
        return 1
    return 0


def migrate_ids(args: argparse.Namespace, runtime: Runtime) -> int:
    from tracker.matching.library import MasterLibrary
    from tracker.matching.migrate_ids import migrate

    library = MasterLibrary.from_runtime(runtime)
    found = migrate(library, dry_run=args.dry_run)
    for old, new in found.planned[:20]:
        print(f"{old} -> {new}")
    if len(found.planned) > 20:
        print(f"… and {len(found.planned) - 20} more")
    if args.dry_run:
        print(f"{len(found.planned)} master(s) would be re-keyed (--dry-run: nothing changed)")
        return 0
    print(
        f"re-keyed {len(found.planned)} master(s) and the matches, pages, alerts and takedowns "
        "that name them"
        + (f" ({found.resumed} left by a run cut short)" if found.resumed else "")
        + (f"; {found.done_before} re-keyed by earlier runs" if found.done_before else "")
        + ("; nothing left to re-key" if not found.planned else "")
    )
    return 0


def list_works(args: argparse.Namespace, runtime: Runtime) -> int:
    """The works of the library (documents, size, when ingested), or with ``--work`` the
    documents of one; read only, from MongoDB."""
    from tracker.stores.masters import MasterStore

    masters = MasterStore(runtime.read_db)
    if args.work:
        entries = sorted(masters.listing(args.work), key=lambda d: natural_key(d.doc_id))
        if not entries:
            print(f"no work named {args.work!r}: `tracker index list` shows the works")
            return 1
        rows = [(d.doc_id, d.title, count(d.length), when(d.updated_at)) for d in entries]
        print_table(("doc_id", "title", "size", "ingested"), rows, args.wide, ("size",))
        print(held_and_gaps([d.doc_id for d in entries], args.work))
        return 0
    works: dict[str, list] = {}
    for d in masters.listing():
        entry = works.setdefault(d.work, [0, 0, None, None])
        entry[0] += 1
        entry[1] += d.length
        for i, moment, pick in ((2, d.added_at, min), (3, d.updated_at, max)):
            if moment is not None:
                entry[i] = moment if entry[i] is None else pick(entry[i], moment)
    if not works:
        print(f"the master library in database {runtime.settings.mongo_db!r} is empty")
        return 0
    rows = [
        (work, count(n), count(size), when(first), when(last))
        for work, (n, size, first, last) in sorted(works.items())
    ]
    print_table(
        ("work", "documents", "size", "first ingested", "last ingested"),
        rows,
        args.wide,
        ("documents", "size"),
    )
    total = sum(entry[0] for entry in works.values())
    print(
        f"{count(len(works))} work(s), {count(total)} document(s); size in characters "
        "after normalisation"
    )
    return 0


def natural_key(doc_id: str) -> tuple:
    """Ids in reading order: ``书/2`` before ``书/10``, ``书/卷1.9`` before ``书/卷2.1``."""
    return tuple(
        (0, int(part), "") if part.isdigit() else (1, 0, part)
        for part in re.split(r"([0-9]+)", doc_id)
        if part
    )


def held_and_gaps(doc_ids: list[str], work: str) -> str:
    """The chapter numbers a work holds and the gaps between them, per volume (ids
    ``WORK/N`` and ``WORK/PREFIX.N``, see :func:`tracker.text.chapters.chapter_key`); other
    pieces counted apart."""
    numbered: dict[str, list[int]] = {}
    others = 0
    for doc_id in doc_ids:
        key = doc_id[len(work) + 1 :] if doc_id.startswith(f"{work}/") else doc_id
        prefix, _, last = key.rpartition(".")
        if last.isdigit():
            numbered.setdefault(prefix, []).append(int(last))
        else:
            others += 1
    lines = []
    for prefix, numbers in sorted(numbered.items(), key=lambda item: natural_key(item[0])):
        held = set(numbers)
        gaps = [n for n in range(min(held), max(held) + 1) if n not in held]
        where = f"{prefix}: " if prefix else ""
        lines.append(
            f"{where}chapters {number_ranges(held)} held"
            + (f"; missing {number_ranges(gaps)}" if gaps else "; no gaps")
        )
    if others:
        lines.append(f"{others} other piece(s) (named parts, titled pieces, articles)")
    return "\n".join(lines)


def _or_none(value: int | None) -> str:
    return "no" if value is None else str(value)


ACTIONS = {
    "list": list_works,
    "stats": stats,
    "verify": verify,
    "rebuild": rebuild,
    "delete": delete,
    "restore-deleted": restore_deleted,
    "migrate-ids": migrate_ids,
}
