"""``tracker schedule``: an APScheduler 3 service whose jobs live in MongoDB, run by whichever
scheduler process holds the scheduler lock in Redis.

* The jobs are made from the configuration at every start; only each job's next run time (and
  its schedule, to tell a changed one) is kept in MongoDB (collection ``scheduler_jobs``), as
  plain values, so the next run times survive restarts (:class:`RunTimeJobStore`); the ledger
  (:mod:`~tracker.stores.job_runs`) keeps their past runs. APScheduler's own MongoDB job store
  pickles whole jobs and unpickles what it reads back: a document forged in the database would
  run code in the scheduler.
* Misfires: runs missed while no scheduler was up are coalesced into one, and a run more than
  ``misfire_grace_s`` late is skipped, logged and recorded as ``missed`` (the report job then
  catches up the missing days on its next run). A run interrupted by a crash is recorded as
  ``interrupted`` and run again as soon as a scheduler acts.
* Exactly one scheduler acts at a time: it holds an expiring lock in Redis
  (:mod:`tracker.servers.locks`), and a second instance waits for it instead of starting its
  own scheduler. A scheduler that loses the lock pauses at once and goes back to waiting.
"""

from __future__ import annotations

import logging
import threading
import uuid
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from apscheduler.events import (
    EVENT_JOB_ERROR,
    EVENT_JOB_MAX_INSTANCES,
    EVENT_JOB_MISSED,
    JobEvent,
)
from apscheduler.executors.base import BaseExecutor
from apscheduler.executors.pool import ThreadPoolExecutor
from apscheduler.job import Job
from apscheduler.jobstores.memory import MemoryJobStore
from apscheduler.schedulers.background import BackgroundScheduler
from apscheduler.schedulers.base import BaseScheduler
from apscheduler.util import datetime_to_utc_timestamp, utc_timestamp_to_datetime
from pymongo.errors import PyMongoError
from redis.exceptions import RedisError

from tracker.config import Settings
from tracker.scheduler import jobs
from tracker.servers.locks import HeldLock
from tracker.servers.runtime import Runtime
from tracker.stores import job_runs as runs
from tracker.stores.job_times import JobTime, JobTimeStore

log = logging.getLogger(__name__)


class RunTimeJobStore(MemoryJobStore):
    """Jobs in memory; their next run time and schedule (``repr`` of the trigger) written
    through to MongoDB (:class:`~tracker.stores.job_times.JobTimeStore`), read back with
    :meth:`stored` when the jobs are made again at start."""

    def __init__(self, times: JobTimeStore) -> None:
        super().__init__()
        self.times = times

    def stored(self) -> dict[str, JobTime]:
        return self.times.all()

    def add_job(self, job: Job) -> None:
        super().add_job(job)
        self._save(job)

    def update_job(self, job: Job) -> None:
        super().update_job(job)
        self._save(job)

    def remove_job(self, job_id: str) -> None:
        super().remove_job(job_id)
        self.times.remove(job_id)

    def remove_all_jobs(self) -> None:
        super().remove_all_jobs()
        self.times.clear()

    def shutdown(self) -> None:
        """Forget the jobs in memory only: the run times stay for the next start."""
        MemoryJobStore.remove_all_jobs(self)

    def _save(self, job: Job) -> None:
        self.times.save(
            job.id, JobTime(datetime_to_utc_timestamp(job.next_run_time), repr(job.trigger))
        )


def _with_run_time(job: Job, run_times: list[datetime]) -> Job:
    """A copy of ``job`` that passes its (coalesced) scheduled time as ``scheduled_at``."""
    clone = Job.__new__(Job)
    clone.__setstate__(job.__getstate__())
    clone._scheduler = job._scheduler
    clone._jobstore_alias = job._jobstore_alias
    clone.kwargs = {**job.kwargs, "scheduled_at": run_times[-1]}
    return clone


def with_run_time(executor_class: type[BaseExecutor]) -> type[BaseExecutor]:
    """``executor_class`` made to tell each run its scheduled time (APScheduler 3 does not),
    which names the run in the ledger and picks the day a report covers."""

    class Executor(executor_class):  # type: ignore[misc, valid-type]
        def _do_submit_job(self, job: Job, run_times: list[datetime]) -> None:
            super()._do_submit_job(_with_run_time(job, run_times), run_times)

    Executor.__name__ = f"RunTime{executor_class.__name__}"
    return Executor


RunTimeThreadPoolExecutor = with_run_time(ThreadPoolExecutor)


