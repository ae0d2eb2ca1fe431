"""The scheduler's jobs in MongoDB (``scheduler_jobs``): each job's next run time and schedule.

One document per job, ``{_id: job id, next_run_time: UTC timestamp or null, trigger: repr of
its trigger}``, plain values only. The jobs themselves are made from the configuration at every
start (:class:`tracker.scheduler.service.RunTimeJobStore`), which reads these back to keep a
job's next run time when its schedule did not change, so runs missed while no scheduler was up
are not forgotten. Nothing is pickled: APScheduler's own MongoDB job store unpickles what it
reads, and a document forged in the database would run code in the scheduler.
"""

from __future__ import annotations

from dataclasses import dataclass

from pymongo.database import Database


@dataclass(frozen=True)
class JobTime:
    """A job's stored next run time (a UTC timestamp; None: paused) and schedule (None: not
    recorded, as stored by an older version)."""

    next_run_time: float | None
    trigger: str | None


class JobTimeStore:
    def __init__(self, db: Database) -> None:
        self.jobs = db["scheduler_jobs"]

    def all(self) -> dict[str, JobTime]:
        """Every stored job's time, by job id (a handful of documents: a small scan). A
        pickled ``job_state``, as APScheduler's own store writes, is never read."""
        return {
            doc["_id"]: JobTime(doc.get("next_run_time"), doc.get("trigger"))
            for doc in self.jobs.find({}, {"job_state": 0})
        }

    def save(self, job_id: str, time: JobTime) -> None:
        self.jobs.replace_one(
            {"_id": job_id},
            {"next_run_time": time.next_run_time, "trigger": time.trigger},
            upsert=True,
        )

    def remove(self, job_id: str) -> None:
        self.jobs.delete_one({"_id": job_id})

    def clear(self) -> None:
        self.jobs.delete_many({})
