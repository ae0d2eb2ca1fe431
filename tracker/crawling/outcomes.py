"""Where every URL a crawl fetched ended: nothing is dropped in silence.

Each page the crawl fetched (a response reaching a spider callback, a failed request reaching
its errback, a further part of a chapter) ends as exactly one of:

* **stored**: its text stored, matched or not (a chapter's further parts with its first page);
* **unchanged**: its text the one stored, only its record refreshed;
* **unread**, with its reason (:mod:`tracker.crawling.unread`'s reasons, and ``extract_failed``,
  ``unstored``, ``pipeline_error``): it could not be read or recorded;
* **skipped**, with its reason: ``list_page``, ``not_a_page``, ``without_text``,
  ``canonical_copy``, ``later_part`` (read with its first part), ``not_a_part``,
  ``not_text``, ``http_404``…, ``feed``, ``sitemap``, ``front_page``.

A page sent again through the browser is one URL: its plain fetch hands it on
(:class:`HandedOn`) and the rendered fetch (``meta[REFETCH]``) is not counted as another.

Counted as ``tracker/urls/fetched`` and ``tracker/urls/<end>`` (with ``…/<reason>``); the
spider counts what ends in its callbacks (:class:`UrlLedger`), :class:`UrlOutcomes` what ends
in the pipelines (Scrapy's item signals; a pipeline says how a page ended with
:class:`Ended`). :func:`accounting` gives the crawl summary's counts, and how many fetched
URLs did not end (0 unless a path was missed).
"""

from __future__ import annotations

import logging
from typing import Any

from scrapy import signals
from scrapy.crawler import Crawler
from scrapy.exceptions import DropItem

log = logging.getLogger(__name__)

STORED, UNCHANGED, UNREAD, SKIPPED = "stored", "unchanged", "unread", "skipped"
ENDS = (STORED, UNCHANGED, UNREAD, SKIPPED)
PREFIX = "tracker/urls/"
#: In a request's meta: a URL fetched again (through the browser) whose fetch was counted.
REFETCH = "tracker_refetch"


class Ended(DropItem):
    """An item dropped by a pipeline, and how its page ended (``end``: one of :data:`ENDS`,
    with ``reason``)."""

    def __init__(self, message: str, end: str, reason: str = "") -> None:
        super().__init__(message)
        self.end, self.reason = end, reason


class HandedOn(DropItem):
    """An item dropped because its page is fetched again (through the browser): not an end."""


class UrlLedger:
    """The spider's side: URLs fetched, and those that end in its callbacks."""

    def __init__(self, crawler: Crawler) -> None:
        self.crawler = crawler

    def fetched(self, meta: dict[str, Any]) -> None:
        """A response (or a failure) for a request with ``meta`` reached the spider."""
        if not meta.get(REFETCH):
            self.crawler.stats.inc_value(PREFIX + "fetched")

    def end(self, end: str, reason: str = "", count: int = 1) -> None:
        count_end(self.crawler.stats, end, reason, count)


def count_end(stats: Any, end: str, reason: str = "", count: int = 1) -> None:
    stats.inc_value(PREFIX + end, count)
    if reason:
        stats.inc_value(f"{PREFIX}{end}/{reason}", count)


def pages_of(item: Any) -> int:
    """URLs an item stands for: its page and its further parts."""
    if not item.get("fetched", True):
        return 0  # an entry of a feed: the feed was the URL fetched
    return 1 + len(item.get("parts") or ())


class UrlOutcomes:
    """Scrapy extension: how the items' pages ended, from the item signals."""

    def __init__(self, crawler: Crawler) -> None:
        self.stats = crawler.stats

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> UrlOutcomes:
        extension = cls(crawler)
        crawler.signals.connect(extension.item_scraped, signal=signals.item_scraped)
        crawler.signals.connect(extension.item_dropped, signal=signals.item_dropped)
        crawler.signals.connect(extension.item_error, signal=signals.item_error)
        return extension

    def item_scraped(self, item: Any, **_: Any) -> None:
        if item.get("unstored"):
            count_end(self.stats, UNREAD, "unstored", pages_of(item))
        else:
            count_end(self.stats, STORED, "", pages_of(item))

    def item_dropped(self, item: Any, exception: BaseException, **_: Any) -> None:
        if isinstance(exception, HandedOn):
            return
        if isinstance(exception, Ended):
            count_end(self.stats, exception.end, exception.reason, pages_of(item))
        else:  # a pipeline outside tracker's: counted under its message's first words
            reason = "_".join(str(exception).split(":")[0].split()[:3]).lower() or "dropped"
            count_end(self.stats, SKIPPED, reason, pages_of(item))

    def item_error(self, item: Any, failure: Any = None, **_: Any) -> None:
        count_end(self.stats, UNREAD, "pipeline_error", pages_of(item))


def accounting(stats: dict[str, Any]) -> dict[str, Any]:
    """The fetched URLs and how they ended, from a crawl's stats (Scrapy's keys, or the
    stored ones with ``__`` for ``/``): ``unaccounted`` is fetched minus the ends."""

    def get(key: str) -> int:
        return int(stats.get(key, stats.get(key.replace("/", "__"), 0)) or 0)

    def reasons(end: str) -> dict[str, int]:
        found: dict[str, int] = {}
        for key, value in stats.items():
            name = key.replace("__", "/")
            if name.startswith(f"{PREFIX}{end}/"):
                found[name[len(PREFIX) + len(end) + 1 :]] = int(value)
        return dict(sorted(found.items()))

    result: dict[str, Any] = {"fetched": get(PREFIX + "fetched")}
    for end in ENDS:
        result[end] = get(PREFIX + end)
    result["unread_reasons"] = reasons(UNREAD)
    result["skipped_reasons"] = reasons(SKIPPED)
    result["unaccounted"] = result["fetched"] - sum(result[end] for end in ENDS)
    return result


def describe(urls: dict[str, Any]) -> str:
    """One line: ``N URLs fetched = S stored + U unchanged + R unread (…) + K skipped (…)``."""

    def detail(reasons: dict[str, int]) -> str:
        return f" ({', '.join(f'{k} {v}' for k, v in reasons.items())})" if reasons else ""

    line = (
        f"{urls['fetched']} URLs fetched = {urls[STORED]} stored + {urls[UNCHANGED]} unchanged"
        f" + {urls[UNREAD]} unread{detail(urls['unread_reasons'])}"
        f" + {urls[SKIPPED]} skipped{detail(urls['skipped_reasons'])}"
    )
    if urls["unaccounted"]:
        line += f"; UNACCOUNTED: {urls['unaccounted']}"
    return line
