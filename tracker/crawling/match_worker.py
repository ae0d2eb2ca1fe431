"""Matching in a crawl's worker processes, beside extraction (``match_in_workers``).

A crawl process runs Scrapy (downloads, parsing, scheduling) and every stage's thread under one
GIL, so the check of a page (~5 ms of Python and numpy a chapter page, and the rewrite
lexicon's load as the crawl opens) is time the downloads wait for. The extraction workers
(:mod:`tracker.crawling.process_pool`) run on another core: each keeps a detector of its own
(its own connections to the same servers, its own master cache), built on first use from the
crawl's settings, and checks a batch of pages in one call (:func:`match_pages`), as the match
stage's thread would (:meth:`tracker.matching.detector.Detector.check_normalized_many`).

A batch that fails there (a server away, a worker gone) is not retried here: each of its pages
gets :class:`MatchFailed`, and :class:`pipelines.match.MatchPipeline` checks it in the crawl
process instead, with its reconnections and its failure counts.
"""

from __future__ import annotations

import logging
import threading
from typing import Any

from tracker.config import Settings
from tracker.matching.detector import Detector
from tracker.matching.library import MasterLibrary
from tracker.reading.extract import WARM_UP_TEXT
from tracker.reading.extract import warm_up as warm_up_extraction
from tracker.servers.runtime import Runtime
from tracker.text.normalize import NormalizedText, normalize

log = logging.getLogger(__name__)

_detector: Detector | None = None
_building = threading.Lock()


class MatchFailed(str):
    """The check of a page failed in the worker (its error, as text)."""


def detector() -> Detector:
    """This process's detector, on the servers of the crawl's settings."""
    global _detector
    with _building:
        if _detector is None:
            runtime = Runtime(Settings.load())
            _detector = MasterLibrary.from_runtime(runtime).detector(runtime.settings)
        return _detector


def warm_up() -> None:
    """A worker's start: extraction's warm-up; the detector's connections and query tables
    (what the crawl's first matched page would otherwise wait for) in a thread of the worker,
    so that the first pages are extracted meanwhile. Not the rewrite stage's lexicon (~0.6 s
    of CPU): it loads on the first page that stage reads, which a crawl of verbatim copies
    (a pirate site) never meets."""
    warm_up_extraction()
    threading.Thread(target=_warm_up_detector, name="detector-warm-up", daemon=True).start()


def _warm_up_detector() -> None:
    try:
        detector().check_normalized_many([normalize(WARM_UP_TEXT)], [0], rewrites=False)
    except Exception as exc:  # the servers away: the first batch builds it again
        log.warning("matching warm-up failed: %r", exc)


def match_pages(pages: list[tuple[NormalizedText, int]]) -> list[Any]:
    """For each ``(normalized text, SimHash)``: its matches (``Match.to_dict()``) and the
    library version they were found against, or :class:`MatchFailed` for every page when the
    check failed (the detector is then built again for the next batch)."""
    global _detector
    try:
        found = detector().check_normalized_many(
            [text for text, _ in pages], [simhash for _, simhash in pages]
        )
        version = detector().version or 0
    except Exception as exc:
        _detector = None
        return [MatchFailed(f"{type(exc).__name__}: {exc}")] * len(pages)
    return [([m.to_dict() for m in matches], version) for matches in found]
