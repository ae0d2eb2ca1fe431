"""Single-pass clustering of infringing pages by SimHash, so mirror copies become one group.

Single-pass (leader) clustering (Hill, "A vector clustering technique", 1968; used for on-line
event detection by Allan, Papka & Lavrenko, SIGIR 1998) takes the items one at a time: each
joins the nearest existing cluster whose centre is within the threshold, or founds a new
cluster with itself as the centre. Here an item is a page's 64-bit SimHash (Charikar, STOC
2002), the distance is the Hamming distance and the threshold ``k = 3`` bits, the near-duplicate
bound of Manku, Jain & Das Sarma (WWW 2007). A centre is its founding page's fingerprint and
never moves, so every member lies within ``k`` of its centre and within ``2k`` of every other
member, and a page keeps its group from one day's report to the next.

The nearest centre is found through a permuted-table index of the centres (the pigeonhole
tables of :class:`tracker.index.simhash_index.SimHashIndex`, kept in Redis), not by a scan of all
clusters: a lookup reads the C(b, b−k) table keys of the page's fingerprint and measures the
distance to the few centres filed there. Pages are taken in the order they were first seen, so
the earliest copy founds its group; each page is clustered once, and again only if its text
(and so its SimHash) changes.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from dataclasses import asdict, dataclass
from datetime import UTC, datetime

import redis
from pymongo.database import Database

from tracker.batching import batches
from tracker.fingerprints.document import to_unsigned
from tracker.index.simhash_index import SimHashIndex
from tracker.index.storage import RedisStorage
from tracker.model import site_of
from tracker.redis_cluster import on_state_slot
from tracker.runtime import Runtime
from tracker.stores.clusters import ClusterStore

log = logging.getLogger(__name__)

MAX_DISTANCE = 3
LOCK_TIMEOUT_S = 600
IN_BATCH = 1000


class CentreIndex:
    """Cluster centres in Redis, in the permuted-table SimHash index of the master library
    (:class:`tracker.index.simhash_index.SimHashIndex`), with a count of centres so a lost or
    stale index is noticed and rebuilt from MongoDB."""

    def __init__(
        self, client: redis.Redis, prefix: str, k: int = MAX_DISTANCE, blocks: int = 4
    ) -> None:
        self.client = client
        self.k = k
        self._storage = RedisStorage(client, prefix)
        self._index = SimHashIndex(self._storage, k=k, blocks=blocks, name="centres")
        self._count = on_state_slot(client, prefix + "count")

    def add(self, cluster: int, fingerprint: int) -> None:
        self._index.add([(cluster, fingerprint)])
        self.client.incr(self._count)

    def nearest(self, fingerprint: int) -> tuple[int, int] | None:
        """``(cluster, distance)`` of the nearest centre within ``k`` bits (ties: the oldest
        cluster), or None."""
        found = self._index.query(fingerprint)
        if not found:
            return None
        cluster = min(found, key=lambda c: (found[c], c))
        return cluster, found[cluster]

    def size(self) -> int:
        return int(self.client.get(self._count) or 0)

    def compact(self) -> None:
        self._storage.compact()

    def clear(self) -> None:
        self._storage.clear()

    def rebuild(self, centres: Iterable[tuple[int, int]]) -> int:
        self.clear()
        count = 0
        for batch in batches(centres, 1000):
            self._index.add(batch)
            count += len(batch)
        self._storage.compact()
        self.client.set(self._count, count)
        return count


@dataclass
class ClusterSummary:
    pages: int = 0  # pages looked at
    assigned: int = 0  # pages put in a cluster (new, or moved because their text changed)
    created: int = 0  # new clusters
    unchanged: int = 0  # already clustered with the same SimHash
    skipped: int = 0  # not stored, or without a SimHash

    def to_dict(self) -> dict[str, int]:
        return asdict(self)


class PageClusterer:
    def __init__(
        self, db: Database, client: redis.Redis, prefix: str, k: int = MAX_DISTANCE
    ) -> None:
        self.db = db
        self.client = client
        self.prefix = prefix
        self.store = ClusterStore(db)
        self.index = CentreIndex(client, prefix + "cl:", k=k)

    @classmethod
    def from_runtime(cls, runtime: Runtime) -> PageClusterer:
        return cls(runtime.db, runtime.redis, runtime.settings.redis_prefix)

    def cluster_seen_since(self, since: datetime, until: datetime | None = None) -> ClusterSummary:
        """Cluster the pages with a match seen since ``since`` (and first seen before
        ``until``)."""
        query = {"last_seen": {"$gte": since}}
        found = self.db["matches"].find(query, {"url": 1, "first_seen": 1})
        urls = {doc["url"] for doc in found if until is None or _utc(doc["first_seen"]) < until}
        return self.cluster_urls(urls)

    def cluster_urls(self, urls: Iterable[str], now: datetime | None = None) -> ClusterSummary:
        """Put each of these pages not yet clustered (or changed since) in its cluster."""
        urls = sorted(set(urls))
        summary = ClusterSummary(pages=len(urls))
        if not urls:
            return summary
        now = now or datetime.now(UTC)
        with self.client.lock(
            on_state_slot(self.client, self.prefix + "lock:cluster"),
            timeout=LOCK_TIMEOUT_S,
            blocking_timeout=LOCK_TIMEOUT_S,
        ):
            if self.index.size() != self.store.count():
                rebuilt = self.index.rebuild(self.store.iter_centres())
                log.info("rebuilt the index of cluster centres: %d clusters", rebuilt)
            memberships = self.store.memberships(urls)
            pages = self._pages(urls)
            summary.skipped = len(urls) - len(pages)  # matched, but the page is not stored
            for page in pages:
                fingerprint = page.get("simhash")
                if fingerprint is None:
                    summary.skipped += 1
                    continue
                fingerprint = to_unsigned(int(fingerprint))
                member = memberships.get(page["_id"])
                if member is not None and member["simhash"] == fingerprint:
                    summary.unchanged += 1
                    continue
                self._assign(
                    page["_id"], fingerprint, page.get("site") or site_of(page["_id"]), now, summary
                )
            self.index.compact()
        return summary

    def _pages(self, urls: list[str]) -> list[dict]:
        """The stored pages among ``urls``, earliest first seen first."""
        pages = []
        for chunk in batches(urls, IN_BATCH):
            pages += self.db["pages"].find(
                {"_id": {"$in": chunk}}, {"simhash": 1, "site": 1, "first_seen": 1}
            )
        epoch = datetime.min.replace(tzinfo=UTC)
        pages.sort(
            key=lambda p: (_utc(p["first_seen"]) if p.get("first_seen") else epoch, p["_id"])
        )
        return pages

    def _assign(
        self, url: str, fingerprint: int, site: str, now: datetime, summary: ClusterSummary
    ) -> None:
        nearest = self.index.nearest(fingerprint)
        if nearest is None:
            cluster, distance = self.store.allocate_id(), 0
            self.store.create(cluster, fingerprint, url, site, now)  # MongoDB first
            self.index.add(cluster, fingerprint)
            summary.created += 1
        else:
            cluster, distance = nearest
        self.store.assign(url, cluster, fingerprint, distance, site, now)
        summary.assigned += 1


def _utc(moment: datetime) -> datetime:
    return moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment.astimezone(UTC)
