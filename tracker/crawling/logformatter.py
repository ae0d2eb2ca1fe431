"""Log dropped items by URL and reason only: the default dumps the whole page HTML."""

from __future__ import annotations

import logging
from typing import Any

from scrapy import logformatter


class TrackerLogFormatter(logformatter.LogFormatter):
    def dropped(
        self, item: Any, exception: BaseException, response: Any, spider: Any
    ) -> logformatter.LogFormatterResult:
        return {
            "level": logging.INFO,
            "msg": "Dropped: %(exception)s",
            "args": {"exception": exception},
        }

    def scraped(self, item: Any, response: Any, spider: Any) -> logformatter.LogFormatterResult:
        url = item.get("url") if hasattr(item, "get") else None
        return {
            "level": logging.DEBUG,
            "msg": "Scraped %(url)s",
            "args": {"url": url or getattr(response, "url", "")},
        }