class StepScheduler(BaseScheduler):
    """A scheduler that runs due jobs only when :meth:`run_due` is called, in the caller's
    thread: deterministic, for tests driven by a fake clock and for one-off inspection."""

    def shutdown(self, wait: bool = True) -> None:
        super().shutdown(wait)

    def wakeup(self) -> None:
        pass

    def run_due(self) -> float | None:
        """Submit the jobs due now; returns the seconds until the next one is due."""
        return self._process_jobs()


class SchedulerService:
    """The jobs of ``settings`` on an APScheduler, acting only while it holds the lock."""

    def __init__(
        self,
        settings: Settings,
        runtime: Runtime | None = None,
        *,
        scheduler_class: type[BaseScheduler] = BackgroundScheduler,
        executor: BaseExecutor | None = None,
        clock: Callable[[], datetime] | None = None,
    ) -> None:
        self.settings = settings
        self.runtime = runtime or Runtime(settings)
        self.scheduler_class = scheduler_class
        self.executor = executor
        self.id = uuid.uuid4().hex
        self._connect(clock)
        self.scheduler: BaseScheduler | None = None
        self.store: RunTimeJobStore  # made with the scheduler, when it starts acting
        self.acting = threading.Event()  # set while this scheduler holds the lock and runs jobs

    def _connect(self, clock: Callable[[], datetime] | None) -> None:
        """The lock and the jobs' context, on the runtime's current connections."""
        self.leader = HeldLock(
            self.runtime.redis,
            lock_name(self.settings),
            self.settings.scheduler_lock_s,
            on_lost=self._lock_lost,
        )
        self.context = jobs.JobContext(self.settings, self.runtime, clock=clock, leader=self.leader)

    @property
    def clock(self) -> Callable[[], datetime]:
        return self.context.clock

    # ------------------------------------------------------------------------- life cycle

    def start(self, wait: threading.Event | None = None) -> bool:
        """Take the lock (waiting until ``wait`` is set, when given) and start scheduling.
        Returns False when the lock was not taken."""
        if not self.leader.acquire(wait=wait):
            return False
        try:
            jobs.activate(self.id, self.context)
            self.scheduler = self._build_scheduler()
            self.scheduler.start(paused=True)
            self.sync_jobs()
            self.rerun_interrupted()
            self.scheduler.resume()
        except BaseException:
            self.halt()
            raise
        self.acting.set()
        log.info("acting scheduler %s: %s", self.leader.token, ", ".join(self.context.plan))
        return True

    def halt(self, wait: bool = True) -> None:
        """Stop scheduling (waiting for running jobs when ``wait``) and release the lock."""
        self.acting.clear()
        if self.scheduler is not None and self.scheduler.running:
            self.scheduler.shutdown(wait=wait)
        self.scheduler = None
        jobs.deactivate(self.id)
        self.leader.release()

    def serve(self, stop: threading.Event, poll: float = 1.0) -> None:
        """Run until ``stop`` is set: wait for the lock, act while it is held, repeat. While
        acting, look every lock period for runs left ``running`` by a dead process."""
        self.context.stop = stop
        period = max(self.leader.ttl, poll)
        try:
            while not stop.is_set():
                try:
                    if not self.start(wait=stop):
                        break
                    while not stop.wait(period) and not self.leader.lost.is_set():
                        self.rerun_interrupted()  # runs whose dead holder's lock expired
                except (PyMongoError, RedisError) as exc:  # a server away: retry, unattended
                    log.error("scheduler stopped acting (%s); retrying in %.0fs", exc, period)
                    self.halt(wait=True)
                    if self.runtime.recover(pause=0):  # an embedded server came back elsewhere
                        self._connect(self.context.clock)
                        self.context.stop = stop
                    stop.wait(period)
                    continue
                if self.leader.lost.is_set():
                    log.error("lost the scheduler lock; waiting to take it again")
                self.halt(wait=True)
        finally:
            self.halt(wait=True)

    def run_due(self) -> float | None:
        """With a :class:`StepScheduler`: run the jobs due now (see its ``run_due``)."""
        if not isinstance(self.scheduler, StepScheduler):
            raise TypeError("run_due needs a started StepScheduler")
        return self.scheduler.run_due()

    # ------------------------------------------------------------------------------ jobs

    def _build_scheduler(self) -> BaseScheduler:
        self.store = RunTimeJobStore(JobTimeStore(self.runtime.db))
        scheduler = self.scheduler_class(
            jobstores={"default": self.store},
            executors={
                "default": self.executor
                or RunTimeThreadPoolExecutor(max(1, self.settings.max_running_jobs))
            },
            job_defaults={
                "coalesce": True,
                "misfire_grace_time": self.settings.misfire_grace_s,
                "max_instances": 1,
            },
            timezone=self.settings.schedule_timezone,
        )
        scheduler.add_listener(
            self._on_event, EVENT_JOB_MISSED | EVENT_JOB_MAX_INSTANCES | EVENT_JOB_ERROR
        )
        return scheduler

    def sync_jobs(self) -> None:
        """Make the configured jobs. A job whose schedule did not change keeps its stored next
        run time, so runs missed while down are not forgotten; jobs no longer configured are
        dropped from the store."""
        scheduler = self.scheduler
        assert scheduler is not None
        plan = {name: spec for name, spec in self.context.plan.items() if spec.trigger}
        stored = self.store.stored()
        for name in sorted(set(stored) - set(plan)):
            log.info("removing job %s: no longer configured", name)
            self.store.times.remove(name)
        for name, spec in plan.items():
            arguments: dict[str, Any] = {
                "func": jobs.run_scheduled,
                "args": (self.id, name),
                "kwargs": {},
                "name": spec.description,
            }
            known = stored.get(name)
            if known is not None and known.trigger in (None, repr(spec.trigger)):
                run_time = known.next_run_time
                arguments["next_run_time"] = (
                    utc_timestamp_to_datetime(run_time) if run_time is not None else None
                )
            elif spec.kind == "pull" and known is None:
                arguments["next_run_time"] = self.clock()  # a new deployment pulls at once
            scheduler.add_job(trigger=spec.trigger, id=name, replace_existing=True, **arguments)

    def rerun_interrupted(self) -> None:
        """Runs left ``running`` by a scheduler that died: mark them and run them again now."""
        scheduler = self.scheduler
        assert scheduler is not None
        now = self.clock()
        for run in self.context.runs.running():
            name = run["job"]
            if self.context.job_lock(name).holder_now() is not None:
                continue  # really running, e.g. started by `tracker run-job`
            log.warning("run %s was interrupted; running %s again", run["_id"], name)
            self.context.runs.finish(run["_id"], runs.INTERRUPTED, finished_at=now)
            spec = self.context.plan.get(name)
            if spec is not None and spec.trigger is not None:
                scheduler.modify_job(name, next_run_time=now)
            elif spec is not None:  # run by other jobs only: once, now
                scheduler.add_job(
                    jobs.run_scheduled, args=(self.id, name), id=f"{name}:again", name=name
                )

    def _on_event(self, event: JobEvent) -> None:
        scheduled = getattr(event, "scheduled_run_time", None)
        if event.code == EVENT_JOB_MISSED:
            log.warning(
                "job %s missed its run at %s (more than %ss late): skipped",
                event.job_id,
                scheduled,
                self.settings.misfire_grace_s,
            )
            self.context.runs.record(
                event.job_id,
                runs.MISSED,
                scheduled_at=scheduled,
                at=self.clock(),
                error=f"more than {self.settings.misfire_grace_s}s late",
            )
        elif event.code == EVENT_JOB_MAX_INSTANCES:
            log.warning(
                "job %s is still running; its run at %s is skipped", event.job_id, scheduled
            )
        else:
            log.error("job %s raised %s", event.job_id, getattr(event, "exception", None))

    def _lock_lost(self) -> None:
        scheduler = self.scheduler
        if scheduler is not None and scheduler.running:
            scheduler.pause()  # submit nothing more; the serve loop then halts


def lock_name(settings: Settings) -> str:
    return f"{settings.redis_prefix}scheduler:lock"


def list_jobs(settings: Settings, runtime: Runtime) -> list[dict[str, Any]]:
    """Each configured job with its schedule, next run (from the stored run times when
    scheduled) and last run (from the ledger), read without taking the scheduler lock."""
    context = jobs.JobContext(settings, runtime)
    stored = JobTimeStore(runtime.db).all()
    now = datetime.now(UTC)
    rows = []
    for name, spec in context.plan.items():
        known = stored.get(name)
        if spec.trigger is None:
            next_run, scheduled = None, False
        elif known is not None and known.next_run_time is not None:
            next_run, scheduled = utc_timestamp_to_datetime(known.next_run_time), True
        else:
            next_run, scheduled = spec.trigger.get_next_fire_time(None, now), False
        rows.append(
            {
                "job": name,
                "description": spec.description,
                "schedule": spec.schedule,
                "next_run": next_run,
                "scheduled": scheduled,
                "last_run": context.runs.last(name),
            }
        )
    return rows
