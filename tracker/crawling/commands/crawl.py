"""``scrapy crawl SPIDER``, with the tracker's exit statuses.

* **2**, before anything is fetched, when the spider's arguments are wrong (a missing
  ``start_url``, a bad number…): one log line naming the fix, no traceback.
* **1** when the crawl could not start, or ended *degraded*: pages it fetched could not be
  matched or stored because a server failed (the stat ``tracker/degraded``, see
  :mod:`pipelines`). They are recorded as such, and the next crawl or ``tracker rematch``
  finishes them; the status says the day's record is not whole yet.
* **0** otherwise.

When the crawl is over, a few lines on standard error sum it up below Scrapy's log: pages
fetched, stored and matched, new matches, errors by kind, the pages it could not read (unread,
by reason), the status, and where to read the report.
"""

from __future__ import annotations

import argparse
import os
import sys
import threading
from datetime import UTC, datetime
from typing import Any, NoReturn

from scrapy.commands.crawl import Command as ScrapyCrawl
from scrapy.exceptions import UsageError
from scrapy.settings import SETTINGS_PRIORITIES, Settings

DEGRADED = "tracker/degraded"


class Command(ScrapyCrawl):
    def process_options(self, args: list[str], opts: argparse.Namespace) -> None:
        """Check the spider and its arguments before Scrapy starts (and logs its start-up):
        a mistake is one line and exit status 2."""
        super().process_options(args, opts)
        if len(args) != 1:
            raise UsageError("give one spider: scrapy crawl SPIDER [-a NAME=VALUE …]")
        from scrapy.spiderloader import get_spider_loader

        assert self.settings is not None
        _check_tracker_settings(self.settings)
        # the worker processes' imports, on the other core while this one loads the spider
        from tracker.crawling.workers import start_early

        start_early(self.settings)
        try:
            spidercls = get_spider_loader(self.settings).load(args[0])
        except KeyError:
            _refuse(f"no spider named {args[0]!r}; `scrapy list` shows them")
        check = getattr(spidercls, "check_arguments", None)
        if check is not None:
            try:
                check(**opts.spargs)
            except ValueError as exc:
                _refuse(f"{args[0]}: {exc}")

    def run(self, args: list[str], opts: argparse.Namespace) -> None:
        assert self.crawler_process is not None
        crawler = self._create_crawler(args[0])
        self.crawler_process.crawl(crawler, **opts.spargs)
        self.crawler_process.start()
        stats = crawler.stats.get_stats() if crawler.stats else {}
        degraded = int(stats.get(DEGRADED, 0) or 0)
        if stats:
            sys.stderr.write(summary(args[0], stats))
        if self.crawler_process.bootstrap_failed or degraded:
            self.exitcode = 1
        if not opts.profile and started_by_scrapy():
            quick_exit(self.exitcode)


def quick_exit(status: int) -> None:
    """End the crawl process now, with ``status``, skipping the interpreter's teardown, as
    ``tracker check`` does (:func:`tracker.cli.entry`): everything the crawl opened is closed
    by then (pipelines drained, evidence written, workers stopped, the run recorded), and the
    teardown only waits. pymongo joins its monitor threads at exit, which sleep in 0.5 s
    steps (~0.25 s), then the heap is freed object by object (~0.35 s after a 1,000-page
    crawl). Logs and standard streams are flushed first. A thread still working (not a
    daemon) is waited for as usual: then the process exits the ordinary way."""
    from tracker.cli._signals import exit_now

    _stop_default_executor()
    if any(t is not threading.main_thread() and not t.daemon for t in threading.enumerate()):
        return
    exit_now(status)


def started_by_scrapy() -> bool:
    """Whether this process is Scrapy's own command line (``python -m scrapy``, the ``scrapy``
    script), which exits once the command is done. A program that runs Scrapy's ``execute()``
    itself (Scrapyd's runner, which removes its copy of the project's egg afterwards) may
    have work of its own after the command: it keeps the ordinary exit."""
    main = sys.modules.get("__main__")
    spec = getattr(main, "__spec__", None)
    if spec is not None and spec.name in ("scrapy", "scrapy.__main__"):
        return True
    return os.path.basename(sys.argv[0]) == "scrapy"


def _stop_default_executor() -> None:
    """Finish and stop the threads of the event loop's default executor (``to_thread``,
    ``run_in_executor(None, …)``): the loop has stopped with the crawl, and its idle threads
    are not daemons, so the interpreter would join them at exit."""
    import asyncio
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        try:
            loop = asyncio.get_event_loop()
        except RuntimeError:  # no loop: nothing to stop
            return
    if not loop.is_closed() and not loop.is_running():
        loop.run_until_complete(loop.shutdown_default_executor())


def _check_tracker_settings(settings: Settings) -> None:
    """``-s TRACKER_X=…`` values are checked as the settings model checks ``TRACKER_X`` in
    the environment (the model's own defaults are checked when they are loaded)."""
    from tracker.config import CRAWL_SETTINGS, ConfigError, checked

    for name in CRAWL_SETTINGS:
        key = f"TRACKER_{name.upper()}"
        if settings.getpriority(key) == SETTINGS_PRIORITIES["cmdline"]:
            try:
                checked(name, settings[key])
            except ConfigError as exc:
                _refuse(f"-s {key}: {exc}")


def _refuse(message: str) -> NoReturn:
    sys.stderr.write(f"scrapy crawl: error: {message}\n")
    raise SystemExit(2)


def summary(spider: str, stats: dict[str, Any]) -> str:
    """The crawl in a few lines, for the operator who ran it."""
    from tracker.crawling.extensions import run_summary
    from tracker.crawling.outcomes import describe

    figures = run_summary(stats)
    pages, matches = figures["pages"], figures["matches"]
    errors = ", ".join(f"{kind} {n:,}" for kind, n in figures["errors"].items()) or "none"
    unread = figures["unread"]
    degraded = int(stats.get(DEGRADED, 0) or 0)
    day = datetime.now(UTC).date().isoformat()
    lines = [
        f"crawl {spider}: {stats.get('finish_reason', 'ended')}; {pages['fetched']:,} pages "
        f"fetched, {pages['stored']:,} stored, {pages['unchanged']:,} unchanged, "
        f"{pages['matched']:,} matched ({matches['new']:,} new matches)",
        f"errors: {errors}",
        f"URLs: {describe(figures['urls'])}",
        *(
            [
                f"unread: {sum(unread.values()):,} page(s) ("
                + ", ".join(f"{reason} {n:,}" for reason, n in unread.items())
                + "), never counted as clean; the next crawl asks for them again"
            ]
            if unread
            else []
        ),
        (
            f"status: degraded, {degraded:,} page(s) not matched or not stored (a server "
            "failed); `tracker rematch` finishes them"
            if degraded
            else "status: ok"
        ),
        f"report: tracker report --date {day} --format html  (run recorded in crawl_runs)",
    ]
    return "".join(f"{line}\n" for line in lines)
