"""``tracker ingest PATH…``: import master documents (books and articles)."""

from __future__ import annotations

import argparse
import time

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from tracker.config import Settings
from tracker.library import MasterLibrary
from tracker.readers import iter_files, read_documents
from tracker.runtime import Runtime


def register(commands: argparse._SubParsersAction) -> None:
    parser = commands.add_parser(
        "ingest", help="import .txt books and .jsonl articles into the master library"
    )
    parser.add_argument("paths", nargs="+", metavar="PATH", help="files or directories")
    parser.add_argument("--work", help="work name for .txt books (default: the file name)")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace, settings: Settings) -> int:
    console = Console(stderr=True)
    files = list(iter_files(args.paths))
    if not files:
        console.print("no .txt or .jsonl files found")
        return 2
    documents = [doc for path in files for doc in read_documents(path)]  # fail before writing
    if args.work:
        from dataclasses import replace

        documents = [replace(doc, work=args.work) for doc in documents]
    runtime = Runtime(settings)
    library = MasterLibrary.from_runtime(runtime)
    started = time.perf_counter()
    with Progress(
        TextColumn("ingest"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=console,
        disable=not console.is_terminal,
    ) as progress:
        task = progress.add_task("ingest", total=len(documents))
        summary = library.ingest(documents, progress=lambda k: progress.advance(task, k))
    elapsed = time.perf_counter() - started
    print(
        f"ingested {summary.added + summary.replaced} documents from {len(files)} file(s): "
        f"{summary.added} new, {summary.replaced} replaced, {len(summary.works)} work(s), "
        f"{summary.characters:,} characters in {elapsed:.1f}s"
    )
    if summary.skipped_empty:
        print(
            f"skipped {len(summary.skipped_empty)} empty document(s): "
            + ", ".join(summary.skipped_empty[:10])
        )
    return 0
