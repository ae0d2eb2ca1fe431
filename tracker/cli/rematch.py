"""``tracker rematch``: match the stored pages again where the library changed since they were
matched (masters added or replaced), and finish the pages whose matching failed (see
:mod:`tracker.matching.rematch`). The scheduler runs it after every pull that changed the
library."""

from __future__ import annotations

import argparse
import json

from tracker.config import Settings


def register(commands: argparse._SubParsersAction) -> None:
    parser = commands.add_parser(
        "rematch",
        help="match stored pages against masters added since they were crawled; "
        "finish pages whose matching failed",
        description="Match the stored pages again where the library changed since they were "
        "matched (masters added or replaced: only the pages sharing anchors with them are "
        "checked), and finish the pages whose matching failed. The matches found count as "
        "found today. The scheduler runs it after every pull that changed the library. Prints "
        "a summary (--json: as JSON); exit status 0 done, 2 error.",
    )
    parser.add_argument("--json", action="store_true", help="print the summary as JSON")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace, settings: Settings) -> int:
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    from tracker.matching.rematch import Rematcher
    from tracker.servers.connect import connect

    console = Console(stderr=True)
    runtime = connect(settings)
    try:
        with Progress(
            TextColumn("rematch"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            console=console,
            disable=not console.is_terminal,
        ) as progress:
            task = progress.add_task("rematch", total=None)
            summary = Rematcher(runtime).run(
                progress=lambda done, total: progress.update(task, completed=done, total=total)
            )
    finally:
        runtime.close()
    if args.json:
        print(json.dumps(summary.to_dict(), ensure_ascii=False))
        return 0
    print(
        f"rematched {summary.checked} page(s) against library version "
        f"{summary.library_version}: {summary.failed_pages} whose matching had failed, "
        f"{summary.candidate_pages} sharing anchors with {summary.changed_masters} master(s) "
        f"added or changed since version {summary.since_version}; "
        f"{summary.new_matches} new match(es) on {summary.matched_pages} page(s), "
        f"{summary.closed_matches} closed, in {summary.seconds:.1f}s"
    )
    return 0
