"""Clusters of near-duplicate infringing pages in MongoDB (see :mod:`tracker.reports.clustering`).

``clusters``: one document per cluster, ``_id`` a small integer, with the centre's SimHash (the
founding page's, signed 64-bit like ``pages.simhash``) and that page's URL. ``cluster_members``:
one document per clustered page, ``_id`` = the page URL, with its cluster and the SimHash it
was clustered with (a page whose text changes is clustered again). MongoDB is the source of
truth; the Redis index of centres is rebuilt from it.
"""

from __future__ import annotations

from collections.abc import Container, Iterable, Iterator, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from pymongo.database import Database

from tracker.batching import ID_BATCH, batches
from tracker.fingerprints.document import to_signed, to_unsigned
from tracker.stores.counters import allocate
from tracker.stores.writes import Upsert, write


@dataclass(frozen=True)
class Membership:
    """A page in a cluster: its SimHash (unsigned) and its distance from the centre."""

    url: str
    cluster: int
    simhash: int
    distance: int
    site: str


class ClusterStore:
    def __init__(self, db: Database) -> None:
        self.clusters = db["clusters"]
        self.members = db["cluster_members"]
        self.counters = db["counters"]

    def allocate_ids(self, count: int) -> range:
        """``count`` new cluster ids, in one step."""
        return allocate(self.counters, "cluster_n", count)

    def create(self, clusters: Sequence[tuple[int, int, str, str]], now: datetime) -> None:
        """New clusters, each ``(id, centre SimHash, founding page's URL, its site)``."""
        if clusters:
            self.clusters.insert_many(
                [
                    {
                        "_id": cluster,
                        "simhash": to_signed(simhash),
                        "leader": url,
                        "site": site,
                        "created_at": now,
                    }
                    for cluster, simhash, url, site in clusters
                ]
            )

    def assign(self, members: Sequence[Membership], now: datetime, known: Container[str]) -> None:
        """Put each page in its cluster, in one bulk write: the pages among ``known`` (in a
        cluster already) are moved, the others inserted (:func:`tracker.stores.writes.write`)."""
        upserts = [
            Upsert(
                m.url,
                {
                    "cluster": m.cluster,
                    "simhash": to_signed(m.simhash),
                    "distance": m.distance,
                    "site": m.site,
                    "assigned_at": now,
                },
            )
            for m in members
        ]
        write(self.members, upserts, {m.url for m in members if m.url not in known})

    def memberships(self, urls: Iterable[str]) -> dict[str, dict[str, Any]]:
        """``url → {cluster, simhash (unsigned), …}`` for the clustered pages among ``urls``."""
        found = {}
        for chunk in batches(sorted(set(urls)), ID_BATCH):
            for doc in self.members.find({"_id": {"$in": chunk}}):
                doc["simhash"] = to_unsigned(doc["simhash"])
                found[doc["_id"]] = doc
        return found

    def cluster_of(self, urls: Iterable[str]) -> dict[str, int]:
        return {url: int(doc["cluster"]) for url, doc in self.memberships(urls).items()}

    def iter_centres(self) -> Iterator[tuple[int, int]]:
        """``(cluster id, centre SimHash unsigned)`` of every cluster."""
        for doc in self.clusters.find({}, {"simhash": 1}, batch_size=5000):
            yield int(doc["_id"]), to_unsigned(doc["simhash"])

    def count(self) -> int:
        return self.clusters.estimated_document_count()
