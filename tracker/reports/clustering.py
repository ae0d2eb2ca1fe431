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
from collections.abc import Container, Iterable, Sequence
from dataclasses import asdict, dataclass
from datetime import UTC, datetime

import numpy as np
import redis
from pymongo.database import Database

from tracker.batching import batches
from tracker.index.simhash_index import SimHashIndex
from tracker.index.storage import RedisStorage
from tracker.servers.redis_cluster import on_state_slot
from tracker.servers.runtime import Runtime
from tracker.stores.clusters import ClusterStore, Membership
from tracker.stores.pages import MatchStore, PagePrint, PageStore

log = logging.getLogger(__name__)

MAX_DISTANCE = 3
LOCK_TIMEOUT_S = 600
ASSIGN_BATCH = 1000  # pages clustered per round trip to the index and bulk write


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

    def add(self, centres: Sequence[tuple[int, int]]) -> None:
        """Index ``(cluster, centre fingerprint)`` pairs."""
        if centres:
            self._index.add(centres)
            self.client.incrby(self._count, len(centres))

    def nearest(self, fingerprint: int) -> tuple[int, int] | None:
        """``(cluster, distance)`` of the nearest centre within ``k`` bits (ties: the oldest
        cluster), or None."""
        return _nearest(self._index.query(fingerprint))

    def nearest_many(self, fingerprints: Sequence[int]) -> list[tuple[int, int] | None]:
        """:meth:`nearest` of each fingerprint, the index read in one round trip."""
        keys = [self._index.keys(fingerprint) for fingerprint in fingerprints]
        buckets = iter(self._storage.get([key for table_keys in keys for key in table_keys]))
        return [
            _nearest(self._index.within(fingerprint, [next(buckets) for _ in table_keys]))
            for fingerprint, table_keys in zip(fingerprints, keys, strict=True)
        ]

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
        self.client = client
        self.prefix = prefix
        self.store = ClusterStore(db)
        self.pages = PageStore(db)
        self.matches = MatchStore(db)
        self.index = CentreIndex(client, prefix + "cl:", k=k)

    @classmethod
    def from_runtime(cls, runtime: Runtime) -> PageClusterer:
        return cls(runtime.db, runtime.redis, runtime.settings.redis_prefix)

    def cluster_seen_since(self, since: datetime, until: datetime | None = None) -> ClusterSummary:
        """Cluster the pages with a match seen since ``since`` (and first seen before
        ``until``)."""
        urls = self.matches.urls_seen_since(since, first_seen_before=until)
        return self.cluster_urls(urls, seen_since=since)

    def cluster_urls(
        self, urls: Iterable[str], now: datetime | None = None, seen_since: datetime | None = None
    ) -> ClusterSummary:
        """Put each of these pages not yet clustered (or changed since) in its cluster;
        ``seen_since``: when they were likely all seen since then (a faster read of the pages,
        :meth:`~tracker.stores.pages.PageStore.prints`)."""
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
            pages = self._pages(urls, seen_since)
            summary.skipped = len(urls) - len(pages)  # matched, but the page is not stored
            todo = []  # (url, fingerprint, site), earliest first seen first
            for page in pages:
                if page.simhash is None:
                    summary.skipped += 1
                    continue
                member = memberships.get(page.url)
                if member is not None and member["simhash"] == page.simhash:
                    summary.unchanged += 1
                    continue
                todo.append((page.url, page.simhash, page.site))
            for chunk in batches(todo, ASSIGN_BATCH):
                self._assign(chunk, now, summary, memberships)
            self.index.compact()
        return summary

    def _pages(self, urls: list[str], seen_since: datetime | None) -> list[PagePrint]:
        """The stored pages among ``urls``, earliest first seen first."""
        pages = self.pages.prints(urls, seen_since)
        epoch = datetime.min.replace(tzinfo=UTC)
        pages.sort(key=lambda p: (_utc(p.first_seen) if p.first_seen else epoch, p.url))
        return pages

    def _assign(
        self,
        pages: list[tuple[str, int, str]],
        now: datetime,
        summary: ClusterSummary,
        memberships: Container[str],
    ) -> None:
        """Single-pass over ``pages`` (url, fingerprint, site), in order: each joins the
        nearest centre, or founds a cluster. The stored centres are looked up for all of them
        at once; a centre founded by an earlier page of the batch is newer than every stored
        one, so it wins only when strictly nearer (ties go to the oldest cluster, as one
        page at a time). Then the new clusters are stored (MongoDB first, then the index) and
        the memberships written in one bulk write."""
        found = self.index.nearest_many([fingerprint for _, fingerprint, _ in pages])
        founded: list[tuple[str, int, str]] = []  # new centres, in the order founded
        centres = np.empty(len(pages), dtype=np.uint64)  # their fingerprints
        # (url, fingerprint, site, stored cluster or None, new centre's number, distance)
        placed: list[tuple[str, int, str, int | None, int, int]] = []
        for (url, fingerprint, site), nearest in zip(pages, found, strict=True):
            if founded:
                distances = np.bitwise_count(centres[: len(founded)] ^ np.uint64(fingerprint))
                j = int(np.argmin(distances))  # the first of the nearest: the oldest
                distance = int(distances[j])
                if distance <= self.index.k and (nearest is None or distance < nearest[1]):
                    placed.append((url, fingerprint, site, None, j, distance))
                    continue
            if nearest is not None:
                placed.append((url, fingerprint, site, nearest[0], -1, nearest[1]))
                continue
            centres[len(founded)] = fingerprint
            placed.append((url, fingerprint, site, None, len(founded), 0))
            founded.append((url, fingerprint, site))
        ids = self.store.allocate_ids(len(founded))
        new = [(ids[j], fp, url, site) for j, (url, fp, site) in enumerate(founded)]
        self.store.create(new, now)  # MongoDB first: the index is rebuilt from it
        self.index.add([(cluster, fp) for cluster, fp, _, _ in new])
        self.store.assign(
            [
                Membership(url, ids[j] if cluster is None else cluster, fp, distance, site)
                for url, fp, site, cluster, j, distance in placed
            ],
            now,
            known=memberships,
        )
        summary.created += len(founded)
        summary.assigned += len(placed)


def _nearest(found: dict[int, int]) -> tuple[int, int] | None:
    """The nearest of ``{cluster: distance}`` (ties: the oldest cluster), or None."""
    if not found:
        return None
    cluster = min(found, key=lambda c: (found[c], c))
    return cluster, found[cluster]


def _utc(moment: datetime) -> datetime:
    return moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment.astimezone(UTC)
