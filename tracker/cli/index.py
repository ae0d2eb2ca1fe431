"""``tracker index stats|verify|rebuild``, ``tracker index list [--work W]`` and
``tracker index delete DOC_ID…``."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from tracker.cli._output import print_table
from tracker.config import Settings
from tracker.formats import count, when
from tracker.servers.connect import connect

if TYPE_CHECKING:
    from tracker.index.layout import IndexLayout, Tables
    from tracker.index.storage import StorageMemory
    from tracker.servers.runtime import Runtime


def register(commands: argparse._SubParsersAction) -> None:
    from tracker.cli import actions_help

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
                "(--work W: the documents of W)",
                "stats": "MongoDB's masters and library version beside the index's, its layout "
                "and memory (read only)",
                "verify": "repair the index: finish half-done changes, or rebuild it; file "
                "stored pages missing from the page index",
                "rebuild": "rebuild the index and the page index from MongoDB, in the layout "
                "the settings ask for",
                "delete": "delete the master documents DOC_ID… (their matches are closed)",
            }
        ),
    )
    parser.add_argument(
        "action",
        choices=ACTIONS,
        metavar="ACTION",
        help="list, stats, verify, rebuild or delete (below)",
    )
    parser.add_argument("doc_ids", nargs="*", default=[], metavar="DOC_ID", help="for delete")
    parser.add_argument("--work", metavar="W", help="for list: the documents of work W")
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
    missing = [doc_id for doc_id in args.doc_ids if not library.delete(doc_id)]
    print(
        f"deleted {len(args.doc_ids) - len(missing)} document(s)"
        + (f"; not found: {', '.join(missing)}" if missing else "")
    )
    return 1 if missing else 0


def list_works(args: argparse.Namespace, runtime: Runtime) -> int:
    """The works of the library (documents, size, when ingested), or with ``--work`` the
    documents of one; read only, from MongoDB."""
    from tracker.stores.masters import MasterStore

    masters = MasterStore(runtime.read_db)
    if args.work:
        rows = [
            (d.doc_id, d.title, count(d.length), when(d.updated_at))
            for d in masters.listing(args.work)
        ]
        if not rows:
            print(f"no work named {args.work!r}: `tracker index list` shows the works")
            return 1
        print_table(("doc_id", "title", "size", "ingested"), rows, args.wide, ("size",))
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


def _or_none(value: int | None) -> str:
    return "no" if value is None else str(value)


ACTIONS = {
    "list": list_works,
    "stats": stats,
    "verify": verify,
    "rebuild": rebuild,
    "delete": delete,
}
