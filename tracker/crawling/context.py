"""One shared set of tracker components per Scrapy crawler (connections, library, detector,
stores), and what a long crawl does when a server goes away.

The pipelines call it from their worker threads: the components are safe to share (pymongo's
and redis-py's clients are; the detector checks one batch at a time), and a reconnection is
made by one thread at a time."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from functools import cached_property
from typing import TypeVar

import redis.exceptions
from pymongo.errors import ConnectionFailure
from scrapy.crawler import Crawler

from tracker.config import Settings
from tracker.index.page_index import PageIndex
from tracker.matching.detector import Detector
from tracker.matching.library import MasterLibrary
from tracker.servers.runtime import Runtime
from tracker.stores.evidence import CaptureStore
from tracker.stores.pages import MatchStore, PageStore
from tracker.stores.rematch import RematchMark, RematchStore

log = logging.getLogger(__name__)

T = TypeVar("T")

#: Errors that mean a server is away (not that a request was wrong): worth a reconnection.
SERVER_AWAY = (
    redis.exceptions.ConnectionError,
    redis.exceptions.TimeoutError,
    redis.exceptions.BusyLoadingError,
    ConnectionFailure,
)
RETRY_PAUSES_S = (1.0, 2.0, 4.0)
FAIL_FAST_S = 5.0  # after a server stayed away through the retries, fail at once this long
MARK_REFRESH_S = 30.0

_COMPONENTS = ("library", "detector", "pages", "matches", "page_index", "rematches", "captures")


class TrackerContext:
    def __init__(self, runtime: Runtime) -> None:
        self.runtime = runtime
        self._generation = runtime.generation
        self._away_until = 0.0
        self._mark: tuple[float, RematchMark | None] = (0.0, None)
        self._recovering = threading.Lock()

    @cached_property
    def library(self) -> MasterLibrary:
        return MasterLibrary.from_runtime(self.runtime)

    @cached_property
    def detector(self) -> Detector:
        return self.library.detector(self.runtime.settings)

    @cached_property
    def pages(self) -> PageStore:
        return PageStore(self.runtime.db)

    @cached_property
    def matches(self) -> MatchStore:
        return MatchStore(self.runtime.db)

    @cached_property
    def page_index(self) -> PageIndex:
        return PageIndex.from_runtime(self.runtime)

    @cached_property
    def rematches(self) -> RematchStore:
        return RematchStore(self.runtime.db)

    @cached_property
    def captures(self) -> CaptureStore:
        return CaptureStore(self.runtime.db)

    def warm_up(self) -> None:
        """Connect to both servers and build the components, so that a crawl's first pages
        need not wait for it. Every stage's worker thread calls it when the crawl opens: each
        gets its connections (the components are built once)."""
        self.runtime.db.command("ping")
        self.runtime.redis.ping()
        for name in _COMPONENTS:
            getattr(self, name)

    def library_version(self) -> int:
        """The library version the index holds now."""
        return self.library.index.state()[0] or 0

    def rematch_mark(self) -> RematchMark | None:
        """The last ``tracker rematch`` (re-read every ``MARK_REFRESH_S``)."""
        read_at, mark = self._mark
        if time.monotonic() - read_at > MARK_REFRESH_S:
            mark = self.rematches.last()
            self._mark = (time.monotonic(), mark)
        return mark

    def call(self, operation: Callable[[], T], what: str) -> T:
        """Run ``operation``; if a server is away, bring it back (:meth:`Runtime.recover`),
        rebuild what was built on the old connections, and try again, pausing 1, 2, 4 s. A
        server still away after that raises, and the next calls fail at once for
        ``FAIL_FAST_S`` instead of stalling the crawl page after page."""
        if time.monotonic() < self._away_until:
            return operation()
        for pause in (*RETRY_PAUSES_S, None):
            try:
                return operation()
            except SERVER_AWAY as exc:
                if pause is None:
                    self._away_until = time.monotonic() + FAIL_FAST_S
                    raise
                log.warning("%s: server away (%s); reconnecting", what, exc)
                self.recover(pause)
        raise AssertionError("unreachable")

    def recover(self, pause: float = 1.0) -> None:
        """Reconnect after a server went away; components built on the old connections are
        built again, and the index is verified (a restarted Redis may have lost writes). One
        thread at a time: the others wait, then find the servers back."""
        with self._recovering:
            try:
                self.runtime.recover(pause)
            except Exception as exc:  # the servers' own errors: the retry will tell
                log.error("could not recover the servers: %s", exc)
                return
            if self.runtime.generation != self._generation:
                self._generation = self.runtime.generation
                for name in _COMPONENTS:
                    self.__dict__.pop(name, None)
            try:
                self.library.verify()
            except Exception as exc:
                log.error("could not verify the index after reconnecting: %s", exc)


_CREATING = threading.Lock()


def crawler_component(crawler: Crawler, name: str, make: Callable[[], T]) -> T:
    """The crawler's component ``name``, made by ``make`` on first use (by whichever thread
    comes first; the others wait for it)."""
    component = getattr(crawler, name, None)
    if component is None:
        with _CREATING:
            component = getattr(crawler, name, None)
            if component is None:
                component = make()
                setattr(crawler, name, component)
    return component


def tracker_context(crawler: Crawler) -> TrackerContext:
    """The crawler's context, made on first use (by whichever thread comes first)."""
    return crawler_component(
        crawler, "_tracker_context", lambda: TrackerContext(Runtime(Settings.load()))
    )
