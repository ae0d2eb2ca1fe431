"""What the console shows of a day: the day's report, built once and kept for a while.

Every figure of a day (the dashboard's cards and charts, the infringing pages, works, sites)
comes from one :func:`tracker.reports.build.build_report`, the very report ``tracker report``
prints, so the console and the report never disagree, and reading changes nothing stored.
Building it reads the day's ``page_days`` through their ``day`` index and the pages, matches and
mirror groups by ``_id``: seconds for a day of thousands of pages on SecantusDB. So a day's
report is kept for ``console_cache_s`` seconds (a handful of days, the least recently used
dropped) and then built again *in the background* while the previous one is still served
(stale-while-revalidate), and the console builds today's at start: a request never waits for
a build except the first one of a day nobody asked for yet. With ``console_cache_s = 0`` every
request builds its report (tests).
"""

from __future__ import annotations

import logging
import threading
import time
from collections import OrderedDict
from dataclasses import dataclass, field
from datetime import date
from typing import Any

from pymongo.database import Database

from tracker.enforcement.compliance import Compliance
from tracker.reports.build import build_report

log = logging.getLogger(__name__)

KEPT_DAYS = 8


@dataclass
class DayView:
    """A day's report and what the console looks up in it."""

    report: dict[str, Any]
    built: float  # time.monotonic() when it was built
    titles: dict[str, str] = field(default_factory=dict)  # page URL -> crawled title

    @classmethod
    def of(cls, report: dict[str, Any]) -> DayView:
        titles = {p["url"]: p.get("title") or "" for w in report["works"] for p in w["pages"]}
        return cls(report, time.monotonic(), titles)

    def work(self, name: str) -> dict[str, Any] | None:
        return next((w for w in self.report["works"] if w["work"] == name), None)

    def site(self, name: str) -> dict[str, Any] | None:
        return next((s for s in self.report["sites"] if s["site"] == name), None)

    def pages(
        self, *, work: str | None = None, site: str | None = None, min_score: float | None = None
    ) -> list[dict[str, Any]]:
        """The report's flat ``pages`` list (the same objects), filtered: pages copying
        ``work``, on ``site``, scoring at least ``min_score``."""
        found = self.report["pages"]
        if work:
            found = [p for p in found if any(c["work"] == work for c in p["copies"])]
        if site:
            found = [p for p in found if p["site"] == site]
        if min_score is not None:
            found = [p for p in found if p["score"] >= min_score]
        return found


class DayReports:
    """Day reports of one database, kept ``max_age`` seconds and refreshed in the background."""

    def __init__(self, db: Database, max_age: float, compliance: Compliance | None = None) -> None:
        self.db = db
        self.max_age = max_age
        self.compliance = compliance
        self._views: OrderedDict[date, DayView] = OrderedDict()
        self._building: dict[date, threading.Event] = {}
        self._lock = threading.Lock()

    def get(self, day: date) -> DayView:
        """The report of ``day``: kept, else built now (one build per day at a time: others
        asking meanwhile wait for it)."""
        while True:
            with self._lock:
                view = self._views.get(day)
                if view is not None and self.max_age > 0:
                    self._views.move_to_end(day)
                    if time.monotonic() - view.built > self.max_age:
                        self._refresh_later(day)
                    return view
                building = self._building.get(day)
                if building is None:
                    building = self._building[day] = threading.Event()
                    break
            building.wait()
            if self.max_age <= 0:  # built for another request; this one builds its own
                continue
        try:
            return self._build(day)
        finally:
            with self._lock:
                self._building.pop(day).set()

    def warm(self, day: date) -> threading.Thread:
        """Build ``day``'s report in the background (at start, for the dashboard)."""
        thread = threading.Thread(target=self._quietly, args=(day,), daemon=True)
        thread.start()
        return thread

    def wait_idle(self, timeout: float = 60.0) -> bool:
        """Wait for the builds under way (before the connections are closed)."""
        deadline = time.monotonic() + timeout
        while True:
            with self._lock:
                pending = list(self._building.values())
            if not pending:
                return True
            if time.monotonic() > deadline:
                return False
            pending[0].wait(max(0.0, deadline - time.monotonic()))

    def _refresh_later(self, day: date) -> None:
        if day in self._building:  # called under the lock
            return
        self._building[day] = threading.Event()

        def refresh() -> None:
            try:
                self._quietly(day, fresh=True)
            finally:
                with self._lock:
                    self._building.pop(day).set()

        threading.Thread(target=refresh, daemon=True).start()

    def _quietly(self, day: date, fresh: bool = False) -> None:
        try:
            self._build(day) if fresh else self.get(day)
        except Exception:  # a server away: the next request says so
            log.exception("could not build the report of %s", day)

    def _build(self, day: date) -> DayView:
        started = time.monotonic()
        view = DayView.of(build_report(self.db, day, compliance=self.compliance))
        log.info("report of %s built in %.2f s", day, time.monotonic() - started)
        with self._lock:
            self._views[day] = view
            self._views.move_to_end(day)
            while len(self._views) > KEPT_DAYS:
                self._views.popitem(last=False)
        return view


@dataclass(frozen=True)
class Paged:
    """One page of a list: its items, the page number and how many there are in all."""

    items: list[Any]
    page: int
    per_page: int
    total: int

    @property
    def pages(self) -> int:
        return max(1, -(-self.total // self.per_page))

    def to_dict(self) -> dict[str, int]:
        return {"page": self.page, "per_page": self.per_page, "total": self.total}


def paged(items: list[Any], page: int, per_page: int) -> Paged:
    start = (page - 1) * per_page
    return Paged(items[start : start + per_page], page, per_page, len(items))
