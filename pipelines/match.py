"""Match fingerprinted pages against the master library index, a batch at a time: the index
is read in one round trip for the whole batch (:meth:`Detector.check_normalized_many`), in a
worker thread."""

from __future__ import annotations

from pipelines import SERVER_ERRORS, BatchedStage, Tally
from tracker.crawling.context import tracker_context
from tracker.crawling.items import PageItem
from tracker.reading.extract import WARM_UP_TEXT
from tracker.text.normalize import normalize


class MatchPipeline(BatchedStage):
    """Sets each page's ``matches`` (None when matching failed: the page is stored as such
    and matched again by the next crawl or ``tracker rematch``) and ``library_version``."""

    stage = "match"

    def warm_up(self) -> None:
        """The connections, and one short text looked up: the index's query tables load."""
        super().warm_up()
        tracker_context(self.crawler).detector.check_normalized_many([normalize(WARM_UP_TEXT)], [0])

    def process_batch(self, items: list[PageItem]) -> list[Tally]:
        context = tracker_context(self.crawler)
        tallies = [Tally(item["url"]) for item in items]
        pages = [item["normalized"] for item in items]
        simhashes = [item["simhash"] for item in items]
        try:
            found = context.call(
                lambda: context.detector.check_normalized_many(pages, simhashes), "matching"
            )
            version = context.detector.version or 0
        except SERVER_ERRORS as exc:  # keep the pages, unmatched; count each
            for item, tally in zip(items, tallies, strict=True):
                tally.failure(exc, "matching", "unmatched")
                item["matches"] = None
            return tallies
        for item, tally, matches in zip(items, tallies, found, strict=True):
            item["matches"] = [m.to_dict() for m in matches]
            item["library_version"] = version
            if matches:
                tally.inc("tracker/pages_matched")
                tally.inc("tracker/matches", len(matches))
        return tallies
