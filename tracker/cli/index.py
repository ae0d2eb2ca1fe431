"""``tracker index rebuild|stats`` and ``tracker index delete DOC_ID…``."""

from __future__ import annotations

import argparse

from tracker.config import Settings
from tracker.library import MasterLibrary
from tracker.runtime import Runtime


def register(commands: argparse._SubParsersAction) -> None:
    parser = commands.add_parser(
        "index",
        help="rebuild the Redis index from MongoDB, show its size, or delete master documents",
    )
    parser.add_argument("action", choices=("rebuild", "stats", "delete"))
    parser.add_argument("doc_ids", nargs="*", metavar="DOC_ID", help="for delete")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace, settings: Settings) -> int:
    runtime = Runtime(settings)
    library = MasterLibrary.from_runtime(runtime)
    if args.action == "rebuild":
        count = library.rebuild_index()
        print(f"re-indexed {count} master documents from MongoDB")
    elif args.action == "delete":
        if not args.doc_ids:
            print("tracker index delete: give one or more DOC_IDs")
            return 2
        missing = [doc_id for doc_id in args.doc_ids if not library.delete(doc_id)]
        print(
            f"deleted {len(args.doc_ids) - len(missing)} document(s)"
            + (f"; not found: {', '.join(missing)}" if missing else "")
        )
        return 1 if missing else 0
    else:
        documents = library.store.count()
        memory = runtime.redis.info("memory")["used_memory"]
        per_doc = memory / documents if documents else 0
        print(
            f"{documents} master documents; Redis used_memory {memory:,} bytes "
            f"({per_doc:,.0f} bytes per document)"
        )
    return 0
