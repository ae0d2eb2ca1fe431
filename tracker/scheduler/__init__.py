"""The scheduler: keeps the master library current, the crawls going and the reports coming.

:mod:`~tracker.scheduler.service` runs APScheduler with its job store in MongoDB under a Redis
lock, :mod:`~tracker.scheduler.jobs` defines the jobs (pull, crawl:SITE, report),
:mod:`~tracker.scheduler.sources` the master sources they pull from, :mod:`~.runs` the ledger
of runs and :mod:`~.lock` the expiring locks.
"""

from tracker.scheduler.jobs import JobContext, JobSpec, SiteSchedule, job_plan
from tracker.scheduler.service import SchedulerService, StepScheduler, list_jobs

__all__ = [
    "JobContext",
    "JobSpec",
    "SchedulerService",
    "SiteSchedule",
    "StepScheduler",
    "job_plan",
    "list_jobs",
]
