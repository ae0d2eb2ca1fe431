"""Connections to MongoDB and Redis, configured or embedded."""

from __future__ import annotations

import logging
import time
from functools import cached_property

import pymongo
import redis
from pymongo.database import Database

from tracker import services
from tracker.config import Settings, check_cluster

log = logging.getLogger(__name__)

_CONNECTIONS = ("mongo_url", "redis_url", "mongo", "db", "redis")


class Runtime:
    """Lazily opened connections for one process; embedded servers start on first use.

    A long-lived process (a crawl, the scheduler) that loses a server calls :meth:`recover`:
    a dead embedded server is started again (on its old port when it is free, where the
    clients reconnect by themselves), and if it came back elsewhere the connections are
    opened anew; :attr:`generation` then changes, telling holders of objects built on the old
    connections to build them again.
    """

    def __init__(self, settings: Settings | None = None) -> None:
        self.settings = settings or Settings.load()
        self.generation = 0

    @cached_property
    def mongo_url(self) -> str:
        return self.settings.mongo_url or services.ensure_service(self.settings, "mongo")

    @cached_property
    def redis_url(self) -> str:
        return self.settings.redis_url or services.ensure_service(self.settings, "redis")

    @cached_property
    def mongo(self) -> pymongo.MongoClient:
        return pymongo.MongoClient(self.mongo_url, serverSelectionTimeoutMS=10_000, tz_aware=True)

    @cached_property
    def db(self) -> Database:
        return self.mongo[self.settings.mongo_db]

    @cached_property
    def redis(self) -> redis.Redis:
        """The Redis client; with ``redis_cluster``, redis-py's cluster client on ``REDIS_URL``
        (see :mod:`tracker.redis_cluster`: it has the same commands)."""
        if self.settings.redis_cluster:
            from tracker.redis_cluster import connect

            check_cluster(self.settings)
            return connect(self.redis_url, socket_timeout=30, health_check_interval=30)
        return redis.Redis.from_url(self.redis_url, socket_timeout=30, health_check_interval=30)

    def recover(self, pause: float = 1.0) -> bool:
        """After a connection error: bring back the embedded servers that died (external ones
        are only waited for, ``pause`` seconds) and reconnect. Returns True when the
        connections were opened anew (their objects must be rebuilt)."""
        moved = False
        for name, configured in (
            ("mongo", self.settings.mongo_url),
            ("redis", self.settings.redis_url),
        ):
            key = f"{name}_url"
            if configured or key not in self.__dict__:
                continue
            try:
                url = services.ensure_service(self.settings, name)
            except services.ServiceError as exc:
                log.error("could not restart the embedded %s server: %s", name, exc)
                continue
            if url != self.__dict__[key]:
                log.warning("embedded %s server is back at %s", name, services.mask_password(url))
                moved = True
        if moved:
            self.close()
            for attribute in _CONNECTIONS:
                self.__dict__.pop(attribute, None)
            self.generation += 1
        elif pause:
            time.sleep(pause)
        return moved

    def close(self) -> None:
        if "mongo" in self.__dict__:
            self.mongo.close()
        if "redis" in self.__dict__:
            self.redis.close()
