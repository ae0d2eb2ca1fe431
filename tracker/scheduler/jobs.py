"""The scheduler's jobs, their schedule from the settings, and how one run is carried out.

Jobs, by name:

``pull``
    Ingest new master documents from the drop folder and the MongoDB source
    (:mod:`tracker.scheduler.sources`); on ``pull_cron``. A pull that changed the library runs
    ``rematch`` next.
``rematch``
    Match the stored pages again against the masters added or changed since they were matched,
    and finish the pages whose matching failed (:mod:`tracker.matching.rematch`); after every pull
    that changed the library and every crawl that could not match all its pages.
``crawl:SITE``
    ``scrapy crawl SPIDER -a …`` for one configured site, in a subprocess
    (:func:`tracker.crawling.crawl.run_crawl`), then cluster the pages it matched; on the site's
    cron. A distributed crawl (``TRACKER_DISTRIBUTED``) is posted on the
    :class:`~tracker.crawling.crawl_board.CrawlBoard` while it runs, for ``tracker crawl-worker``
    processes to join.
``takedown``
    Every noticed URL fetched again and classified removed, live or reappeared
    (:mod:`tracker.enforcement.takedown`); then what waits is sent again: notices the SMTP
    server did not take, time-stamps the TSA did not give, alerts the webhook did not take;
    at ``takedown_cron``.
``discover``
    Discovery through the search engine (:mod:`tracker.discovery`): the day's queries, their
    results checked and the sites carrying copies crawled and registered; then every site
    marked watched crawled from its pages with copies, as a configured site is; at
    ``discover_cron``; with no ``search_url``, the imported book sources alone
    (:mod:`tracker.booksources`).
``report``
    The daily report of the last UTC day that has ended (and of any earlier day whose report
    was missed, up to :data:`CATCH_UP_DAYS`), stored in MongoDB and written as HTML, CSV, JSON
    and takedown notices under ``<data_dir>/reports``; at ``report_time``.

:meth:`JobContext.run` carries out one run: it takes the job's own Redis lock (so the same job
never runs twice at once, even started by hand next to the scheduler), records the run in the
ledger (:mod:`tracker.stores.job_runs`) under an id that admits one start per scheduled
occurrence, and records its result or error. The scheduler's persistent job store can only
refer to importable functions, so it stores :func:`run_scheduled` with the service id and the
job name; the service registers its context under that id while it acts.
"""

from __future__ import annotations

import logging
import re
import threading
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta, tzinfo
from pathlib import Path
from typing import Any

from apscheduler.triggers.cron import CronTrigger
from apscheduler.util import astimezone

from tracker.config import ConfigError, Settings, parse_bool
from tracker.crawling.crawl import run_crawl
from tracker.crawling.crawl_board import board_for
from tracker.matching.library import MasterLibrary
from tracker.reports.clustering import PageClusterer
from tracker.reports.daily import publish_report
from tracker.scheduler.sources import configured_sources, pull_all
from tracker.servers.locks import HeldLock
from tracker.servers.runtime import Runtime
from tracker.stores import job_runs as runs
from tracker.stores.crawl_runs import CrawlRunStore
from tracker.stores.reports import ReportStore
from tracker.stores.sources import SourceCursorStore

log = logging.getLogger(__name__)

CATCH_UP_DAYS = 7
SITE_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]*")
SITE_KEYS = {"name", "spider", "cron", "arguments", "settings", "timeout_s"}


