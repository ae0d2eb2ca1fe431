"""``tracker ingest PATH…``: import master documents (books and articles).

Every input is read before anything is stored, and every problem is reported at once: each bad
file and line with its reason (``tracker: error: FILE:LINE: reason``), unsupported files found
in directories named in the summary. The good documents are stored (``--strict``: nothing is
stored when anything was wrong); both servers are checked first, so an unreachable one stores
nothing. Exit status: 0 all stored, 1 stored but some inputs refused, 2 nothing stored.
"""

from __future__ import annotations

import argparse
import sys
import time
from typing import TYPE_CHECKING

from tracker.cli import add_size_limit, fail, size_limit
from tracker.config import Settings
from tracker.reading.readers import SUPPORTED, Reading, read_masters
from tracker.servers.connect import connect

PARTIAL = 1  # exit status: stored, but some inputs were refused
MAX_LISTED = 10  # unsupported files and warnings named in the summary


def register(commands: argparse._SubParsersAction) -> None:
    parser = commands.add_parser(
        "ingest",
        help="import .txt books and .jsonl articles into the master library",
        description="Import .txt books (split into chapters) and .jsonl articles. Exit status: "
        "0 all stored, 1 stored but some inputs refused (listed), 2 nothing stored.",
    )
    parser.add_argument("paths", nargs="+", metavar="PATH", help="files or directories")
    parser.add_argument(
        "--work",
        help="work name for .txt books (default: the book's 《title》 line, else the file name)",
    )
    parser.add_argument(
        "--strict", action="store_true", help="store nothing when any file or line is bad"
    )
    add_size_limit(parser, "a .txt book or a .jsonl line")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace, settings: Settings) -> int:
    reading = read_masters(args.paths, args.work, size_limit(args, settings))
    if not reading.documents and not reading.problems:
        found = ", ".join(str(p) for p in reading.skipped[:MAX_LISTED])
        return fail(
            f"no {' or '.join(SUPPORTED)} files in {', '.join(args.paths)}"
            + (f" (found only {found})" if found else "")
        )
    _report_reading(reading)
    if not reading.documents:
        return 2
    if reading.problems and args.strict:
        return fail(f"nothing stored (--strict): {len(reading.problems)} problem(s) above")
    runtime = connect(settings)  # both servers answer before the first write
    try:
        summary, elapsed = _ingest(runtime, reading)
    finally:
        runtime.close()
    print(
        f"ingested {summary.added + summary.replaced} documents from {len(reading.files)} "
        f"file(s): {summary.added} new, {summary.replaced} replaced, {len(summary.works)} "
        f"work(s), {summary.characters:,} characters in {elapsed:.1f}s"
    )
    if summary.skipped_empty:
        print(
            f"skipped {len(summary.skipped_empty)} empty document(s): "
            + ", ".join(summary.skipped_empty[:MAX_LISTED])
        )
    if reading.problems:
        print(
            f"tracker: {len(reading.problems)} problem(s) above: those files or lines were not "
            "stored; fix them and ingest them again",
            file=sys.stderr,
        )
        return PARTIAL
    return 0


def _report_reading(reading: Reading) -> None:
    for problem in reading.problems:
        print(f"tracker: error: {problem}", file=sys.stderr)
    for warning in reading.warnings[:MAX_LISTED]:
        print(f"tracker: warning: {warning}", file=sys.stderr)
    if len(reading.warnings) > MAX_LISTED:
        print(f"tracker: warning: … and {len(reading.warnings) - MAX_LISTED} more", file=sys.stderr)
    if reading.skipped:
        kinds = sorted({p.suffix.lower() or "(no extension)" for p in reading.skipped})
        names = ", ".join(str(p) for p in reading.skipped[:MAX_LISTED])
        more = (
            f" and {len(reading.skipped) - MAX_LISTED} more"
            if len(reading.skipped) > MAX_LISTED
            else ""
        )
        print(
            f"skipped {len(reading.skipped)} unsupported file(s) ({', '.join(kinds)}; only "
            f"{' and '.join(SUPPORTED)} are read): {names}{more}",
            file=sys.stderr,
        )


if TYPE_CHECKING:
    from tracker.matching.library import IngestSummary
    from tracker.servers.runtime import Runtime


def _ingest(runtime: Runtime, reading: Reading) -> tuple[IngestSummary, float]:
    from tracker.matching.library import MasterLibrary

    library = MasterLibrary.from_runtime(runtime)
    started = time.perf_counter()
    if not sys.stderr.isatty():
        return library.ingest(reading.documents), time.perf_counter() - started
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    with Progress(
        TextColumn("ingest"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=Console(stderr=True),
    ) as progress:
        task = progress.add_task("ingest", total=len(reading.documents))
        summary = library.ingest(reading.documents, progress=lambda k: progress.advance(task, k))
    return summary, time.perf_counter() - started
