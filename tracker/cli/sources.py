"""``tracker sources import FILE|URL``: read a Legado book-source file (see
:mod:`tracker.booksources`); register each source's site as a discovered candidate, store the
sources that can be run. ``tracker sources list [--json]``: the imported sources, with their
site, whether each runs and why not (reading only).

Exit status of ``import``: 0 every source read, 2 when the file cannot be read or a source in
it is bad (each named with its line; the good ones are stored all the same).
"""

from __future__ import annotations

import argparse
import json
import sys
import urllib.error
import urllib.request
from datetime import UTC, datetime
from pathlib import Path

from tracker.config import Settings

#: A source file larger than this is refused (the largest public collections are ~30 MB).
MAX_FILE_BYTES = 64 * 1024 * 1024
FETCH_TIMEOUT_S = 30


def register(commands: argparse._SubParsersAction) -> None:
    parser = commands.add_parser(
        "sources",
        help="import Legado (阅读) book-source files; list the sources",
        description="Book sources name pirate sites and the rules that read them: imported, "
        "each source's site is registered as a discovered candidate, and the sources that need "
        "no script are run by `tracker discover` for every work of the library.",
    )
    actions = parser.add_subparsers(dest="action", required=True, metavar="ACTION")
    load = actions.add_parser(
        "import",
        help="read a book-source file (a JSON array of sources, or one source)",
        description="Exit status: 0 every source read, 2 the file or a source in it is bad "
        "(named with its line; the good ones are stored).",
    )
    load.add_argument("file", metavar="FILE|URL", help="a JSON file, or an http(s) URL serving one")
    load.add_argument("--json", action="store_true", help="print what was imported as JSON")
    load.set_defaults(func=run_import)
    listing = actions.add_parser("list", help="the imported sources (reading only)")
    listing.add_argument("--json", action="store_true", help="print them as JSON")
    listing.set_defaults(func=run_list)


def read_file(where: str) -> str:
    """The text of a local file or an http(s) URL (OSError naming what went wrong)."""
    if where.startswith(("http://", "https://")):
        try:
            with urllib.request.urlopen(where, timeout=FETCH_TIMEOUT_S) as answer:
                data = answer.read(MAX_FILE_BYTES + 1)
        except (urllib.error.URLError, TimeoutError, ValueError) as exc:
            raise OSError(f"{where}: {getattr(exc, 'reason', exc)}") from None
    else:
        path = Path(where)
        if path.stat().st_size > MAX_FILE_BYTES:
            raise OSError(f"{where}: larger than {MAX_FILE_BYTES // 2**20} MB")
        data = path.read_bytes()
    if len(data) > MAX_FILE_BYTES:
        raise OSError(f"{where}: larger than {MAX_FILE_BYTES // 2**20} MB")
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise OSError(f"{where}: not UTF-8 text ({exc.reason} at byte {exc.start})") from None


def run_import(args: argparse.Namespace, settings: Settings) -> int:
    from tracker.booksources.source import SourceFileError, read_sources
    from tracker.servers.connect import connect
    from tracker.stores.book_sources import BookSourceStore
    from tracker.stores.discovery import SiteRegistry

    try:
        file = read_sources(read_file(args.file))
    except FileNotFoundError:
        print(f"tracker: error: {args.file}: no such file", file=sys.stderr)
        return 2
    except (OSError, SourceFileError) as exc:
        print(f"tracker: error: {args.file}: {exc}", file=sys.stderr)
        return 2
    now = datetime.now(UTC)
    runtime = connect(settings, redis=False)
    imported, new_sites = [], []
    try:
        store, registry = BookSourceStore(runtime.db), SiteRegistry(runtime.db)
        for source in file.sources:
            summary = source.summary()
            summary["name"] = store.save(summary, source.raw, args.file, now)
            if registry.named(source.host, summary["name"], now):
                new_sites.append(source.host)
            imported.append({**summary, "line": source.line})
    finally:
        runtime.close()
    if args.json:
        print(
            json.dumps(
                {"sources": imported, "bad": file.bad, "new_sites": new_sites}, ensure_ascii=False
            )
        )
    else:
        for entry in imported:
            state = "runs" if entry["runnable"] else f"not run: {entry['why_not']}"
            print(f"{entry['name']} ({entry['host']}): {state}")
        runnable = sum(1 for entry in imported if entry["runnable"])
        print(
            f"{len(imported)} source(s) imported, {runnable} runnable; {len(new_sites)} new "
            f"site(s) registered; {len(file.bad)} bad"
        )
    for bad in file.bad:
        name = f" {bad['name']!r}" if bad["name"] else ""
        where = f"{args.file}: source{name} at line {bad['line']}"
        print(f"tracker: error: {where}: {bad['error']}", file=sys.stderr)
    return 2 if file.bad else 0


def run_list(args: argparse.Namespace, settings: Settings) -> int:
    from tracker.cli._output import print_listing
    from tracker.servers.connect import connect
    from tracker.stores.book_sources import BookSourceStore

    runtime = connect(settings, redis=False)
    try:
        docs = BookSourceStore(runtime.read_db).all()
    finally:
        runtime.close()
    print_listing(
        docs,
        args.json,
        "no book source has been imported yet (tracker sources import FILE)",
        ["source", "host", "runs", "why not", "last run"],
        lambda d: (
            d["_id"], d.get("host", ""), "yes" if d.get("runnable") else "no",
            d.get("why_not", ""), _last_run(d.get("last_run")),
        ),
    )  # fmt: skip
    return 0


def _last_run(run: dict | None) -> str:
    if not run:
        return ""
    return (
        f"{run.get('books', 0)} book(s), {run.get('chapters', 0)} chapters, "
        f"{run.get('copies', 0)} copies"
    )