@dataclass(frozen=True)
class SiteSchedule:
    """One crawled site: ``scrapy crawl SPIDER -a K=V … -s K=V …`` on a cron schedule."""

    name: str
    spider: str
    cron: str
    arguments: Mapping[str, Any] = field(default_factory=dict)
    settings: Mapping[str, Any] = field(default_factory=dict)
    timeout_s: float = 1800.0

    @classmethod
    def parse(cls, raw: Any, position: int) -> SiteSchedule:
        where = f"sites[{position}]"
        if not isinstance(raw, Mapping):
            raise ConfigError(f"{where}: expected a table with name, spider and cron")
        unknown = sorted(set(raw) - SITE_KEYS)
        if unknown:
            raise ConfigError(f"{where}: unknown key(s) {', '.join(unknown)}")
        cron = raw.get("cron") or _site_file_schedule(raw, where)
        missing = [key for key in ("name", "spider") if not raw.get(key)]
        missing += [] if cron else ["cron"]
        if missing:
            raise ConfigError(f"{where}: missing {', '.join(missing)}")
        name = str(raw["name"])
        if not SITE_NAME.fullmatch(name):
            raise ConfigError(f"{where}: name {name!r} may use only letters, digits, _ . -")
        for key in ("arguments", "settings"):
            value = raw.get(key, {})
            if not isinstance(value, Mapping) or any(
                isinstance(v, Mapping | list) for v in value.values()
            ):
                raise ConfigError(f"{where} ({name}): {key} must be a table of plain values")
        try:
            timeout = float(raw.get("timeout_s", 1800))
        except (TypeError, ValueError):
            raise ConfigError(f"{where} ({name}): timeout_s must be a number") from None
        return cls(
            name=name,
            spider=str(raw["spider"]),
            cron=str(cron),
            arguments=dict(raw.get("arguments", {})),
            settings=dict(raw.get("settings", {})),
            timeout_s=timeout,
        )


def _site_file_schedule(raw: Mapping[str, Any], where: str) -> str | None:
    """A ``site`` spider's crawl file may carry the schedule (``schedule:``) itself."""
    arguments = raw.get("arguments")
    if raw.get("spider") != "site" or not isinstance(arguments, Mapping):
        return None
    if not arguments.get("config"):
        return None
    from spiders.siteconfig import SiteConfigError, load_site_config

    try:
        return load_site_config(str(arguments["config"])).schedule
    except (OSError, SiteConfigError) as exc:
        raise ConfigError(f"{where}: {exc}") from None


@dataclass(frozen=True)
class JobSpec:
    name: str
    kind: str  # "pull" | "rematch" | "crawl" | "report" | "takedown" | "discover"
    schedule: str  # as configured, for people
    trigger: CronTrigger | None  # None: run by other jobs (and by hand), never on a clock
    description: str
    site: SiteSchedule | None = None


def _timezone(name: str) -> tzinfo:
    try:
        return astimezone(name)
    except (ValueError, TypeError, LookupError) as exc:  # ZoneInfoNotFoundError is a KeyError
        raise ConfigError(f"schedule_timezone: unknown time zone {name!r} ({exc})") from None


def _cron(expression: str, timezone: tzinfo, what: str) -> CronTrigger:
    try:
        return CronTrigger.from_crontab(expression, timezone=timezone)
    except (ValueError, KeyError) as exc:
        raise ConfigError(f"{what}: invalid cron expression {expression!r} ({exc})") from None


def _daily(at: str, timezone: tzinfo) -> CronTrigger:
    match = re.fullmatch(r"(\d{1,2}):(\d{2})", at.strip())
    if not match or int(match[1]) > 23 or int(match[2]) > 59:
        raise ConfigError(f"report_time: expected HH:MM, got {at!r}")
    return CronTrigger(hour=int(match[1]), minute=int(match[2]), timezone=timezone)


