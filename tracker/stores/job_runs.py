"""The ledger of the scheduler's job runs in MongoDB (``job_runs``): what ran, when, and how
it went.

A scheduled run's ``_id`` is ``JOB@SCHEDULED_TIME``, and it is inserted before the job starts, so
one scheduled occurrence can start only once however many schedulers see it due. Manual runs
(``tracker run-job``) get an id of their own. The jobs' next run times are kept apart
(:mod:`tracker.stores.job_times`); this ledger keeps the history that ``tracker schedule
--list`` and the console show. Read newest first through the ``job, started_at`` index, and the
runs cut short by a crash through the ``status`` index.
"""

from __future__ import annotations

import os
import socket
import traceback
import uuid
from datetime import UTC, datetime
from typing import Any

from pymongo import DESCENDING
from pymongo.database import Database
from pymongo.errors import DuplicateKeyError

RUNNING, OK, FAILED, SKIPPED, MISSED, INTERRUPTED = (
    "running",
    "ok",
    "failed",
    "skipped",
    "missed",
    "interrupted",
)


def run_id(job: str, scheduled_at: datetime | None) -> str:
    """``JOB@ISO-TIME`` (UTC) for a scheduled occurrence, ``JOB@manual:…`` otherwise."""
    if scheduled_at is None:
        stamp = datetime.now(UTC).isoformat(timespec="seconds")
        return f"{job}@manual:{stamp}:{uuid.uuid4().hex[:6]}"
    return f"{job}@{scheduled_at.astimezone(UTC).isoformat()}"


class JobRunStore:
    def __init__(self, db: Database) -> None:
        self.runs = db["job_runs"]

    def begin(
        self,
        job: str,
        *,
        trigger: str,
        scheduled_at: datetime | None,
        started_at: datetime,
    ) -> str | None:
        """Record that ``job`` starts; None when this scheduled occurrence already started."""
        record = {
            "_id": run_id(job, scheduled_at),
            "job": job,
            "trigger": trigger,
            "scheduled_at": scheduled_at,
            "started_at": started_at,
            "status": RUNNING,
            "host": socket.gethostname(),
            "pid": os.getpid(),
        }
        try:
            self.runs.insert_one(record)
        except DuplicateKeyError:
            return None
        return record["_id"]

    def finish(
        self,
        run: str,
        status: str,
        *,
        finished_at: datetime,
        result: dict[str, Any] | None = None,
        error: BaseException | str | None = None,
    ) -> None:
        fields: dict[str, Any] = {"status": status, "finished_at": finished_at}
        if result is not None:
            fields["result"] = result
        if isinstance(error, BaseException):
            fields["error"] = f"{type(error).__name__}: {error}"
            fields["traceback"] = "".join(traceback.format_exception(error))[-4000:]
        elif error:
            fields["error"] = error
        self.runs.update_one({"_id": run}, {"$set": fields})

    def record(
        self, job: str, status: str, *, scheduled_at: datetime, at: datetime, error: str
    ) -> None:
        """Record an occurrence that did not run (missed, skipped); kept if already there."""
        self.runs.update_one(
            {"_id": run_id(job, scheduled_at)},
            {
                "$setOnInsert": {
                    "job": job,
                    "trigger": "schedule",
                    "scheduled_at": scheduled_at,
                    "started_at": at,
                    "finished_at": at,
                    "status": status,
                    "error": error,
                }
            },
            upsert=True,
        )

    def get(self, run: str) -> dict[str, Any] | None:
        return self.runs.find_one({"_id": run})

    def last(self, job: str) -> dict[str, Any] | None:
        return self.runs.find_one({"job": job}, sort=[("started_at", DESCENDING)])

    def history(self, job: str, limit: int = 100) -> list[dict[str, Any]]:
        cursor = self.runs.find({"job": job}, sort=[("started_at", DESCENDING)], limit=limit)
        return list(cursor)

    def running(self) -> list[dict[str, Any]]:
        return list(self.runs.find({"status": RUNNING}))
