"""Connections to MongoDB and Redis, configured or embedded.

MongoDB may be a standalone server, a replica set (``replicaSet=`` in the URL, or a
``mongodb+srv://`` URL) or a sharded cluster's routers; nothing here assumes which. Writes
wait for ``mongo_write_concern`` (default ``majority``: an acknowledged match, counter or
journal entry survives a failover, where a ``w: 1`` write can be rolled back, and a rolled-back
counter would hand out a number twice); the URL's ``wTimeoutMS`` and ``journal`` are kept.
Everything that writes reads the primary, so it reads its own writes; only readers of settled
data (reports, lists) use ``mongo_read_preference`` (:attr:`Runtime.read_db`).
"""

from __future__ import annotations

import logging
import time
from functools import cached_property

import pymongo
import redis
from pymongo.database import Database
from pymongo.errors import ConfigurationError
from pymongo.read_preferences import (
    Nearest,
    Primary,
    PrimaryPreferred,
    ReadPreference,
    Secondary,
    SecondaryPreferred,
)
from pymongo.write_concern import WriteConcern

from tracker.config import ConfigError, Settings, check_cluster, parse_write_concern
from tracker.servers import services

log = logging.getLogger(__name__)

_READ_PREFERENCES = {
    "primary": Primary,
    "primaryPreferred": PrimaryPreferred,
    "secondary": Secondary,
    "secondaryPreferred": SecondaryPreferred,
    "nearest": Nearest,
}
_CONNECTIONS = ("mongo_url", "redis_url", "mongo", "db", "read_db", "redis")


class Runtime:
    """Lazily opened connections for one process; embedded servers start on first use.

    A long-lived process (a crawl, the scheduler) that loses a server calls :meth:`recover`:
    a dead embedded server is started again (on its old port when it is free, where the
    clients reconnect by themselves), and if it came back elsewhere the connections are
    opened anew; :attr:`generation` then changes, telling holders of objects built on the old
    connections to build them again.
    """

    def __init__(self, settings: Settings | None = None, indexes_ensured: bool = False) -> None:
        self.settings = settings or Settings.load()
        self.generation = 0
        #: True in a process whose parent has just ensured the indexes (a ``check --jsonl``
        #: worker): :attr:`db` does not list them again (~18 round trips, ~13 ms a process).
        self.indexes_ensured = indexes_ensured

    @cached_property
    def mongo_url(self) -> str:
        return self.settings.mongo_url or services.ensure_service(self.settings, "mongo")

    @cached_property
    def redis_url(self) -> str:
        return self.settings.redis_url or services.ensure_service(self.settings, "redis")

    @cached_property
    def mongo(self) -> pymongo.MongoClient:
        try:
            return pymongo.MongoClient(
                self.mongo_url, serverSelectionTimeoutMS=10_000, tz_aware=True
            )
        except ConfigurationError as exc:  # a bad option in the URL (InvalidURI too)
            url = services.mask_password(self.mongo_url)
            raise ConfigError(f"setting mongo_url (MONGO_URL)={url!r}: {exc}") from None

    @cached_property
    def db(self) -> Database:
        """The tracker's database, for everything that writes: the primary, the write concern
        of :meth:`write_concern`, and every index the stores query through (created at first
        use where missing: :func:`tracker.stores.indexes.ensure_indexes`)."""
        from tracker.stores.indexes import ensure_indexes  # the stores package loads 0.15 s

        db = self.mongo.get_database(
            self.settings.mongo_db,
            read_preference=ReadPreference.PRIMARY,
            write_concern=self.write_concern(),
        )
        if not self.indexes_ensured:
            ensure_indexes(db)
        return db

    @cached_property
    def read_db(self) -> Database:
        """The same database for readers of settled data (a report, a list): its read
        preference is ``mongo_read_preference``, else the URL's, else primary (with
        ``secondaryPreferred`` a replica set's secondaries serve them)."""
        return self.mongo.get_database(
            self.settings.mongo_db, read_preference=self.read_preference()
        )

    def write_concern(self) -> WriteConcern:
        """``mongo_write_concern``, else the URL's ``w=``, else ``majority``; the URL's other
        write concern options (``wTimeoutMS``, ``journal``) kept."""
        options = self.mongo.write_concern.document
        try:
            w = parse_write_concern(
                self.settings.mongo_write_concern or options.get("w") or "majority"
            )
        except ValueError as exc:  # the URL's w= (the setting was checked when loaded)
            raise ConfigError(f"the w= option of mongo_url (MONGO_URL): {exc}") from None
        return WriteConcern(w=w, wtimeout=options.get("wtimeout"), j=options.get("j"))

    def read_preference(self):
        """``mongo_read_preference``, else the URL's (with its tags), else primary."""
        mode = self.settings.mongo_read_preference
        return _READ_PREFERENCES[mode]() if mode else self.mongo.read_preference

    @cached_property
    def redis(self) -> redis.Redis:
        """The Redis client; with ``redis_cluster``, redis-py's cluster client on ``REDIS_URL``
        (see :mod:`tracker.servers.redis_cluster`: it has the same commands)."""
        if self.settings.redis_cluster:
            from tracker.servers.redis_cluster import connect

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