def job_plan(settings: Settings) -> list[JobSpec]:
    """The jobs ``settings`` ask for, validated (a :class:`ConfigError` names what is wrong)."""
    tz = _timezone(settings.schedule_timezone)
    plan = [
        JobSpec(
            name="pull",
            kind="pull",
            schedule=settings.pull_cron,
            trigger=_cron(settings.pull_cron, tz, "pull_cron"),
            description="pull new master work",
        ),
        JobSpec(
            name="rematch",
            kind="rematch",
            schedule="after a pull that changed the library, or a degraded crawl",
            trigger=None,
            description="match stored pages against new masters, finish failed pages",
        ),
        JobSpec(
            name="report",
            kind="report",
            schedule=f"daily at {settings.report_time} {settings.schedule_timezone}",
            trigger=_daily(settings.report_time, tz),
            description="daily infringement report",
        ),
        JobSpec(
            name="takedown",
            kind="takedown",
            schedule=settings.takedown_cron,
            trigger=_cron(settings.takedown_cron, tz, "takedown_cron"),
            description="check noticed pages were taken down; send what is pending",
        ),
    ]
    plan.append(  # with no search engine, the book sources' runs (tracker sources import)
        JobSpec(
            name="discover",
            kind="discover",
            schedule=settings.discover_cron,
            trigger=_cron(settings.discover_cron, tz, "discover_cron"),
            description="find pirate sites through the search engine and the book sources; "
            "crawl watched sites",
        )
    )
    seen: set[str] = set()
    for position, raw in enumerate(settings.sites):
        site = SiteSchedule.parse(raw, position)
        if site.name in seen:
            raise ConfigError(f"sites[{position}]: site name {site.name!r} is used twice")
        seen.add(site.name)
        plan.append(
            JobSpec(
                name=f"crawl:{site.name}",
                kind="crawl",
                schedule=site.cron,
                trigger=_cron(site.cron, tz, f"sites[{position}] ({site.name})"),
                description=f"crawl {site.name} with the {site.spider} spider",
                site=site,
            )
        )
    return plan


def _why_not(name: str) -> str:
    """Why a job every tracker has, or may have, is not in this one's plan."""
    if name.startswith("crawl:"):
        return f" (no site named {name[6:]!r} in the sites setting: [[sites]] name = …)"
    return ""


class JobFailed(RuntimeError):
    """A job ran but failed; ``result`` keeps what it did."""

    def __init__(self, message: str, result: dict[str, Any]) -> None:
        super().__init__(message)
        self.result = result


class UnknownJob(ConfigError):
    """No job of that name is configured."""


class JobContext:
    """What jobs need: settings, connections, the clock, the stop signal and the ledger."""

    def __init__(
        self,
        settings: Settings,
        runtime: Runtime | None = None,
        *,
        clock: Callable[[], datetime] | None = None,
        stop: threading.Event | None = None,
        leader: HeldLock | None = None,
    ) -> None:
        self.settings = settings
        self.runtime = runtime or Runtime(settings)
        self.plan = {spec.name: spec for spec in job_plan(settings)}
        self.clock = clock or (lambda: datetime.now(UTC))
        self.stop = stop or threading.Event()
        self.leader = leader
        self.runs = runs.JobRunStore(self.runtime.db)

    def spec(self, name: str) -> JobSpec:
        try:
            return self.plan[name]
        except KeyError:
            raise UnknownJob(
                f"no job named {name!r}{_why_not(name)}; the jobs are: {', '.join(self.plan)}"
            ) from None

    def job_lock(self, name: str) -> HeldLock:
        """The lock held while ``name`` runs; it expires like the scheduler lock when its
        holder dies."""
        prefix = self.settings.redis_prefix
        return HeldLock(
            self.runtime.redis, f"{prefix}scheduler:job:{name}", self.settings.scheduler_lock_s
        )

    def run(
        self, name: str, *, trigger: str = "manual", scheduled_at: datetime | None = None
    ) -> dict[str, Any]:
        """Run job ``name`` now, in this thread; returns its ledger record."""
        spec = self.spec(name)
        if trigger == "schedule" and self.leader is not None and not self.leader.owned():
            log.warning("not running %s: this scheduler no longer holds the lock", name)
            return {"job": name, "status": runs.SKIPPED, "error": "scheduler lock lost"}
        lock = self.job_lock(name)
        if not lock.acquire():
            message = f"{name} is already running ({lock.holder_now()})"
            log.warning("not running %s", message)
            if scheduled_at is not None:
                self.runs.record(
                    name, runs.SKIPPED, scheduled_at=scheduled_at, at=self.clock(), error=message
                )
            return {"job": name, "status": runs.SKIPPED, "error": message}
        try:
            run = self.runs.begin(
                name, trigger=trigger, scheduled_at=scheduled_at, started_at=self.clock()
            )
            if run is None:
                log.warning("not running %s: its run at %s has already started", name, scheduled_at)
                return {"job": name, "status": runs.SKIPPED, "error": "already started"}
            log.info("running %s (%s)", name, trigger)
            try:
                result = JOBS[spec.kind](self, spec, scheduled_at or self.clock())
            except JobFailed as exc:
                log.error("job %s failed: %s", name, exc)
                self.runs.finish(
                    run, runs.FAILED, finished_at=self.clock(), result=exc.result, error=str(exc)
                )
            except Exception as exc:
                log.exception("job %s failed", name)
                self.runs.finish(run, runs.FAILED, finished_at=self.clock(), error=exc)
            else:
                log.info("job %s done: %s", name, result)
                self.runs.finish(run, runs.OK, finished_at=self.clock(), result=result)
            return self.runs.get(run) or {"_id": run, "job": name}
        finally:
            lock.release()


