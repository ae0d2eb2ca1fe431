"""``tracker index stats|verify|rebuild``, ``tracker index list [--work W]`` and
``tracker index delete DOC_ID…``."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from tracker.cli._output import print_table
from tracker.cli._servers import connect
from tracker.config import Settings
from tracker.formats import count, when

if TYPE_CHECKING:
    from tracker.index.layout import IndexLayout, Tables
    from tracker.servers.runtime import Runtime


def register(commands: argparse._SubParsersAction) -> None:
    parser = commands.add_parser(
        "index",
        help="list the master library's works (list), compare the Redis index with MongoDB "
        "(stats), repair it (verify), rebuild it, or delete master documents",
    )
    parser.add_argument("action", choices=("list", "stats", "verify", "rebuild", "delete"))
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
    """Both sides, read only: MongoDB's library version and masters, the index's."""
    from tracker.matching.library import MasterLibrary
    from tracker.servers.redis_cluster import used_memory

    library = MasterLibrary.from_runtime(runtime, verify=False)
    found = library.verify(repair=False, thorough=True)
    memory = used_memory(runtime.redis)
    per_doc = memory / found.mongo_count if found.mongo_count else 0
    print(
        f"MongoDB: {found.mongo_count} master documents, library version {found.mongo_version}\n"
        f"index:   {_or_none(found.index_count)} master documents, library version "
        f"{_or_none(found.index_version)}; Redis used_memory {memory:,} bytes "
        f"{'(all primaries) ' if runtime.settings.redis_cluster else ''}"
        f"({per_doc:,.0f} bytes per document)"
    )
    _print_layout(library.index.layout, runtime.settings, found.mongo_count)
    _print_tables(library.index.tables)
    if found.action != "ok":
        print(f"they differ ({found.reason}): run `tracker index verify` to repair the index")
        return 1
    return 0


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
    masters = runtime.read_db["masters"]
    fields = {"work": 1, "title": 1, "length": 1, "added_at": 1, "updated_at": 1}
    alive = {"deleted": {"$ne": True}}
    if args.work:
        rows = [
            (d["_id"], d.get("title", ""), count(d.get("length", 0)), when(d.get("updated_at")))
            for d in masters.find({**alive, "work": args.work}, fields).sort("n", 1)
        ]
        if not rows:
            print(f"no work named {args.work!r}: `tracker index list` shows the works")
            return 1
        print_table(("doc_id", "title", "size", "ingested"), rows, args.wide, ("size",))
        return 0
    works: dict[str, list] = {}
    for d in masters.find(alive, fields):
        entry = works.setdefault(d.get("work", ""), [0, 0, None, None])
        entry[0] += 1
        entry[1] += int(d.get("length", 0) or 0)
        for i, key, pick in ((2, "added_at", min), (3, "updated_at", max)):
            if d.get(key) is not None:
                entry[i] = d[key] if entry[i] is None else pick(entry[i], d[key])
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
