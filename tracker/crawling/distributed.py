"""Distributed crawling: N ``scrapy crawl`` processes share one request queue in Redis.

Turned on by ``TRACKER_DISTRIBUTED=1`` (``-s`` or the environment). The
:class:`DistributedAddon` then swaps in scrapy-redis' scheduler and duplicate filter, connected to
``crawl_redis_url`` or else tracker's Redis (``REDIS_URL`` or the embedded server). scrapy-redis
talks to one server: with the index on a Redis Cluster (``redis_cluster``), the queue needs a
``crawl_redis_url`` of its own, a server that is not a cluster node. Every process of one crawl
pushes the links it finds into one sorted set (a priority queue) and pops its next request from it;
``ZRANGE``+``ZREMRANGEBYRANK`` in a transaction and ``SADD`` on the shared fingerprint set make
each request go to exactly one process, once.

scrapy-redis 0.9 works with Scrapy 2.19 as it is; :class:`SharedScheduler` only adapts it:

* keys live under tracker's Redis prefix, per crawl: ``<prefix>crawl:<crawl id>:requests`` and
  ``…:dupefilter``. The crawl id is ``TRACKER_CRAWL_ID`` or, by default, derived from the spider
  name and its start URLs, so processes started with the same arguments join the same crawl;
* the queue always persists while workers remain (scrapy-redis would flush it when the *first*
  process closes, under the feet of the others). Workers register in ``…:workers`` with the
  time they last had work; the last one to finish a crawl with an empty queue deletes the
  keys, so the next crawl starts afresh. An interrupted crawl keeps them and resumes when
  restarted;
* an idle worker stays open while another worker is busy (it may be fed new links) and
  closes once it has been idle for ``MAX_IDLE_TIME_BEFORE_CLOSE`` seconds (scrapy-redis' name
  for it) with no other worker busy.

A standing fleet of workers (``tracker crawl-worker``, one per machine or container) learns of
crawls from the board (:class:`tracker.crawling.crawl_board.CrawlBoard`) where the scheduler posts
each distributed crawl it runs, and joins them with ``TRACKER_CRAWL_JOIN``: a joining worker that
finds no worker registered (the crawl is over, or not begun) leaves at once instead of crawling the
site anew.
"""

from __future__ import annotations

import logging
import os
import re
import socket
import time
import uuid

import redis
from scrapy import Spider, signals
from scrapy.crawler import Crawler
from scrapy.exceptions import DontCloseSpider
from scrapy.http import Request
from scrapy.settings import BaseSettings
from scrapy_redis.dupefilter import RFPDupeFilter
from scrapy_redis.scheduler import Scheduler

from tracker.config import Settings
from tracker.crawling.crawl_board import JOIN_SETTING, crawl_keys, queue_redis_url

log = logging.getLogger(__name__)


def is_distributed(settings: BaseSettings) -> bool:
    return settings.getbool("TRACKER_DISTRIBUTED")


class DistributedAddon:
    """Scrapy add-on (``ADDONS``): configures scrapy-redis when ``TRACKER_DISTRIBUTED`` is on."""

    def update_settings(self, settings: BaseSettings) -> None:
        if not is_distributed(settings):
            return
        if settings.get("JOBDIR"):
            raise ValueError(
                "JOBDIR and TRACKER_DISTRIBUTED exclude each other: a distributed crawl keeps "
                "its queue in Redis and resumes from there"
            )
        if not settings.get("REDIS_URL"):
            settings.set("REDIS_URL", queue_redis_url(Settings.load()), priority="addon")
        settings.set("SCHEDULER", "tracker.crawling.distributed.SharedScheduler", priority="addon")
        settings.set("DUPEFILTER_CLASS", "scrapy_redis.dupefilter.RFPDupeFilter", priority="addon")
        settings.set("SCHEDULER_QUEUE_CLASS", "scrapy_redis.queue.PriorityQueue", priority="addon")
        # Requests queued as JSON, never pickled (see tracker.crawling.request_codec).
        settings.set("SCHEDULER_SERIALIZER", "tracker.crawling.request_codec", priority="addon")


def refuse_cluster_node(server: redis.Redis) -> None:
    """Raise if the queue's server is a Redis Cluster node: scrapy-redis would fail on every
    key another node serves (``MOVED``), request by request."""
    if int(server.info("cluster").get("cluster_enabled", 0)):
        raise ValueError(
            "the distributed crawl's Redis is a Redis Cluster node, which scrapy-redis cannot "
            "use: set crawl_redis_url (TRACKER_CRAWL_REDIS_URL) to a Redis server that is not "
            "a cluster node"
        )


