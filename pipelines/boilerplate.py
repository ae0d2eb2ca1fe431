"""Drop a site's own boilerplate — short lines repeated across many of its pages — from the text
that is fingerprinted and matched (the stored text and every offset stay as they were). Each
page counts once, and lines of master text are never dropped (see
:mod:`tracker.text.site_boilerplate`). The counts are kept in Redis, page after page in the
order the pages arrive, in a worker thread.

Dropping lines changes the page's normalised text and SimHash. Most pages are spared the cost
of computing them again: lines already left out by the ad patterns change nothing; otherwise
the normalised text loses their characters (:meth:`NormalizedText.without`) and the SimHash
their words' votes (:class:`tracker.fingerprints.simhash.Votes`: words are cut line by line,
so only the dropped lines are segmented). Pages with Latin letters (read as pinyin by runs
that dropping a line may join), or without their votes, are normalised again and hashed by
the fingerprint stage."""

from __future__ import annotations

import numpy as np
from scrapy.crawler import Crawler

from pipelines import SERVER_ERRORS, BatchedStage, Tally
from tracker.config import Settings
from tracker.crawling.context import tracker_context
from tracker.crawling.items import PageItem
from tracker.fingerprints.simhash import votes_of_lines
from tracker.model import site_of
from tracker.text.normalize import normalize
from tracker.text.site_boilerplate import MasterText, SiteBoilerplate


class SiteBoilerplatePipeline(BatchedStage):
    stage = "boilerplate"

    def __init__(self, crawler: Crawler) -> None:
        super().__init__(crawler)
        self.min_pages = crawler.settings.getint(
            "TRACKER_BOILERPLATE_MIN_PAGES", Settings.boilerplate_min_pages
        )
        self._boilerplate: SiteBoilerplate | None = None

    def warm_up(self) -> None:
        """The connections only. Not the segmenter's dictionary and word weights (rjieba's
        import and load: ~0.15 s of the crawl process's CPU and GIL as the spider opens,
        while its first pages are fetched): :func:`drop_lines` needs them only for a line
        the ad patterns did not leave out already, which a pirate site's pages, stamped with
        known ad lines, never have (the bench's 1,000-page crawl: none). A site that has
        such lines pays the load once, on its first page that drops one."""
        super().warm_up()

    def process_batch(self, items: list[PageItem]) -> list[Tally]:
        """Mask each page's site boilerplate in ``normalized``, in order. In the worker."""
        context = tracker_context(self.crawler)
        if self._boilerplate is None or self._boilerplate.client is not context.runtime.redis:
            # (again after a reconnection to a server that came back elsewhere)
            self._boilerplate = SiteBoilerplate(
                context.runtime.redis, context.runtime.settings.redis_prefix, self.min_pages
            )
        library = MasterText(
            find=lambda text: [
                (span["page_start"], span["page_end"])
                for match in context.detector.check(text)
                for span in match.spans
            ],
            version=lambda: context.detector.version or 0,
        )
        tallies = [Tally(item["url"]) for item in items]
        pages = [(site_of(item["url"]), item["text"], item["url"]) for item in items]
        try:
            masks = self._boilerplate.mask_many(pages, library)
        except SERVER_ERRORS as exc:  # counts or library unavailable: match them as they are
            for tally in tallies:
                tally.failure(exc, "site boilerplate lookup")
            return tallies
        for item, tally, (mask, dropped) in zip(items, tallies, masks, strict=True):
            if dropped:
                drop_lines(item, mask)
                tally.inc("tracker/boilerplate_lines", dropped)
        return tallies


def drop_lines(item: PageItem, mask: np.ndarray) -> None:
    """Leave the lines ``mask`` covers (whole lines of ``item["text"]``) out of the item's
    normalised text and SimHash."""
    normalized = item.get("normalized")
    kept = None if normalized is None else normalized.without(mask)
    if normalized is not None and kept is normalized:
        return  # only characters the ad patterns had left out already
    votes = item.get("simhash_votes")
    if kept is None or votes is None:
        item["normalized"] = normalize(item["text"], drop=mask) if kept is None else kept
        item.pop("simhash", None)  # of the text with the lines: made again
        item.pop("simhash_votes", None)
        return
    gone = [
        normalized.chars[a:b] for a, b in normalized.line_slices() if mask[normalized.char_pos[a]]
    ]
    votes = votes - votes_of_lines(gone)
    item["normalized"] = kept
    item["simhash_votes"] = votes
    item["simhash"] = votes.fingerprint
