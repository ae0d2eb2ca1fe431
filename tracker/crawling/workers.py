"""What a crawl's worker processes (:mod:`tracker.crawling.process_pool`) import before they
are forked, and the early start of the server they are forked from.

The workers are forked from a *forkserver* that imports extraction (lxml, trafilatura, the
segmenter) and, with ``TRACKER_MATCH_IN_WORKERS``, the check (:mod:`tracker.crawling.match_worker`:
numpy, pymongo, redis, the detector): ~1.7 s of CPU. Started when the extract pipeline opens,
that is time the crawl's first pages wait for. ``scrapy crawl`` starts it as soon as its
arguments are checked (:func:`start_early`): the server imports on the other core while the
crawl process imports Scrapy's and the project's modules and builds its components, and the
workers are forked from a ready server when the spider opens.
"""

from __future__ import annotations

from scrapy.settings import BaseSettings

from tracker.config import Settings

EXTRACTION = ("tracker.reading.extract", "trafilatura")
MATCHING = ("tracker.crawling.match_worker",)
EXTRACT_PIPELINE = "pipelines.extract.ExtractPipeline"


def matching_in_workers(settings: BaseSettings) -> bool:
    return settings.getbool("TRACKER_MATCH_IN_WORKERS", Settings.match_in_workers)


def preload(settings: BaseSettings) -> list[str]:
    """The modules the workers of a crawl with these settings import before they fork."""
    return [*EXTRACTION, *MATCHING] if matching_in_workers(settings) else list(EXTRACTION)


def start_early(settings: BaseSettings) -> None:
    """Start the workers' forkserver now (it imports in the background), when a crawl with
    these settings will have workers: extraction processes, and the extract pipeline on."""
    if settings.getint("TRACKER_EXTRACT_PROCESSES", 0) <= 0:
        return
    if settings.getwithbase("ITEM_PIPELINES").get(EXTRACT_PIPELINE) is None:
        return
    from tracker.crawling.process_pool import start_forkserver

    start_forkserver(preload(settings))
