"""``tracker takedown check [--site HOST]``, ``status``, ``delisting --out FILE``: whether the
noticed pages were taken down (see :mod:`tracker.enforcement.takedown`).

``check`` fetches every noticed URL again, stores what changed and prints the figures per site;
``status`` prints them as they stand, reading only; ``delisting`` writes the CSV of the live
URLs of the non-compliant sites (for search engines' delisting requests). ``--json`` prints the
figures as the report's ``takedown`` list. Exit status: 0 done, 1 (``check``) some URLs could
not be fetched (they keep their state), 2 on any error.
"""

from __future__ import annotations

import argparse
import json
import sys
from datetime import UTC, datetime
from pathlib import Path

from tracker.cli import settings_help
from tracker.config import Settings


def register(commands: argparse._SubParsersAction) -> None:
    parser = commands.add_parser(
        "takedown",
        help="check whether noticed pages were taken down; removal rates per site",
        description="Follow every noticed URL to its removal: check fetches each again and "
        "records it removed (gone, or no longer a copy), live or reappeared; status prints each "
        "site's removal rate and median hours to removal; delisting writes the URLs of "
        "non-compliant sites for search engines. Exit status: 0 done, 1 some URLs could not be "
        "fetched (they keep their state), 2 error.",
        epilog=settings_help("takedown_delay_s", "noncompliant_below", "noncompliant_after_days"),
    )
    actions = parser.add_subparsers(dest="action", required=True, metavar="ACTION")
    check = actions.add_parser("check", help="fetch every noticed URL again and classify it")
    check.add_argument("--site", metavar="HOST", help="only this site's URLs")
    check.add_argument("--json", action="store_true", help="print the figures as JSON")
    check.set_defaults(func=run_check)
    status = actions.add_parser("status", help="the figures per site as they stand")
    status.add_argument("--json", action="store_true", help="print the figures as JSON")
    status.set_defaults(func=run_status)
    delisting = actions.add_parser(
        "delisting", help="CSV of the live URLs of the non-compliant sites"
    )
    delisting.add_argument("--out", metavar="FILE", help="write it here (default: stdout)")
    delisting.set_defaults(func=run_delisting)


def run_check(args: argparse.Namespace, settings: Settings) -> int:
    from tracker.enforcement.takedown import check_takedowns
    from tracker.servers.connect import connect

    runtime = connect(settings)
    try:
        summary = check_takedowns(runtime, settings, site=args.site)
        figures = _figures(runtime, settings, args.site)
    finally:
        runtime.close()
    if args.json:
        print(json.dumps({"check": summary.to_dict(), "takedown": figures}, ensure_ascii=False))
    else:
        for url, before, after in summary.changes:
            print(f"{after:8} {url} (was {before})")
        print(
            f"checked {summary.checked} URL(s): {summary.removed} removed, {summary.live} live "
            f"({summary.reappeared} back after removal), {summary.unreachable} unreachable"
        )
        _print(figures)
    if summary.unreachable:
        print(
            f"tracker: {summary.unreachable} URL(s) could not be fetched; they keep their state",
            file=sys.stderr,
        )
        return 1
    return 0


def run_status(args: argparse.Namespace, settings: Settings) -> int:
    from tracker.servers.connect import connect

    runtime = connect(settings, redis=False)
    try:
        figures = _figures(runtime, settings, None, read_db=True)
    finally:
        runtime.close()
    if args.json:
        print(json.dumps({"takedown": figures}, ensure_ascii=False))
    else:
        _print(figures)
    return 0


def run_delisting(args: argparse.Namespace, settings: Settings) -> int:
    from tracker.enforcement.compliance import (
        Compliance,
        delisting_csv,
        delisting_rows,
        takedown_figures,
    )
    from tracker.servers.connect import connect
    from tracker.stores.takedowns import TakedownStore

    runtime = connect(settings, redis=False)
    try:
        docs = TakedownStore(runtime.read_db).all()
    finally:
        runtime.close()
    figures = takedown_figures(docs, datetime.now(UTC), Compliance.of(settings))
    rows = delisting_rows(docs, figures)
    text = delisting_csv(rows)
    flagged = [f["site"] for f in figures if f["noncompliant"]]
    if args.out:
        path = Path(args.out).expanduser()
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
        print(path)
    else:
        sys.stdout.write(text)
    print(
        f"{len(rows)} URL(s) of {len(flagged)} non-compliant site(s)"
        + (f": {', '.join(flagged)}" if flagged else ""),
        file=sys.stderr,
    )
    return 0


def _figures(runtime, settings: Settings, site: str | None, read_db: bool = False) -> list:
    from tracker.enforcement.compliance import Compliance, takedown_figures
    from tracker.stores.takedowns import TakedownStore

    db = runtime.read_db if read_db else runtime.db
    docs = TakedownStore(db).all(site)
    return takedown_figures(docs, datetime.now(UTC), Compliance.of(settings))


def _print(figures: list) -> None:
    from tracker.cli._output import print_table

    if not figures:
        print("no URL has been noticed yet (tracker notices send)")
        return
    print_table(
        ["site", "noticed", "removed", "live", "reappeared", "removal rate", "median h",
         "non-compliant"],
        [
            (
                f["site"], f["noticed"], f["removed"], f["live"], f["reappeared"],
                f"{f['removal_rate']:.2f}",
                "-" if f["median_hours_to_removal"] is None else f["median_hours_to_removal"],
                "yes" if f["noncompliant"] else "no",
            )
            for f in figures
        ],
        numeric=("noticed", "removed", "live", "reappeared", "removal rate", "median h"),
    )  # fmt: skip