# --------------------------------------------------------------------------------------- jobs


def pull_job(context: JobContext, spec: JobSpec, now: datetime) -> dict[str, Any]:
    settings, runtime = context.settings, context.runtime
    library = MasterLibrary.from_runtime(runtime)
    drop, collection = configured_sources(settings, runtime.db)
    try:
        summary = pull_all(
            library,
            SourceCursorStore(runtime.db),
            (drop, collection),
            max(1, settings.pull_batch_size),
            context.stop,
        )
    finally:
        if collection is not None:
            collection.documents.close()
    result = summary.to_dict()
    if summary.added or summary.replaced:
        result["rematch"] = _then_rematch(context, spec.name)
    if summary.failed:
        raise JobFailed("a master source could not be read to its end", result)
    return result


def rematch_job(context: JobContext, spec: JobSpec, now: datetime) -> dict[str, Any]:
    from tracker.matching.rematch import Rematcher  # loads the matching engine: only where used

    summary = Rematcher(context.runtime).run(stop=context.stop)
    return summary.to_dict()


def _then_rematch(context: JobContext, after: str) -> dict[str, Any]:
    """Run ``rematch`` after the job ``after`` (recorded as a run of its own); its record's id
    and status."""
    record = context.run("rematch", trigger=f"after {after}")
    return {"run": record.get("_id"), "status": record.get("status")}


