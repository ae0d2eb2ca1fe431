"""``tracker run-job NAME``: run one scheduler job now (``pull``, ``report``, ``crawl:SITE``).

The run is recorded in the job ledger like a scheduled one and takes the job's own lock, so it
never overlaps the same job started by the scheduler. Prints the run's record as JSON, and only
that (warnings and errors go to standard error; ``-v`` shows the job's progress too); exits 1
when the job failed or was skipped.
"""

from __future__ import annotations

import argparse
import json

from tracker.config import Settings


def register(commands: argparse._SubParsersAction) -> None:
    parser = commands.add_parser(
        "run-job", help="run one scheduler job now: pull, report, takedown or crawl:SITE"
    )
    parser.add_argument("name", metavar="NAME", help="the job (see `tracker schedule --list`)")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace, settings: Settings) -> int:
    from tracker.cli._servers import connect
    from tracker.scheduler.jobs import JobContext
    from tracker.scheduler.runs import OK

    runtime = connect(settings)
    try:
        record = JobContext(settings, runtime).run(args.name)
    finally:
        runtime.close()
    record.pop("traceback", None)  # logged already
    print(json.dumps(record, default=str, ensure_ascii=False, indent=2))
    return 0 if record.get("status") == OK else 1
