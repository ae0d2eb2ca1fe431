"""The scheduler: keeps the master library current, the crawls going and the reports coming.

:mod:`~tracker.scheduler.service` runs APScheduler under a Redis lock
(:mod:`tracker.servers.locks`), its jobs' next run times kept in MongoDB
(:mod:`tracker.stores.job_times`); :mod:`~tracker.scheduler.jobs` defines the jobs (pull,
rematch, crawl:SITE, report) and records each run in the ledger
(:mod:`tracker.stores.job_runs`); :mod:`~tracker.scheduler.sources` the master sources they
pull from.
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
