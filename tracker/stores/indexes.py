"""Every MongoDB index the tracker queries through, in one table, created at start.

:func:`ensure_indexes` runs once per process, when :class:`tracker.servers.runtime.Runtime` first
opens the database (every command, the crawl, the scheduler): one ``listIndexes`` per collection
(about 0.5 ms each on SecantusDB), and a ``createIndexes`` only where one is missing, so it costs
next to nothing once they exist and never writes then. Processes starting together may both create a
missing index: ``createIndexes`` of an index that exists is a no-op.

Indexes no query reads any more (:data:`RETIRED`) are dropped where found, and a full index
where a partial one is declared is made again partial: each index costs SecantusDB an entry for
every document written (a crawl's matched page wrote 18 before, 13 now). Otherwise an index
counts as present when one with the same key pattern exists, whatever its name and
options: an operator's own variant is kept, never fought over (a library made before the index
on ``masters.n`` was plain keeps its unique one; before ``masters`` is sharded it must become a
plain one, since MongoDB enforces uniqueness across shards only for indexes prefixed by the
shard key; the counter hands out each ``n`` once).

The hot query each index serves is named beside it; docs/deployment.md ("MongoDB at scale") lists
them with the shard keys, and ``tests/test_scheduler.py::test_hot_queries_use_indexes``
explains them. Collections not listed (``counters``, ``clusters``, ``reports``,
``rematch_mark``, ``master_sources``, ``scheduler_jobs``, ``users``, ``render_sites``,
``discovery_queries``, ``discovery_days``, ``discovery_works``, ``discovery_results``) are
read by ``_id`` or whole.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass, field

from pymongo import ASCENDING, DESCENDING, IndexModel
from pymongo.database import Database
from pymongo.errors import OperationFailure

from tracker.stores.evidence import PENDING

log = logging.getLogger(__name__)

INDEX_NOT_FOUND = 27


def _index(
    *keys: tuple[str, int], unique: bool = False, only: Mapping[str, object] | None = None
) -> IndexModel:
    """An index on ``keys``; ``only``: a partial index, of the documents matching that filter
    (each query it serves names the same equality)."""
    options: dict[str, object] = {}
    if unique:
        options["unique"] = True
    if only:
        options["partialFilterExpression"] = dict(only)
    return IndexModel(list(keys), **options)


_PENDING = {"stamp.state": PENDING}

INDEXES: Mapping[str, tuple[IndexModel, ...]] = {
    "masters": (
        # detector: the candidates' texts ($in on n). Plain, not unique: the counter hands out
        # each n once, under the library's write lock, and a unique index costs SecantusDB a
        # probe a master stored (python -m bench.ingest_costs: see deploy/CAPACITY.md); a
        # sharded masters needs it plain anyway.
        _index(("n", ASCENDING)),
        _index(("work", ASCENDING)),  # report: chapters per work; index list --work
        # Not changed_in (rematch reads library_changes) nor added_at (no query): each index
        # costs SecantusDB ~0.07 ms a master stored (see tracker.stores.masters).
    ),
    "master_trash": (
        _index(("doc_id", ASCENDING)),  # index restore-deleted DOC_ID…
        _index(("work", ASCENDING)),  # index restore-deleted --work W
        _index(("expires_at", ASCENDING)),  # the expired ones, removed
    ),
    "library_journal": (
        _index(("version", ASCENDING)),  # open changes (an empty filter scans on SecantusDB)
    ),
    "pages": (
        _index(("site", ASCENDING), ("last_seen", DESCENDING)),  # a site's pages, newest first
        _index(("last_seen", DESCENDING)),  # pages seen since
        _index(("n", ASCENDING)),  # rematch: pages by page-index number, numbered above
        # rematch: pages whose matching failed (of those only: a page matched has no entry)
        _index(("match_state", ASCENDING), only={"match_state": "failed"}),
        _index(("stored_at", ASCENDING)),  # rematch: pages stored within its margin
    ),
    "matches": (
        _index(("url", ASCENDING)),  # crawl: a page's open matches (touch, close the others)
        _index(("doc_id", ASCENDING)),  # rematch, delete: open matches of masters
        _index(("last_seen", DESCENDING)),  # clustering: matches seen since a crawl started
    ),
    "page_days": (
        _index(("day", ASCENDING), ("site", ASCENDING)),  # report: the pages of a day
    ),
    "cluster_members": (
        _index(("cluster", ASCENDING)),  # the pages of a mirror group
    ),
    "rematch_runs": (
        _index(("finished_at", DESCENDING)),  # the latest runs
    ),
    "job_runs": (
        _index(("job", ASCENDING), ("started_at", DESCENDING)),  # a job's last runs
        _index(("status", ASCENDING)),  # runs cut short by a crash (running)
    ),
    "captures": (
        _index(("url", ASCENDING), ("at", DESCENDING)),  # export: a page's newest capture
        # evidence stamp --pending: stamps to retry; those failing for over
        # tsa_pending_alert_hours, to alert (of the pending ones only: a crawl's new capture,
        # stamp.state "none", has no entry)
        _index(("stamp.state", ASCENDING), ("stamp.failing_since", ASCENDING), only=_PENDING),
    ),
    "notices": (
        _index(("site", ASCENDING), ("created_at", DESCENDING)),  # a site's notices
        _index(("state", ASCENDING)),  # notices send: notices pending (SMTP was away)
    ),
    "takedowns": (
        _index(("site", ASCENDING)),  # a site's noticed URLs (notices, delisting)
        _index(("first_noticed", ASCENDING)),  # the report: URLs noticed by a day
    ),
    "alerts": (
        _index(("state", ASCENDING), ("next_at", ASCENDING)),  # the outbox: alerts due
    ),
    "crawl_runs": (
        _index(("finished_at", DESCENDING)),  # the latest crawls
        _index(("sites", ASCENDING), ("finished_at", DESCENDING)),  # console: a site's crawls
        _index(("crawl_id", ASCENDING)),  # crawl job: the workers' runs of its shared crawl
    ),
    "unread_pages": (
        _index(("site", ASCENDING)),  # crawl start: the site's pages still unread, asked again
    ),
    "unread_days": (
        _index(("day", ASCENDING), ("site", ASCENDING)),  # report: the day's unread pages
    ),
    "discovered_sites": (
        _index(("state", ASCENDING)),  # scheduler: the watched sites' crawls; console lists
        _index(("first_day", ASCENDING)),  # report: the sites first found on a day
    ),
}


# Indexes no query reads any more, dropped where found (each costs SecantusDB an entry for every
# document written; bench/results/crawl-store-h47.md): pages.content_hash and matches.first_seen
# (no query); captures.stamp.state (the stamps' partial compound index serves its queries).
RETIRED: Mapping[str, tuple[tuple[tuple[str, int], ...], ...]] = {
    "pages": ((("content_hash", ASCENDING),),),
    "matches": ((("first_seen", DESCENDING),),),
    "captures": ((("stamp.state", ASCENDING),),),
}


def key_of(keys: Mapping[str, object]) -> tuple[tuple[str, object], ...]:
    """A key pattern in comparable form: MongoDB may return ``1`` as ``1.0``."""
    return tuple(
        (field, int(kind) if isinstance(kind, int | float) else str(kind))
        for field, kind in keys.items()
    )


@dataclass
class Changes:
    """What a database's indexes lack (``missing``, by collection) and hold in excess
    (``obsolete``: index names, by collection)."""

    missing: dict[str, list[IndexModel]] = field(default_factory=dict)
    obsolete: dict[str, list[str]] = field(default_factory=dict)


def index_changes(db: Database) -> Changes:
    """The declared indexes ``db`` lacks and the ones it should drop: a :data:`RETIRED` one, or
    a full index where a partial one of the same key is declared (made before it was partial;
    it is made again partial). Any other index of a declared key counts as present."""
    changes = Changes()
    for name, models in INDEXES.items():
        present: dict[tuple, str] = {}
        obsolete = []
        retired = {key_of(dict(keys)) for keys in RETIRED.get(name, ())}
        for info in db[name].list_indexes():
            key = key_of(info["key"])
            if key in retired:
                obsolete.append(info["name"])
            elif info.get("partialFilterExpression") or not _partial(name, key):
                present[key] = info["name"]
            else:
                obsolete.append(info["name"])
        lacking = [model for model in models if key_of(model.document["key"]) not in present]
        if lacking:
            changes.missing[name] = lacking
        if obsolete:
            changes.obsolete[name] = obsolete
    return changes


def _partial(collection: str, key: tuple) -> bool:
    return any(
        key_of(model.document["key"]) == key and "partialFilterExpression" in model.document
        for model in INDEXES[collection]
    )


def missing_indexes(db: Database) -> dict[str, list[IndexModel]]:
    """The declared indexes that ``db`` lacks, by collection (a missing collection lacks
    them all)."""
    return index_changes(db).missing


def ensure_indexes(db: Database) -> list[str]:
    """Drop the obsolete indexes of ``db`` and create the declared ones it lacks; returns the
    ``collection.name`` of those created. A server that refuses (a user allowed only to read,
    as a report may run under) is logged, not raised: the queries still answer, slower. An
    index another process dropped first is left so."""
    changes = index_changes(db)
    dropped, created = [], []
    for name, indexes in changes.obsolete.items():
        for index in indexes:
            try:
                db[name].drop_index(index)
            except OperationFailure as exc:
                if exc.code != INDEX_NOT_FOUND:
                    log.warning("could not drop the index %s.%s: %s", name, index, exc)
                continue
            dropped.append(f"{name}.{index}")
    for name, models in changes.missing.items():
        try:
            names = db[name].create_indexes(models)
        except OperationFailure as exc:
            log.warning("could not create the indexes of %s (create them there): %s", name, exc)
            continue
        created += [f"{name}.{index}" for index in names]
    if dropped:
        log.info("dropped MongoDB indexes no query reads: %s", ", ".join(dropped))
    if created:
        log.info("created MongoDB indexes: %s", ", ".join(created))
    return created
