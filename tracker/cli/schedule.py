"""``tracker schedule [--list]``: run the scheduler until SIGINT/SIGTERM, or list its jobs.

The scheduler pulls new master work, crawls each configured site on its cron schedule and
writes the daily report (see :mod:`tracker.scheduler`). Only one scheduler acts at a time; a
second one waits for the first's lock. The first SIGINT/SIGTERM stops it cleanly: no new runs,
running jobs finish (a pull stops after its current batch), the lock is released. A second
signal stops it at once.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
from typing import TYPE_CHECKING, Any

from tracker.cli._signals import graceful_stop
from tracker.config import Settings
from tracker.formats import when
from tracker.servers.services import mask_password

if TYPE_CHECKING:
    from tracker.servers.runtime import Runtime

log = logging.getLogger("tracker.scheduler")


def register(commands: argparse._SubParsersAction) -> None:
    from tracker.cli.run_job import jobs_help

    parser = commands.add_parser(
        "schedule",
        help="run the scheduler: pull, rematch, crawl, report, takedown and discover jobs",
        description="Run the daily work until Ctrl-C or SIGTERM (no new runs, running jobs "
        "finish; a second signal stops at once): the jobs below, each on its own schedule. One "
        "scheduler acts at a time (a Redis lock, expiring scheduler_lock_s after its holder "
        "dies); another waits. Run times live in MongoDB: a run missed while no scheduler was "
        "up is run once at start, one later than misfire_grace_s is skipped and recorded as "
        "missed; at most max_running_jobs run at once (schedule_timezone: the times' zone). "
        "--list shows the jobs with their next and last runs instead. Exit status: 0 stopped "
        "or listed, 2 error (a setting, a server).",
        epilog=jobs_help(),
    )
    parser.add_argument(
        "--list", action="store_true", help="show the jobs with their next and last runs, and exit"
    )
    parser.add_argument("--json", action="store_true", help="with --list: machine-readable output")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace, settings: Settings) -> int:
    from tracker.servers.connect import connect

    runtime = connect(settings)
    try:
        if args.list:
            return _print_jobs(settings, runtime, as_json=args.json)
        return _serve(settings, runtime, verbose=args.verbose)
    finally:
        runtime.close()


def _serve(settings: Settings, runtime: Runtime, verbose: bool) -> int:
    logging.basicConfig(
        force=True,
        level=logging.DEBUG if verbose else logging.WARNING,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    if not verbose:
        for name in ("tracker", "apscheduler"):
            logging.getLogger(name).setLevel(logging.INFO)
    from tracker.scheduler.service import SchedulerService

    service = SchedulerService(settings, runtime)
    log.info(
        "scheduler starting (mongo %s, redis %s)",
        mask_password(runtime.mongo_url),
        mask_password(runtime.redis_url),
    )
    try:
        with graceful_stop(log, "stopping once the running jobs finish") as stop:
            service.serve(stop)
    except KeyboardInterrupt:
        service.leader.release()
        log.warning("stopped at once; running jobs were abandoned")
        logging.shutdown()
        os._exit(130)  # job threads may still run; a second signal means do not wait for them
    log.info("scheduler stopped")
    return 0


def _last_run(run: dict[str, Any] | None) -> str:
    if not run:
        return "never"
    text = f"{run['status']} {when(run.get('started_at'))}"
    if run.get("error"):
        text += f": {str(run['error'])[:80]}"
    return text


def _print_jobs(settings: Settings, runtime: Runtime, as_json: bool) -> int:
    from tracker.scheduler.service import list_jobs, lock_name
    from tracker.servers.locks import HeldLock

    rows = list_jobs(settings, runtime)
    holder = HeldLock.holder(runtime.redis, lock_name(settings))
    if as_json:
        print(json.dumps({"acting_scheduler": holder, "jobs": rows}, default=str, indent=2))
        return 0
    print(f"acting scheduler: {holder}" if holder else "no scheduler is acting")
    table = [("JOB", "SCHEDULE", "NEXT RUN", "LAST RUN")]
    for row in rows:
        next_run = when(row["next_run"]) + ("" if row["scheduled"] else " (not yet scheduled)")
        table.append((row["job"], row["schedule"], next_run, _last_run(row["last_run"])))
    widths = [max(len(line[i]) for line in table) for i in range(3)]
    for line in table:
        print(
            "  ".join(cell.ljust(width) for cell, width in zip(line, widths, strict=False))
            + "  "
            + line[3]
        )
    return 0
