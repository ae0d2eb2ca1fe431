"""``tracker ingest PATH…``: import master documents (books and articles).

Inputs are read as they are stored, a batch at a time, so memory does not grow with them
(a file of ten million chapters loads like one of ten). Every problem is reported (``tracker:
error: FILE:LINE: reason``) as it is met, unsupported files found in directories in the
summary, and the good documents are stored; ``--strict`` first reads everything without
keeping it and stores nothing when anything was wrong. Both servers are checked first, so an
unreachable one stores nothing. An ingest cut short (Ctrl-C, ``kill -9``) is finished by running
it again: what it stored is left as it is (the same text, work and title), the batch it was
writing is finished by the library (:mod:`tracker.matching.library`). Large inputs are
fingerprinted in worker processes (``--workers``), with progress on standard error. Exit
status: 0 all stored, 1 stored but some inputs refused, 2 nothing stored.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING

from tracker.cli import add_size_limit, fail, settings_help, size_limit
from tracker.config import Settings
from tracker.reading.readers import SUPPORTED, Reading, iter_masters, master_files
from tracker.servers.connect import connect

PARTIAL = 1  # exit status: stored, but some inputs were refused
MAX_LISTED = 10  # unsupported files and warnings named in the summary
BULK_BYTES = 8 << 20  # inputs this large are fingerprinted in worker processes
PROGRESS_EVERY_S = 10.0  # a progress line this often when standard error is not a terminal


#: The settings an ingest reads, for its --help (the index's layout: when it builds the index).
SETTINGS = ("max_input_mb", "master_trash_days", "index_bucket_bits", "index_wide_ids")


def register(commands: argparse._SubParsersAction) -> None:
    parser = commands.add_parser(
        "ingest",
        help="import .txt books and .jsonl articles into the master library",
        description="Import .txt books (split into chapters) and .jsonl articles. "
        "A book's chapter is stored as WORK/KEY, KEY from its own heading, not from "
        "where it stands in the file: 第六回 -> WORK/6, 第12章 -> WORK/12, "
        "卷二 第一章 -> WORK/卷2.1, 楔子 -> WORK/楔子, 番外 一 -> WORK/番外一, "
        "a piece without a number -> its title. So a file of new chapters adds them; "
        "a chapter is replaced only when the same key comes with new text (the former "
        "text is kept for master_trash_days: `tracker index restore-deleted`), and an "
        "unchanged one is left as it is. A .jsonl record's id is its own. Exit status: "
        "0 all stored, 1 stored but some inputs refused (listed), 2 nothing stored.",
        epilog=settings_help(*SETTINGS),
    )
    parser.add_argument("paths", nargs="+", metavar="PATH", help="files or directories")
    parser.add_argument(
        "--work",
        help="work name for .txt books (default: the book's 《title》 line, else the file name)",
    )
    parser.add_argument(
        "--strict", action="store_true", help="store nothing when any file or line is bad"
    )
    parser.add_argument(
        "--replace-work",
        action="store_true",
        help="replace each work read as a whole: its stored chapters this ingest does not bring "
        "are deleted (listed, and kept for master_trash_days)",
    )
    parser.add_argument(
        "--workers",
        type=int,
        metavar="N",
        help="fingerprint in N worker processes (default: one per CPU, at most 4, for inputs "
        "over 8 MB; 0: in this process)",
    )
    parser.add_argument(
        "--batch",
        type=int,
        metavar="N",
        help="documents stored together: one bulk write each (default 1,000 with workers, 200 "
        "without)",
    )
    parser.add_argument(
        "--progress",
        type=float,
        default=PROGRESS_EVERY_S,
        metavar="S",
        help="when standard error is not a terminal, a progress line every S seconds (10)",
    )
    add_size_limit(parser, "a .txt book or a .jsonl line")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace, settings: Settings) -> int:
    max_bytes = size_limit(args, settings)
    reading = Reading()
    files = master_files(args.paths, reading)
    if not files:
        if len(reading.problems) == 1:
            return fail(reading.problems[0])
        if reading.problems:
            _report_problems(reading)
            return 2
        found = ", ".join(str(p) for p in reading.skipped[:MAX_LISTED])
        return fail(
            f"no {' or '.join(SUPPORTED)} files in {', '.join(args.paths)}"
            + (f" (found only {found})" if found else "")
        )
    if args.strict:
        checked = Reading(problems=reading.problems)
        read = sum(1 for _ in iter_masters(files, checked, args.work, max_bytes))
        _report_problems(checked)
        if checked.problem_count or not read:
            return fail(f"nothing stored (--strict): {checked.problem_count} problem(s) above")
    runtime = connect(settings)  # both servers answer before the first write
    try:
        summary, elapsed = _ingest(runtime, reading, files, args, max_bytes)
    finally:
        runtime.close()
    _report_problems(reading)
    _report_warnings(reading, summary)
    _report_removed(summary, settings)
    stored = summary.added + summary.replaced
    if not stored and not summary.unchanged:
        return 2
    print(
        f"ingested {stored} documents from {len(reading.files)} file(s): {summary.added} new, "
        f"{summary.replaced} replaced, {summary.unchanged} unchanged, {_works(summary)} "
        f"work(s), {summary.characters:,} characters in {elapsed:.1f}s"
    )
    if summary.empty:
        more = f" and {summary.empty - MAX_LISTED} more" if summary.empty > MAX_LISTED else ""
        print(
            f"skipped {summary.empty} empty document(s): "
            + ", ".join(summary.skipped_empty[:MAX_LISTED])
            + more
        )
    if reading.problem_count:
        print(
            f"tracker: {reading.problem_count} problem(s) above: those files or lines were not "
            "stored; fix them and ingest them again",
            file=sys.stderr,
        )
        return PARTIAL
    return 0


def _report_removed(summary: IngestSummary, settings: Settings) -> None:
    """What the ingest took out of the library: the chapters it replaced (new text under the
    same id) and, with ``--replace-work``, those it deleted; and whether they are kept."""
    kept = (
        f"the former versions are kept for {settings.master_trash_days} days "
        "(`tracker index restore-deleted ID…`)"
        if settings.master_trash_days
        else "not kept (master_trash_days = 0)"
    )
    if summary.replaced:
        print(
            f"replaced {summary.replaced} document(s) with new text: "
            + _listed(summary.replaced_ids, summary.replaced)
            + f"; {kept}"
        )
    if summary.removed:
        print(
            f"deleted {len(summary.removed)} document(s) the new files do not hold "
            f"(--replace-work): {_listed(summary.removed, len(summary.removed))}; {kept}"
        )


def _listed(ids: list[str], total: int) -> str:
    more = f" and {total - MAX_LISTED} more" if total > MAX_LISTED else ""
    return ", ".join(ids[:MAX_LISTED]) + more


def _works(summary: IngestSummary) -> str:
    from tracker.matching.library import MAX_KEPT

    return f"{len(summary.works):,}" + ("+" if len(summary.works) >= MAX_KEPT else "")


def _report_problems(reading: Reading) -> None:
    """Print the problems met since the last call (and forget them: a bad input of millions of
    lines must not fill memory)."""
    for problem in reading.problems:
        print(f"tracker: error: {problem}", file=sys.stderr)
    reading.problem_count += len(reading.problems)
    reading.problems.clear()


def _report_warnings(reading: Reading, summary: IngestSummary) -> None:
    warnings = list(reading.warnings)
    warnings += [
        f"{later}: id {doc_id} again (first in {first}): the later one is stored"
        for doc_id, first, later in summary.again
    ]
    warnings += [
        f"{doc_id}: the title changed under the same key, from {before!r} to {after!r}: "
        "stored as the same chapter (if it is another one, its heading's number is wrong)"
        for doc_id, before, after in summary.retitled
    ]
    more = len(warnings) - MAX_LISTED + max(0, summary.repeated - len(summary.again))
    for warning in warnings[:MAX_LISTED]:
        print(f"tracker: warning: {warning}", file=sys.stderr)
    if more > 0:
        print(f"tracker: warning: … and {more} more", file=sys.stderr)
    if reading.skipped:
        kinds = sorted({p.suffix.lower() or "(no extension)" for p in reading.skipped})
        names = ", ".join(str(p) for p in reading.skipped[:MAX_LISTED])
        more_files = (
            f" and {len(reading.skipped) - MAX_LISTED} more"
            if len(reading.skipped) > MAX_LISTED
            else ""
        )
        print(
            f"skipped {len(reading.skipped)} unsupported file(s) ({', '.join(kinds)}; only "
            f"{' and '.join(SUPPORTED)} are read): {names}{more_files}",
            file=sys.stderr,
        )


if TYPE_CHECKING:
    from tracker.matching.library import IngestSummary
    from tracker.servers.runtime import Runtime


def _ingest(
    runtime: Runtime, reading: Reading, files: list[Path], args: argparse.Namespace, max_bytes: int
) -> tuple[IngestSummary, float]:
    from tracker.matching.library import MasterLibrary

    library = MasterLibrary.from_runtime(runtime)
    total = sum(path.stat().st_size for path in files)
    workers = args.workers
    if workers is None:
        workers = min(4, os.cpu_count() or 1) if total >= BULK_BYTES else 0
    documents = iter_masters(files, reading, args.work, max_bytes)
    started = time.perf_counter()
    with _Progress(reading, total, args.progress) as progress:
        summary = library.ingest(
            documents,
            progress=progress.advance,
            workers=max(0, workers),
            batch=max(1, args.batch) if args.batch else None,
            track_ids=args.replace_work,
        )
    if args.replace_work and not reading.problem_count and not reading.problems:
        summary.removed = library.replace_works(summary)
    elif args.replace_work:
        print(
            "tracker: --replace-work: nothing deleted, as some inputs could not be read",
            file=sys.stderr,
        )
    return summary, time.perf_counter() - started


class _Progress:
    """Progress of an ingest, by bytes read: a bar on a terminal, else a line every ``every``
    seconds of a long run. Problems met are printed as they come."""

    def __init__(self, reading: Reading, total: int, every: float = PROGRESS_EVERY_S) -> None:
        self.reading, self.total, self.every = reading, max(total, 1), every
        self.documents = 0
        self.started = self.shown = time.perf_counter()
        self.bar = None

    def __enter__(self) -> _Progress:
        if sys.stderr.isatty():
            from rich.console import Console
            from rich.progress import BarColumn, Progress, TextColumn, TimeRemainingColumn

            self.bar = Progress(
                TextColumn("ingest"),
                BarColumn(),
                TextColumn("{task.fields[documents]:,} documents"),
                TimeRemainingColumn(),
                console=Console(stderr=True),
                transient=True,
            )
            self.bar.start()
            self.task = self.bar.add_task("ingest", total=self.total, documents=0)
        return self

    def advance(self, documents: int) -> None:
        self.documents += documents
        if self.reading.problems:
            _report_problems(self.reading)
        now = time.perf_counter()
        if self.bar is not None:
            self.bar.update(self.task, completed=self.reading.bytes_read, documents=self.documents)
        elif now - self.shown >= self.every:
            self.shown = now
            rate = self.documents / (now - self.started)
            share = min(1.0, self.reading.bytes_read / self.total)
            print(
                f"tracker ingest: {self.documents:,} documents ({share:.0%} of the input), "
                f"{rate:,.0f}/s",
                file=sys.stderr,
                flush=True,
            )

    def __exit__(self, *exc: object) -> None:
        if self.bar is not None:
            self.bar.stop()