def crawl_id_for(spider: Spider) -> str:
    """``TRACKER_CRAWL_ID``, else the spider's own ``crawl_id()``, else its name."""
    raw = spider.settings.get("TRACKER_CRAWL_ID") or (
        spider.crawl_id() if hasattr(spider, "crawl_id") else spider.name
    )
    return re.sub(r"[^A-Za-z0-9_.:-]", "_", str(raw))


class SharedScheduler(Scheduler):
    """scrapy-redis' scheduler with per-crawl keys under tracker's prefix, worker bookkeeping
    and idle close (see the module doc)."""

    crawler: Crawler
    worker_id: str
    keys_base: str

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> SharedScheduler:
        scheduler = super().from_crawler(crawler)
        scheduler.crawler = crawler
        scheduler.stats = None  # counted below: scrapy-redis passes a deprecated spider argument
        scheduler.worker_id = f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:6]}"
        scheduler.max_idle = crawler.settings.getfloat("MAX_IDLE_TIME_BEFORE_CLOSE", 30.0)
        scheduler.idle_since = None
        scheduler.declined = False
        scheduler._last_beat = 0.0
        crawler.signals.connect(scheduler.spider_idle, signal=signals.spider_idle)
        return scheduler

    def open(self, spider: Spider) -> None:
        refuse_cluster_node(self.server)
        self.keys_base = crawl_keys(Settings.load().redis_prefix, crawl_id_for(spider))
        self.queue_key = f"{self.keys_base}:requests"
        self.dupefilter_key = f"{self.keys_base}:dupefilter"
        self.df = RFPDupeFilter(
            self.server, key=self.dupefilter_key, debug=spider.settings.getbool("DUPEFILTER_DEBUG")
        )
        self.persist = True  # the last worker out cleans up, see close()
        super().open(spider)
        # A joining worker that finds nobody at work does nothing: the crawl is over (its
        # keys gone) or has not begun, and seeding its start pages would crawl the site anew.
        self.declined = spider.settings.getbool(JOIN_SETTING) and not self.live_workers()
        if self.declined:
            spider.logger.info("distributed crawl %s: no worker at it; not joining", self.keys_base)
            return
        self.server.zadd(self.workers_key, {self.worker_id: time.time()})
        spider.logger.info(
            "distributed crawl %s: worker %s, %d workers, %d requests queued",
            self.keys_base,
            self.worker_id,
            self.live_workers(),
            len(self.queue),
        )

    @property
    def workers_key(self) -> str:
        """Sorted set: worker id → when it last had work (a request popped or downloading)."""
        return f"{self.keys_base}:workers"

    def live_workers(self) -> int:
        return self.server.zcard(self.workers_key)

    def busy_others(self, within: float) -> int:
        """Other workers that had work in the last ``within`` seconds."""
        recent = self.server.zrangebyscore(self.workers_key, time.time() - within, "+inf")
        return sum(1 for w in recent if w.decode() != self.worker_id)

    def _beat(self, busy: bool) -> None:
        now = time.time()
        if busy and now - self._last_beat > 1.0:
            self.server.zadd(self.workers_key, {self.worker_id: now})
            self._last_beat = now

    def next_request(self):
        if self.declined:
            return None
        request = super().next_request()
        engine = getattr(self.crawler, "engine", None)
        downloading = bool(engine and engine.downloader.active)
        if request is not None:
            self.idle_since = None
            self.crawler.stats.inc_value("scheduler/dequeued/redis")
        self._beat(request is not None or downloading)
        return request

    def enqueue_request(self, request: Request) -> bool:
        if self.declined:
            return False
        queued = super().enqueue_request(request)
        if queued:
            self.crawler.stats.inc_value("scheduler/enqueued/redis")
        return queued

    def spider_idle(self, spider: Spider) -> None:
        """Keep an idle worker open while others work (they may feed it) and until it has
        been idle for ``MAX_IDLE_TIME_BEFORE_CLOSE`` seconds. Scrapy asks again every few
        seconds (the engine's heartbeat), pulling whatever was queued meanwhile."""
        if self.declined:
            return
        now = time.monotonic()
        if self.idle_since is None:
            self.idle_since = now
        idle = now - self.idle_since
        if idle < self.max_idle or self.busy_others(max(self.max_idle, 6.0)):
            raise DontCloseSpider
        spider.logger.info("idle for %.0f s, no other worker busy: closing", idle)

    def close(self, reason: str) -> None:
        if self.declined:
            return
        self.server.zrem(self.workers_key, self.worker_id)
        if reason == "finished" and self.live_workers() == 0 and len(self.queue) == 0:
            self.server.delete(self.queue_key, self.dupefilter_key, self.workers_key)
            log.info("distributed crawl %s finished: keys deleted", self.keys_base)
        else:
            log.info(
                "distributed crawl %s: worker %s left (%s); %d requests remain queued",
                self.keys_base,
                self.worker_id,
                reason,
                len(self.queue),
            )
