"""``tracker report [--date YYYY-MM-DD] [--format json|csv|html|notices] [--out PATH]``: the
infringements seen on one UTC day.

Reading a report changes nothing stored: mirror groups are made when pages are crawled, and the
figures trends are drawn from are stored by the scheduler's report job (``tracker run-job
report``). JSON and CSV go to standard output unless
``--out`` is given; HTML is always written to a file (``<data_dir>/reports/report-DATE.html`` by
default) and takedown notices to a folder (``<data_dir>/reports/notices-DATE/``, one
``notice-SITE.txt`` per site), whose paths are printed. A summary line goes to standard error.
"""

from __future__ import annotations

import argparse
import re
import sys
from datetime import UTC, date, datetime
from pathlib import Path

from tracker.config import Settings

FORMATS = ("json", "csv", "html", "notices")


def register(commands: argparse._SubParsersAction) -> None:
    parser = commands.add_parser("report", help="report the infringing pages seen on one day")
    parser.add_argument(
        "--date",
        type=parse_day,
        default=None,
        metavar="YYYY-MM-DD",
        help="the UTC day to report (default: today)",
    )
    parser.add_argument(
        "--format", choices=FORMATS, default="json", help="output format (default: json)"
    )
    parser.add_argument(
        "--out", metavar="PATH", help="write the report to PATH (for notices: a folder)"
    )
    parser.set_defaults(func=run)


def parse_day(value: str) -> date:
    """``YYYY-MM-DD`` as a date; an argparse type error otherwise."""
    try:
        if not re.fullmatch(r"\d{4}-\d{2}-\d{2}", value):
            raise ValueError
        return date.fromisoformat(value)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"invalid date {value!r}: expected YYYY-MM-DD, e.g. 2026-11-22"
        ) from None


def run(args: argparse.Namespace, settings: Settings) -> int:
    from tracker.cli._servers import connect
    from tracker.enforcement.compliance import Compliance
    from tracker.reports import summary_line, to_csv, to_html, to_json
    from tracker.reports.build import build_report
    from tracker.reports.daily import write_notices

    renderers = {"json": to_json, "csv": to_csv, "html": to_html}
    day = args.date or datetime.now(UTC).date()
    runtime = connect(settings, redis=False)
    try:
        report = build_report(  # settled data: mongo_read_preference
            runtime.read_db, day, compliance=Compliance.of(settings)
        )
    finally:
        runtime.close()
    if args.format == "notices":
        folder = Path(args.out).expanduser() if args.out else None
        folder = folder or settings.data_dir / "reports" / f"notices-{report['date']}"
        for path in write_notices(report, folder):
            print(path)
        print(summary_line(report), file=sys.stderr)
        return 0
    text = renderers[args.format](report)
    out = args.out
    if out is None and args.format == "html":
        out = settings.data_dir / "reports" / f"report-{report['date']}.html"
    if out is None:
        sys.stdout.write(text if text.endswith("\n") else text + "\n")
    else:
        path = Path(out).expanduser()
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
        print(path)
    print(summary_line(report), file=sys.stderr)
    return 0