def crawl_job(context: JobContext, spec: JobSpec, now: datetime) -> dict[str, Any]:
    site = spec.site
    assert site is not None
    settings = context.settings
    started = context.clock()
    stamp = started.astimezone(UTC).strftime("%Y%m%dT%H%M%S")
    log_file = Path(settings.data_dir) / "logs" / f"crawl-{site.name}-{stamp}.log"
    log_file.parent.mkdir(parents=True, exist_ok=True)
    # The run's record is found by this id (not posted for the workers: theirs get their own).
    # In a shared crawl the workers record runs of the same spider in the same minutes.
    run_id = f"{site.name}-{stamp}-{uuid.uuid4().hex[:8]}"
    scrapy_settings = dict(site.settings)
    board, posted = None, None
    if parse_bool(scrapy_settings.get("TRACKER_DISTRIBUTED", settings.distributed)):
        scrapy_settings.setdefault("TRACKER_CRAWL_ID", f"{site.name}-{stamp}")
        board = board_for(settings)
        posted = board.post(
            str(scrapy_settings["TRACKER_CRAWL_ID"]),
            site.spider,
            site.arguments,
            scrapy_settings,
            ttl=site.timeout_s,
        )
    try:
        code = run_crawl(
            site.spider,
            settings,
            arguments=site.arguments,
            scrapy_settings={**scrapy_settings, "TRACKER_RUN_ID": run_id},
            log_file=log_file,
            timeout=site.timeout_s,
        )
    except Exception as exc:  # subprocess.TimeoutExpired, OSError
        raise JobFailed(f"crawl did not complete: {exc}", {"log_file": str(log_file)}) from exc
    finally:
        if board is not None and posted is not None:
            board.remove(posted)
            board.close()
    result: dict[str, Any] = {"exit_code": code, "log_file": str(log_file)}
    crawl_runs = CrawlRunStore(context.runtime.db)
    own = crawl_runs.get(run_id)
    runs = [own] if own else []
    if own:
        result["crawl_run"] = run_id
        result["reason"] = own.get("reason")
        result["stats"] = own.get("stats", {})
    if posted is not None:
        crawl_id = result["crawl_id"] = scrapy_settings["TRACKER_CRAWL_ID"]
        # The workers' runs recorded by now (a worker finishes its last requests after the
        # queue ran dry, so a late one may be missing; its degraded pages wait for a rematch).
        workers = [r for r in crawl_runs.of_crawl(crawl_id) if r["_id"] != run_id]
        result["worker_runs"] = [
            {"crawl_run": r["_id"], "worker": r.get("worker"), "pages": r.get("pages", {})}
            for r in workers
        ]
        runs += workers
    clusters = PageClusterer.from_runtime(context.runtime).cluster_seen_since(started)
    result["clustering"] = clusters.to_dict()
    if any(run.get("status") == "degraded" for run in runs):
        result["rematch"] = _then_rematch(context, spec.name)
    if code != 0:
        raise JobFailed(f"scrapy exited with code {code}; see {log_file}", result)
    return result


def report_days(last_reported: date | None, target: date) -> list[date]:
    """The days to report: ``target`` and any day after the last report that was missed."""
    first = target
    if last_reported is not None and last_reported < target:
        first = max(last_reported + timedelta(days=1), target - timedelta(days=CATCH_UP_DAYS - 1))
    return [first + timedelta(days=i) for i in range((target - first).days + 1)]


def report_job(context: JobContext, spec: JobSpec, now: datetime) -> dict[str, Any]:
    runtime = context.runtime
    target = now.astimezone(UTC).date() - timedelta(days=1)  # the last UTC day that has ended
    days = report_days(ReportStore(runtime.db).last_date(before=target), target)
    out_dir = Path(context.settings.data_dir) / "reports"
    written = []
    for day in days:
        report, paths = publish_report(runtime, day, out_dir=out_dir, now=context.clock())
        written.append(
            {
                "date": report["date"],
                "pages": report["summary"]["pages"],
                "new_pages": report["summary"]["new_pages"],
                "files": {fmt: str(path) for fmt, path in paths.items()},
            }
        )
    return {"reports": written}


