"""``tracker report [--date YYYY-MM-DD] [--format json|csv|html|notices] [--out PATH]``: the
infringements seen on one UTC day.

Reading a report changes nothing stored: mirror groups are made when pages are crawled, and the
figures trends are drawn from are stored by the scheduler's report job (``tracker run-job
report``).

Where the report goes is one rule, ``--out``: ``--out PATH`` writes any format to PATH (notices:
a folder of ``notice-SITE.txt``, one per site), ``--out -`` to standard output (notices: each
after a line naming its file). Without it, the text formats (JSON, CSV) go to standard output
and the page formats to files of the data directory: HTML to
``<data_dir>/reports/report-DATE.html``, notices to ``<data_dir>/reports/notices-DATE/``. A
file's path is printed; a summary line goes to standard error.

The notice drafts are, for each site of the report, the notice ``tracker notices send --site
SITE --dry-run`` prints: the same URLs (not noticed within ``notice_repeat_days``, unless
``--resend``), text and evidence. The CSV starts with a UTF-8 byte-order mark (``--no-bom``:
without), the HTML's times are in ``display_timezone``.
"""

from __future__ import annotations

import argparse
import re
import sys
from datetime import UTC, date, datetime
from pathlib import Path
from typing import Any

from tracker.cli import settings_help
from tracker.config import Settings

FORMATS = ("json", "csv", "html", "notices")


#: The settings a report reads, for its --help: the HTML form's times, the takedown figures'
#: non-compliance, and what the notice drafts say.
SETTINGS = (
    "display_timezone",
    "noncompliant_below",
    "noncompliant_after_days",
    "notice_repeat_days",
    "notice_language",
    "notice_attachments",
    "notice_sender",
    "rights_holder_name",
    "rights_holder_contact",
    "rights_holder_address",
    "tsa_url",
)


def register(commands: argparse._SubParsersAction) -> None:
    parser = commands.add_parser(
        "report",
        help="report the infringing pages seen on one day",
        description="Report the infringing pages seen on one UTC day: per work, site and page "
        "the masters copied, with evidence, mirror groups and trends. Reading a report changes "
        "nothing stored. Where it goes: --out PATH for any format (notices: a folder), --out - "
        "for standard output; without --out, json and csv go to standard output, html to "
        "<data_dir>/reports/report-DATE.html and notices to <data_dir>/reports/notices-DATE/ "
        "(the paths printed). A summary line goes to standard error.",
        epilog=settings_help(*SETTINGS),
    )
    parser.add_argument(
        "--date",
        type=parse_day,
        default=None,
        metavar="YYYY-MM-DD",
        help="the UTC day to report (default: today)",
    )
    parser.add_argument(
        "--format",
        choices=FORMATS,
        default="json",
        help="json (default), csv, html, or notices: a takedown notice draft per site",
    )
    parser.add_argument(
        "--out",
        metavar="PATH",
        help="write the report to PATH (notices: a folder), or - for standard output "
        "(default: json and csv to standard output, html and notices to the data directory's "
        "reports folder)",
    )
    parser.add_argument(
        "--no-bom",
        action="store_true",
        help="csv: no UTF-8 byte-order mark at the start (by default one is written, so that "
        "Excel reads the Chinese text as UTF-8)",
    )
    parser.add_argument(
        "--resend",
        action="store_true",
        help="notices: include the URLs noticed within notice_repeat_days, as `notices send "
        "--resend` would",
    )
    parser.add_argument(
        "--demo",
        action="store_true",
        help="report the demo's data (`tracker demo`: its own database), not your library's; "
        "html to demo-report-DATE.html",
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
    from tracker.enforcement.compliance import Compliance
    from tracker.reports import summary_line, to_csv, to_html, to_json
    from tracker.reports.build import build_report
    from tracker.servers.connect import connect

    renderers = {
        "json": to_json,
        "csv": lambda report: to_csv(report, bom=not args.no_bom),
        "html": lambda report: to_html(report, settings.display_timezone),
    }
    day = args.date or datetime.now(UTC).date()
    name = "report"
    if args.demo:
        from tracker.cli.demo import apart

        settings, name = apart(settings), "demo-report"
    runtime = connect(settings, redis=False)
    try:
        report = build_report(  # settled data: mongo_read_preference
            runtime.read_db, day, compliance=Compliance.of(settings)
        )
        if args.format == "notices":
            _notices(report, args, runtime.read_db, settings)
    finally:
        runtime.close()
    if args.format != "notices":
        text = renderers[args.format](report)
        text = text if text.endswith("\n") else text + "\n"  # the same bytes wherever it goes
        out = args.out
        if out is None and args.format == "html":
            out = settings.data_dir / "reports" / f"{name}-{report['date']}.html"
        if out is None or out == "-":
            sys.stdout.write(text)
        else:
            path = Path(out).expanduser()
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text, encoding="utf-8")
            print(path)
    print(summary_line(report), file=sys.stderr)
    return 0


def _notices(report: dict, args: argparse.Namespace, db: Any, settings: Settings) -> None:
    """The notice drafts (those ``notices send`` would send now for the report's sites): files
    of a folder (their paths printed), or with ``-`` each on standard output after a line
    naming it."""
    from tracker.reports.daily import notice_files, write_notices

    if args.out == "-":
        for name, text in notice_files(report, db, settings, resend=args.resend).items():
            sys.stdout.write(f"==> {name} <==\n{text}" + ("" if text.endswith("\n") else "\n"))
        return
    folder = Path(args.out).expanduser() if args.out else None
    folder = folder or settings.data_dir / "reports" / f"notices-{report['date']}"
    for path in write_notices(report, folder, db, settings, resend=args.resend):
        print(path)
