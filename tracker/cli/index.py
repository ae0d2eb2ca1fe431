"""``tracker index stats|verify|rebuild`` and ``tracker index delete DOC_ID…``."""

from __future__ import annotations

import argparse

from tracker.config import Settings
from tracker.library import MasterLibrary
from tracker.runtime import Runtime


def register(commands: argparse._SubParsersAction) -> None:
    parser = commands.add_parser(
        "index",
        help="compare the Redis index with MongoDB (stats), repair it (verify), rebuild it, "
        "or delete master documents",
    )
    parser.add_argument("action", choices=("stats", "verify", "rebuild", "delete"))
    parser.add_argument("doc_ids", nargs="*", metavar="DOC_ID", help="for delete")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace, settings: Settings) -> int:
    runtime = Runtime(settings)
    try:
        return ACTIONS[args.action](args, runtime)
    finally:
        runtime.close()


def stats(args: argparse.Namespace, runtime: Runtime) -> int:
    """Both sides, read only: MongoDB's library version and masters, the index's."""
    library = MasterLibrary.from_runtime(runtime, verify=False)
    found = library.verify(repair=False)
    memory = runtime.redis.info("memory")["used_memory"]
    per_doc = memory / found.mongo_count if found.mongo_count else 0
    print(
        f"MongoDB: {found.mongo_count} master documents, library version {found.mongo_version}\n"
        f"index:   {_or_none(found.index_count)} master documents, library version "
        f"{_or_none(found.index_version)}; Redis used_memory {memory:,} bytes "
        f"({per_doc:,.0f} bytes per document)"
    )
    if found.action != "ok":
        print(f"they differ ({found.reason}): run `tracker index verify` to repair the index")
        return 1
    return 0


def verify(args: argparse.Namespace, runtime: Runtime) -> int:
    """Compare, and repair: finish pending changes or rebuild the index; the page index too."""
    from tracker.rematch import Rematcher

    library = MasterLibrary.from_runtime(runtime, verify=False)
    found = library.verify()
    described = {
        "ok": "the index agrees with MongoDB",
        "finished": f"finished {found.finished} pending change(s); the index agrees",
        "rebuilt": f"rebuilt the index ({found.reason})",
    }[found.action]
    print(
        f"{described}: {found.mongo_count} master documents, library version "
        f"{found.mongo_version}"
    )
    refiled = Rematcher(runtime, library).verify_page_index()
    if refiled:
        print(f"filed {refiled} page(s) missing from the page index")
    return 0


def rebuild(args: argparse.Namespace, runtime: Runtime) -> int:
    from tracker.rematch import Rematcher

    library = MasterLibrary.from_runtime(runtime, verify=False)
    count = library.rebuild_index()
    pages = Rematcher(runtime, library).rebuild_page_index()
    print(f"re-indexed {count} master documents and {pages} stored pages from MongoDB")
    return 0


def delete(args: argparse.Namespace, runtime: Runtime) -> int:
    if not args.doc_ids:
        print("tracker index delete: give one or more DOC_IDs")
        return 2
    library = MasterLibrary.from_runtime(runtime)
    missing = [doc_id for doc_id in args.doc_ids if not library.delete(doc_id)]
    print(
        f"deleted {len(args.doc_ids) - len(missing)} document(s)"
        + (f"; not found: {', '.join(missing)}" if missing else "")
    )
    return 1 if missing else 0


def _or_none(value: int | None) -> str:
    return "no" if value is None else str(value)


ACTIONS = {"stats": stats, "verify": verify, "rebuild": rebuild, "delete": delete}