def takedown_job(context: JobContext, spec: JobSpec, now: datetime) -> dict[str, Any]:
    """The takedown check, then the retries of what is pending; each part is run whatever
    the others did, and the run fails when one of them did."""
    from tracker.enforcement.alerts import AlertSender
    from tracker.enforcement.bundle import stamp_captures
    from tracker.enforcement.notices import retry_pending
    from tracker.enforcement.takedown import check_takedowns
    from tracker.stores.alerts import AlertOutbox
    from tracker.stores.evidence import CaptureStore

    settings, runtime = context.settings, context.runtime
    result: dict[str, Any] = {}
    failures = []
    try:
        summary = check_takedowns(runtime, settings, stop=context.stop)
        result["check"] = summary.to_dict()
    except Exception as exc:
        log.exception("takedown check failed")
        failures.append(f"takedown check: {exc}")
    outcome = retry_pending(runtime.db, settings)
    result["notices"] = {"sent": len(outcome.sent), "pending": len(outcome.pending)}
    failures += [f"notice: {error}" for error in dict.fromkeys(outcome.errors)]
    if settings.tsa_url:
        stamps = stamp_captures(CaptureStore(runtime.db), settings)
        result["stamps"] = {"stamped": stamps.stamped, "pending": stamps.pending}
        if stamps.pending:
            failures.append(f"{stamps.pending} time-stamp(s) still pending")
    if settings.alert_webhook:
        from tracker.enforcement.alerts import WebhookError, alert_overdue_stamps

        try:
            result["stamp_alerts"] = alert_overdue_stamps(
                CaptureStore(runtime.db), settings.alert_webhook,
                settings.tsa_pending_alert_hours, now,
            )  # fmt: skip
        except WebhookError as exc:
            failures.append(f"the alert webhook did not take the pending stamps: {exc}")
    if settings.alert_webhook:
        sender = AlertSender(lambda: AlertOutbox(runtime.db), settings.alert_webhook)
        result["alerts"] = sender.flush()
        if result["alerts"]["failed"]:
            failures.append("the alert webhook did not take the alerts")
    if failures:
        raise JobFailed("; ".join(failures), result)
    return result


def discover_job(context: JobContext, spec: JobSpec, now: datetime) -> dict[str, Any]:
    """Discovery, then the crawls of the watched sites (run whatever discovery did); the run
    fails when a query failed (it is run again next time) or a crawl did not finish."""
    from tracker.discovery.run import NothingToDiscover, crawl_watched, discover
    from tracker.stores.discovery import SiteRegistry

    settings, runtime = context.settings, context.runtime
    started = context.clock()
    failures = []
    result: dict[str, Any] = {}
    try:
        summary = discover(runtime, settings, now=started, stop=context.stop)
        result["discovery"] = summary.to_dict()
        if summary.failed:
            failures.append(f"{summary.failed} queries failed (run again next time)")
        if summary.crawl_exit_code not in (None, 0):
            failures.append(f"the discovery crawl exited with {summary.crawl_exit_code}")
    except NothingToDiscover as exc:  # no engine, no book source: the watched sites alone
        result["discovery"] = {"skipped": str(exc)}
    except Exception as exc:
        log.exception("discovery failed")
        failures.append(f"discovery: {exc}")
    watched = crawl_watched(settings, SiteRegistry(runtime.db), now=started, stop=context.stop)
    result["watched"] = watched
    failures += [
        f"crawl of {w['site']} exited with {w['exit_code']}" for w in watched if w["exit_code"] != 0
    ]
    clusters = PageClusterer.from_runtime(runtime).cluster_seen_since(started)
    result["clustering"] = clusters.to_dict()
    if failures:
        raise JobFailed("; ".join(failures), result)
    return result


JOBS: dict[str, Callable[[JobContext, JobSpec, datetime], dict[str, Any]]] = {
    "pull": pull_job,
    "rematch": rematch_job,
    "crawl": crawl_job,
    "report": report_job,
    "takedown": takedown_job,
    "discover": discover_job,
}


# ------------------------------------------------------------------- the scheduler's entry point

_ACTIVE: dict[str, JobContext] = {}
_ACTIVE_LOCK = threading.Lock()


def activate(service_id: str, context: JobContext) -> None:
    with _ACTIVE_LOCK:
        _ACTIVE[service_id] = context


def deactivate(service_id: str) -> None:
    with _ACTIVE_LOCK:
        _ACTIVE.pop(service_id, None)


def run_scheduled(
    service_id: str, name: str, scheduled_at: datetime | None = None
) -> dict[str, Any] | None:
    """What the job store refers to: run ``name`` for the service ``service_id``."""
    with _ACTIVE_LOCK:
        context = _ACTIVE.get(service_id)
    if context is None:
        log.error("no active scheduler %s in this process; %s not run", service_id, name)
        return None
    return context.run(name, trigger="schedule", scheduled_at=scheduled_at)
