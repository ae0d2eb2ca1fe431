"""Item pipelines: extract → skip unchanged → drop site boilerplate → fingerprint → match →
store (see ``ITEM_PIPELINES``).

A page that could not be matched or stored because a server failed is counted as
``tracker/errors/index`` (Redis) or ``tracker/errors/store`` (MongoDB) and as
``tracker/degraded/unmatched`` or ``tracker/degraded/unstored``; the crawl then ends with
``status: degraded`` and a non-zero exit status (see :mod:`tracker.extensions`).
"""

from __future__ import annotations

import logging

from pymongo.errors import PyMongoError
from redis.exceptions import RedisError
from scrapy.statscollectors import StatsCollector

log = logging.getLogger(__name__)

SERVER_ERRORS = (RedisError, PyMongoError)


def count_failure(
    stats: StatsCollector, exc: Exception, url: str, what: str, degraded: str | None = None
) -> None:
    """Log and count a server failure met while processing ``url``; with ``degraded``
    (``unmatched`` or ``unstored``), the page's record is incomplete."""
    kind = "index" if isinstance(exc, RedisError) else "store"
    log.error("%s failed for %s: %s", what, url, exc)
    stats.inc_value(f"tracker/errors/{kind}")
    if degraded:
        stats.inc_value(f"tracker/degraded/{degraded}")
        stats.inc_value("tracker/degraded")
