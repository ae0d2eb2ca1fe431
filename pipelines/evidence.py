"""Keep the evidence of every matched page: its HTTP exchanges as WARC records, synced to disk,
and a ``captures`` document, before the store stage commits its matches (which then name the
capture and the payload's SHA-256). See :mod:`tracker.enforcement`.

Pages go through a batch at a time in the stage's worker thread, as in every stage (the store
stage then gets them together): those that matched nothing only let their exchange's bytes go;
the matched ones are written with one append and one ``fsync`` of the process's WARC file and
one insert of the captures. A capture that cannot be written (a full disk, the store away) is
counted as ``tracker/errors/evidence`` and the page goes on to be stored without it: the next
crawl that finds its text unchanged captures it then (:func:`capture_pages`, called by the
unchanged-page stage). With ``evidence_screenshots`` a bounded number of matched pages also get
a screenshot (:mod:`tracker.enforcement.screenshots`).
"""

from __future__ import annotations

import logging
import uuid
from datetime import UTC, datetime
from typing import Any

from scrapy.crawler import Crawler
from scrapy.utils.defer import maybe_deferred_to_future
from twisted.internet.threads import deferToThread

from pipelines import SERVER_ERRORS, BatchedStage, Tally
from tracker.crawling.context import TrackerContext, crawler_component, tracker_context
from tracker.crawling.items import PageItem
from tracker.enforcement.capture import Exchange, capture_document
from tracker.enforcement.warc import EvidenceWriter, evidence_dir
from tracker.stores.evidence import CaptureStore

log = logging.getLogger(__name__)


class EvidencePipeline(BatchedStage):
    stage = "evidence"
    reads_files = True

    def warm_up(self) -> None:
        super().warm_up()
        evidence(self.crawler)

    async def close_spider(self) -> None:
        await super().close_spider()
        kept = getattr(self.crawler, "_tracker_evidence", None)
        if kept is not None:  # the screenshots queued are finished off the reactor's thread
            await maybe_deferred_to_future(deferToThread(kept.close))
            shots = kept.screenshots
            if shots is not None:
                for name in ("taken", "skipped", "failed"):
                    self.stats.set_value(
                        f"tracker/evidence/screenshots_{name}", getattr(shots, name)
                    )

    def process_batch(self, items: list[PageItem]) -> list[Tally]:
        """Every page of a batch goes through (so the store stage gets them together, in
        batches as large as before); those that matched nothing only let their bytes go."""
        tallies = [Tally(item["url"]) for item in items]
        matched = [k for k, item in enumerate(items) if item.get("matches")]
        for item in items:
            if not item.get("matches"):
                item.pop("exchanges", None)  # nothing to prove
        if matched:
            capture_pages(self.crawler, [items[k] for k in matched], [tallies[k] for k in matched])
        return tallies


class Evidence:
    """The crawl process's evidence components: its WARC writer, the capture store and, with
    ``evidence_screenshots``, the screenshot taker."""

    def __init__(self, context: TrackerContext) -> None:
        settings = context.runtime.settings
        self.context = context
        self.directory = evidence_dir(settings)
        self.writer = EvidenceWriter(self.directory)
        self.screenshots = None
        if settings.evidence_screenshots:
            from tracker.enforcement.screenshots import ScreenshotTaker

            self.screenshots = ScreenshotTaker(
                self.directory,
                settings.evidence_screenshot_max,
                self._screenshot_taken,
                executable=settings.browser_path or None,
            )

    def captures(self) -> CaptureStore:
        return CaptureStore(self.context.runtime.db)

    def _screenshot_taken(self, capture_id: str, screenshot: dict[str, Any]) -> None:
        context = self.context
        context.call(
            lambda: self.captures().set_screenshot(capture_id, screenshot), "screenshot record"
        )

    def close(self) -> None:
        if self.screenshots is not None:
            self.screenshots.close()
        self.writer.close()


def evidence(crawler: Crawler) -> Evidence:
    """The crawler's evidence components, made on first use."""
    return crawler_component(
        crawler, "_tracker_evidence", lambda: Evidence(tracker_context(crawler))
    )


def capture_pages(crawler: Crawler, items: list[PageItem], tallies: list[Tally]) -> list[dict]:
    """Write the evidence of ``items`` (in a stage's worker thread): their exchanges as WARC
    records, synced, then their ``captures`` documents, and set ``capture_id`` and
    ``payload_sha256`` on their ``matches``. Each item's exchanges are let go. Returns the
    documents stored."""
    kept = evidence(crawler)
    pages: dict[int, list[Exchange]] = {}
    for k, item in enumerate(items):
        exchanges = [e for e in item.pop("exchanges", None) or () if isinstance(e, Exchange)]
        if exchanges:
            pages[k] = exchanges
        else:
            tallies[k].inc("tracker/evidence/without_exchange")
    if not pages:
        return []
    try:
        refs = kept.writer.write(list(pages.values()))
    except OSError as exc:
        log.error("could not write the evidence of %d page(s): %s", len(pages), exc)
        for k in pages:
            tallies[k].inc("tracker/errors/evidence")
        return []
    now = datetime.now(UTC)
    documents = {
        k: capture_document(
            uuid.uuid4().hex,
            items[k]["url"],
            items[k].get("content_hash"),
            items[k].get("matches") or [],
            exchanges,
            records,
            now,
        )
        for (k, exchanges), records in zip(pages.items(), refs, strict=True)
    }
    context = kept.context
    try:
        context.call(lambda: kept.captures().add_many(list(documents.values())), "evidence")
    except SERVER_ERRORS as exc:
        for k in documents:
            tallies[k].failure(exc, "storing the evidence")
            tallies[k].inc("tracker/errors/evidence")
        return []
    for k, document in documents.items():
        for match in items[k].get("matches") or ():
            match["capture_id"] = document["_id"]
            match["payload_sha256"] = document["payload_sha256"]
        tallies[k].inc("tracker/evidence/captured")
        if kept.screenshots is not None:
            kept.screenshots.submit(document["_id"], pages[k][0])
    return list(documents.values())
