"""The distributed crawls running now, posted for a fleet of workers to join.

The scheduler's ``crawl:SITE`` job posts each distributed crawl it runs (its id, spider,
arguments and settings) on the :class:`CrawlBoard` and takes it down when its own process
ends; ``tracker crawl-worker`` processes read the board and join with the same arguments and
:data:`JOIN_SETTING`, under which a worker that finds nobody at the crawl leaves at once (see
:mod:`tracker.crawling.distributed`). Kept free of Scrapy, so the scheduler loads none of it.
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping
from typing import Any

import redis

from tracker.config import Settings

#: A worker started with this setting only joins a crawl in progress, never starts one.
JOIN_SETTING = "TRACKER_CRAWL_JOIN"


def crawl_keys(prefix: str, crawl_id: str) -> str:
    """Where a crawl's keys live: ``<prefix>crawl:<crawl id>`` (``…:requests``, ``…:workers``)."""
    return f"{prefix}crawl:{crawl_id}"


def queue_redis_url(settings: Settings) -> str:
    """The Redis of the shared queue: ``crawl_redis_url``, else tracker's own Redis (started
    when embedded), which must then not be a cluster: scrapy-redis talks to one server."""
    if settings.crawl_redis_url:
        return settings.crawl_redis_url
    if settings.redis_cluster:
        raise ValueError(
            "a distributed crawl keeps its queue with scrapy-redis, which does not speak Redis "
            "Cluster: set crawl_redis_url (TRACKER_CRAWL_REDIS_URL) to a Redis server that is "
            "not a cluster node"
        )
    from tracker.servers.runtime import Runtime  # starts the embedded server when needed

    return Runtime(settings).redis_url


def board_for(settings: Settings) -> CrawlBoard:
    """The board of ``settings``' crawls, on the Redis of their queues (:func:`queue_redis_url`:
    with the index on a cluster, the board and the workers' sets live beside the queues)."""
    return CrawlBoard(redis.Redis.from_url(queue_redis_url(settings)), settings.redis_prefix)


class CrawlBoard:
    """The distributed crawls running now, for workers to join: a sorted set
    ``<prefix>crawl:board`` of JSON entries (``id``, ``spider``, ``arguments``, ``settings``)
    scored by the time they go stale (the crawl's timeout), so a scheduler that died in a
    crawl leaves nothing posted for longer than that."""

    def __init__(self, client: redis.Redis, prefix: str) -> None:
        self.client = client
        self.prefix = prefix
        self.key = f"{prefix}crawl:board"

    def post(
        self,
        crawl_id: str,
        spider: str,
        arguments: Mapping[str, Any],
        settings: Mapping[str, Any],
        ttl: float,
    ) -> str:
        """Post a crawl starting now; returns its entry (for :meth:`remove`)."""
        entry = json.dumps(
            {"id": crawl_id, "spider": spider, "arguments": arguments, "settings": settings},
            sort_keys=True,
            ensure_ascii=False,
        )
        self.client.zadd(self.key, {entry: time.time() + ttl})
        return entry

    def remove(self, entry: str) -> None:
        self.client.zrem(self.key, entry)

    def close(self) -> None:
        self.client.close()

    def crawls(self) -> list[dict[str, Any]]:
        """The crawls posted and not stale, the soonest to go stale first, each with the
        time it goes stale (``until``, seconds since the epoch)."""
        now = time.time()
        self.client.zremrangebyscore(self.key, "-inf", now)
        posted = self.client.zrangebyscore(self.key, now, "+inf", withscores=True)
        return [{**json.loads(entry), "until": until} for entry, until in posted]

    def workers(self, crawl_id: str) -> int:
        """How many processes have the crawl open (the scheduler's own first; 0: over, or not
        begun)."""
        return int(self.client.zcard(f"{crawl_keys(self.prefix, crawl_id)}:workers"))
