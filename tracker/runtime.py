"""Connections to MongoDB and Redis, configured or embedded."""

from __future__ import annotations

from functools import cached_property

import pymongo
import redis
from pymongo.database import Database

from tracker import services
from tracker.config import Settings


class Runtime:
    """Lazily opened connections for one process; embedded servers start on first use."""

    def __init__(self, settings: Settings | None = None) -> None:
        self.settings = settings or Settings.load()

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
        return redis.Redis.from_url(self.redis_url, socket_timeout=30, health_check_interval=30)

    def close(self) -> None:
        if "mongo" in self.__dict__:
            self.mongo.close()
        if "redis" in self.__dict__:
            self.redis.close()
