"""Spiders that act on which of their pages carry a copy (``discover``, ``booksource``).

Whether a page carries a copy is known once the pipelines have matched it: Scrapy's
``item_scraped`` signal with the item's ``matches``, or ``item_dropped`` for a page unchanged
since it was stored with matches (the UnchangedPipeline drops it with its stored match state).
:class:`WatchesCopies` connects both and calls :meth:`~WatchesCopies.found_copy` with the
page's URL; any other dropped item goes to :meth:`~WatchesCopies.dropped`.
"""

from __future__ import annotations

from typing import Any

from scrapy import signals
from scrapy.crawler import Crawler
from scrapy.http import Response

from tracker.crawling.items import PageItem


class WatchesCopies:
    """A mixin for a :class:`~spiders.base.TrackerSpider` (listed before it)."""

    @classmethod
    def from_crawler(cls, crawler: Crawler, *args: Any, **kwargs: Any) -> Any:
        spider = super().from_crawler(crawler, *args, **kwargs)  # type: ignore[misc]
        crawler.signals.connect(spider.item_scraped, signal=signals.item_scraped)
        crawler.signals.connect(spider.item_dropped, signal=signals.item_dropped)
        return spider

    def item_scraped(self, item: PageItem, response: Response, spider: Any = None) -> None:
        if item.get("matches"):
            self.found_copy(item["url"])

    def item_dropped(
        self, item: PageItem, response: Response, exception: Exception, spider: Any = None
    ) -> None:
        if item.get("text") is not None and (item.get("stored") or {}).get("matched_doc_ids"):
            self.found_copy(item["url"])  # unchanged since stored, and carrying a copy
        else:
            self.dropped(item, exception)

    def found_copy(self, url: str) -> None:
        """The page at ``url`` carries a copy."""
        raise NotImplementedError

    def dropped(self, item: PageItem, exception: Exception) -> None:
        """The pipelines dropped ``item`` for ``exception`` (a list page, no text…)."""
