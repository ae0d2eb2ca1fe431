"""Skip pages whose text has not changed since they were stored and matched (content hash).

A page re-crawled with the same extracted text (``tracker.model.content_hash``) is not
fingerprinted or matched again *if its stored match is still good*: matching succeeded and it
ran against the library as it stands (the page's ``matched_version``, or the mark of the last
``tracker rematch``, has reached the index's library version). Its stored record and open
matches then only get their ``last_seen`` refreshed, so the day's report lists them. A page
whose matching failed, or that was matched before masters were added or changed, goes on
through the pipelines and is matched again. A page cut short in transfer is never stored over
a complete earlier copy.
"""

from __future__ import annotations

from datetime import UTC, datetime

from scrapy import Spider
from scrapy.crawler import Crawler
from scrapy.exceptions import DropItem

from pipelines import SERVER_ERRORS, count_failure
from tracker.context import tracker_context
from tracker.items import PageItem
from tracker.model import content_hash
from tracker.stores.pages import OK


class UnchangedPagePipeline:
    def __init__(self, crawler: Crawler) -> None:
        self.crawler = crawler
        self.stats = crawler.stats

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> UnchangedPagePipeline:
        return cls(crawler)

    def process_item(self, item: PageItem, spider: Spider | None = None) -> PageItem:
        context = tracker_context(self.crawler)
        url = item["url"]
        digest = content_hash(item["text"])
        item["content_hash"] = digest
        try:
            stored = context.call(lambda: context.pages.state(url), "page lookup")
        except SERVER_ERRORS as exc:  # the store is away: process the page as new
            count_failure(self.stats, exc, url, "page lookup")
            return item
        item["stored"] = stored
        if stored is None or (stored.get("content_hash") != digest and not item.get("truncated")):
            return item
        unchanged = stored.get("content_hash") == digest
        if unchanged and not self._up_to_date(stored):
            self.stats.inc_value("tracker/pages_rematched")  # unchanged, but matched again
            return item
        now = datetime.now(UTC)
        try:
            context.call(lambda: context.pages.touch(url, now, status=item.get("status")), "touch")
            refreshed = context.call(lambda: context.matches.touch(url, now), "touch")
        except SERVER_ERRORS as exc:
            count_failure(self.stats, exc, url, "refreshing the stored page", "unstored")
            refreshed = None
        if unchanged and refreshed is not None and sorted(refreshed) != sorted(
            stored.get("matched_doc_ids") or []
        ):
            # The page's matches disagree with what it was found to carry (a write lost by a
            # server without a journal): match it again rather than trust either.
            self.stats.inc_value("tracker/pages_repaired")
            return item
        if unchanged:
            self.stats.inc_value("tracker/pages_unchanged")
            self.stats.inc_value("tracker/matches_refreshed", len(refreshed or ()))
            raise DropItem(f"unchanged since last crawl: {url}")
        self.stats.inc_value("tracker/pages_truncated_kept")
        raise DropItem(f"truncated copy of a stored page, stored copy kept: {url}")

    def _up_to_date(self, stored: dict) -> bool:
        """Matching succeeded, against the library as it stands now."""
        if stored.get("match_state", OK) != OK:
            return False
        context = tracker_context(self.crawler)
        try:
            version = context.call(context.library_version, "library version")
            mark = context.call(context.rematch_mark, "rematch mark")
        except SERVER_ERRORS as exc:
            count_failure(self.stats, exc, stored["_id"], "library version lookup")
            return False
        if int(stored.get("matched_version") or 0) >= version:
            return True
        return mark is not None and mark.covers(stored, version)
