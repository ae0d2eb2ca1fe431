"""One shared set of tracker components per Scrapy crawler (connections, library, detector)."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

from scrapy.crawler import Crawler

from tracker.config import Settings
from tracker.library import MasterLibrary
from tracker.matching.detector import Detector
from tracker.runtime import Runtime
from tracker.stores.pages import MatchStore, PageStore


@dataclass
class TrackerContext:
    runtime: Runtime

    @cached_property
    def library(self) -> MasterLibrary:
        return MasterLibrary.from_runtime(self.runtime)

    @cached_property
    def detector(self) -> Detector:
        return self.library.detector(self.runtime.settings)

    @cached_property
    def pages(self) -> PageStore:
        store = PageStore(self.runtime.db)
        store.ensure_indexes()
        return store

    @cached_property
    def matches(self) -> MatchStore:
        store = MatchStore(self.runtime.db)
        store.ensure_indexes()
        return store


def tracker_context(crawler: Crawler) -> TrackerContext:
    context = getattr(crawler, "_tracker_context", None)
    if context is None:
        context = TrackerContext(Runtime(Settings.load()))
        crawler._tracker_context = context  # type: ignore[attr-defined]
    return context
