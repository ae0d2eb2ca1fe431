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

#: The scheduler's jobs, as ``run-job --help`` and ``schedule --help`` list them.
JOBS = {
    "pull": "ingest the drop folder's new files (drop_dir) and the MongoDB source's new "
    "documents (master_source_collection on master_source_url and master_source_db, in order "
    "of master_source_cursor, pull_batch_size at a time); every pull_cron, and at once on the "
    "first start",
    "rematch": "match the stored pages against the masters added since they were matched "
    "(tracker rematch); after every pull that changed the library and every degraded crawl",
    "report": "store and write the reports of the last ended UTC day (and of up to 7 missed "
    "days) to <data_dir>/reports/; daily at report_time",
    "takedown": "re-fetch every noticed URL and record whether it was taken down, then send "
    "again what is pending (notices, time-stamps, alerts); at takedown_cron",
    "discover": "search for the library's works through search_url and the imported book "
    "sources, check the results, crawl the sites carrying copies, then the watched sites "
    "(discover_max_pages each); at discover_cron (with neither an engine nor a runnable source, "
    "the search is skipped and says why)",
    "crawl:SITE": "crawl the site SITE of the sites setting ([[sites]]); at the site's cron",
}


def jobs_help() -> str:
    """The jobs, one a line, for a command's --help (its epilog)."""
    from tracker.cli import actions_help

    return actions_help(JOBS).replace("actions:", "jobs:", 1)


def register(commands: argparse._SubParsersAction) -> None:
    parser = commands.add_parser(
        "run-job",
        help="run one scheduler job now: pull, rematch, report, takedown, discover or crawl:SITE",
        description="Run one of the scheduler's jobs now, recorded in the job ledger like a "
        "scheduled run and never alongside the same job; prints the run's record as JSON. Exit "
        "status: 0 ok, 1 the job failed or was skipped (running already), 2 error.",
        epilog=jobs_help(),
    )
    parser.add_argument("name", metavar="NAME", help="the job (see `tracker schedule --list`)")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace, settings: Settings) -> int:
    from tracker.scheduler.jobs import JobContext
    from tracker.servers.connect import connect
    from tracker.stores.job_runs import OK

    runtime = connect(settings)
    try:
        record = JobContext(settings, runtime).run(args.name)
    finally:
        runtime.close()
    record.pop("traceback", None)  # logged already
    print(json.dumps(record, default=str, ensure_ascii=False, indent=2))
    return 0 if record.get("status") == OK else 1
