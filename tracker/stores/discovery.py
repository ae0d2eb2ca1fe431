"""Discovery through search engines in MongoDB (see :mod:`tracker.discovery`).

``discovery_queries``: one document per query text run (``_id`` the query), with the ``work``
(and master ``doc_id``) it was made for and its ``kind`` (``title``, ``chapter``,
``sentence``); ``last_attempt`` and ``attempts``; ``done_at``, when it last got an answer that
counts (a query done within ``discover_requery_days`` is not run again; one that failed keeps
its earlier ``done_at`` and is run again next time); ``results`` (URLs it returned last),
``empty`` (answers in a row without a result) and ``last_error``.

``discovery_works``: when each work was last searched for (``at``), so that works take turns.

``discovery_days``: one document per UTC day (``_id`` ``YYYY-MM-DD``) counting the ``queries``
sent to the engine that day, against ``discover_queries_per_day``.

``discovery_results``: one document per result URL fetched and checked (``_id`` the URL), with
its ``site``, the ``query`` that first returned it, ``first_seen``, ``checked_at`` (a URL checked
within ``discover_requery_days`` is not fetched again) and ``outcome`` (``copy``, ``read``: no
copy on it; an unread page is not recorded, so it is fetched again next time).

``discovered_sites``: the site registry, one document per site (``_id`` its
:func:`~tracker.model.site_key`: the host, and the port when a URL names one), with its
``state`` (``candidate`` until someone decides, then ``watched``, ``ignored`` or ``licensed``),
``first_seen`` and ``first_day``, ``found_by`` (the query) and ``found_at`` (the page with the
copy found first), ``entries`` (pages with copies found: where its crawls start), ``pages`` and
``copies`` (its pages stored, and those carrying a copy, as last counted), ``sources``: the
book sources that name it (``tracker sources import``), and ``changes``: every change of state
``{at, state, by}``.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import UTC, datetime
from typing import Any

from pymongo import UpdateOne
from pymongo.database import Database

from tracker.batching import ID_BATCH, batches

CANDIDATE, WATCHED, IGNORED, LICENSED = "candidate", "watched", "ignored", "licensed"
STATES = (CANDIDATE, WATCHED, IGNORED, LICENSED)
#: Pages with copies a site keeps as the start pages of its crawls.
MAX_ENTRIES = 20


def _utc(moment: datetime | None) -> datetime | None:
    if moment is None:
        return None
    return moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment.astimezone(UTC)


class QueryStore:
    def __init__(self, db: Database) -> None:
        self.queries = db["discovery_queries"]
        self.days = db["discovery_days"]
        self.works = db["discovery_works"]

    def searched_at(self) -> dict[str, datetime]:
        """When each work was last searched for (one small document a work)."""
        return {str(doc["_id"]): _utc(doc["at"]) for doc in self.works.find({}) if doc.get("at")}

    def searched(self, work: str, now: datetime) -> None:
        self.works.update_one({"_id": work}, {"$set": {"at": now}}, upsert=True)

    def states(self, queries: Iterable[str]) -> dict[str, dict[str, Any]]:
        """The stored record of each query among ``queries`` that was ever run, by text."""
        found = {}
        for chunk in batches(sorted(set(queries)), ID_BATCH):
            for doc in self.queries.find({"_id": {"$in": chunk}}):
                doc["done_at"] = _utc(doc.get("done_at"))
                doc["last_attempt"] = _utc(doc.get("last_attempt"))
                found[doc["_id"]] = doc
        return found

    def spent(self, day: str) -> int:
        """Queries sent to the engine on ``day`` (``YYYY-MM-DD``)."""
        doc = self.days.find_one({"_id": day}, {"queries": 1})
        return int(doc.get("queries", 0)) if doc else 0

    def attempted(
        self,
        query: str,
        about: dict[str, Any],
        now: datetime,
        *,
        done: bool,
        results: list[str] | None = None,
        error: str = "",
        empty: bool = False,
    ) -> None:
        """Record one run of ``query`` (``about``: its ``work``, ``kind``, ``doc_id``): counted
        against the day's budget; ``done`` when its answer counts (not run again within the
        requery window); ``empty`` when it came back without a result."""
        fields: dict[str, Any] = {**about, "last_attempt": now, "last_error": error}
        if done:
            fields["done_at"] = now
        if results is not None:
            fields["results"] = results[:100]
        update: dict[str, Any] = {"$set": fields, "$inc": {"attempts": 1}}
        if empty:
            update["$inc"]["empty"] = 1
        elif results:
            fields["empty"] = 0
        self.queries.update_one({"_id": query}, update, upsert=True)
        self.days.update_one(
            {"_id": now.astimezone(UTC).date().isoformat()}, {"$inc": {"queries": 1}}, upsert=True
        )


class ResultStore:
    def __init__(self, db: Database) -> None:
        self.results = db["discovery_results"]

    def checked_since(self, urls: Iterable[str], moment: datetime) -> set[str]:
        """The URLs among ``urls`` checked at or after ``moment``."""
        found = set()
        for chunk in batches(sorted(set(urls)), ID_BATCH):
            for doc in self.results.find({"_id": {"$in": chunk}}, {"checked_at": 1}):
                checked = _utc(doc.get("checked_at"))
                if checked is not None and checked >= moment:
                    found.add(doc["_id"])
        return found

    def checked(self, results: Iterable[tuple[str, str, str, str]], now: datetime) -> None:
        """Record ``(url, site, query, outcome)`` results as checked now."""
        ops = [
            UpdateOne(
                {"_id": url},
                {
                    "$set": {"checked_at": now, "outcome": outcome, "site": site},
                    "$setOnInsert": {"first_seen": now, "query": query},
                    "$inc": {"checks": 1},
                },
                upsert=True,
            )
            for url, site, query, outcome in results
        ]
        if ops:
            self.results.bulk_write(ops, ordered=False)


class SiteRegistry:
    def __init__(self, db: Database) -> None:
        self.sites = db["discovered_sites"]

    def states(self, sites: Iterable[str]) -> dict[str, str]:
        """The state of each registered site among ``sites``."""
        found = {}
        for chunk in batches(sorted(set(sites)), ID_BATCH):
            for doc in self.sites.find({"_id": {"$in": chunk}}, {"state": 1}):
                found[doc["_id"]] = str(doc.get("state") or CANDIDATE)
        return found

    def get(self, site: str) -> dict[str, Any] | None:
        return self.sites.find_one({"_id": site})

    def found(
        self,
        site: str,
        *,
        query: str,
        url: str,
        entries: list[str],
        pages: int,
        copies: int,
        now: datetime,
    ) -> bool:
        """A discovery crawl found copies on ``site`` (first at ``url``, by ``query``): it is
        registered as a candidate if new, its ``entries`` added and its counts set. Returns
        True when the site is new, or had only been named by a book source: its first copy
        found makes it discovered that day (``first_day``, ``found_at``)."""
        stored = self.sites.find_one({"_id": site}, {"entries": 1, "found_at": 1})
        kept = list((stored or {}).get("entries") or ())
        kept += [url for url in entries if url not in kept]
        fields = {
            "entries": kept[:MAX_ENTRIES],
            "pages": pages,
            "copies": copies,
            "updated_at": now,
            "last_found": now,
        }
        named_only = stored is not None and not stored.get("found_at")
        if named_only:
            fields.update(found_at=url, first_day=now.astimezone(UTC).date().isoformat())
        update: dict[str, Any] = {"$set": fields}
        if stored is None:
            update["$setOnInsert"] = {**_new_site(now, query, "discovery"), "found_at": url}
        result = self.sites.update_one({"_id": site}, update, upsert=True)
        return result.upserted_id is not None or named_only

    def named(self, site: str, source: str, now: datetime) -> bool:
        """A book source names ``site`` (:mod:`tracker.booksources`): it is registered as a
        candidate if new, ``found_by`` the source; the source is added to its ``sources``.
        Returns True when the site is new."""
        result = self.sites.update_one(
            {"_id": site},
            {
                "$setOnInsert": _new_site(now, source, "book source"),
                "$addToSet": {"sources": source},
                "$set": {"updated_at": now},
            },
            upsert=True,
        )
        return result.upserted_id is not None

    def mark(self, site: str, state: str, by: str, now: datetime) -> dict[str, Any] | None:
        """Set ``site``'s state (one of :data:`STATES`), recording who did it; the site's
        document after the change, or None when it is not registered."""
        if state not in STATES:
            raise ValueError(f"{state!r} is not a site state ({', '.join(STATES)})")
        self.sites.update_one(
            {"_id": site},
            {
                "$set": {"state": state, "decided_by": by, "decided_at": now, "updated_at": now},
                "$push": {"changes": {"at": now, "state": state, "by": by}},
            },
        )
        return self.get(site)

    def with_state(self, *states: str) -> list[dict[str, Any]]:
        """The registered sites in these states (index ``state``), by site."""
        found = self.sites.find({"state": {"$in": list(states)}}, _LISTED)
        return sorted(found, key=lambda doc: doc["_id"])

    def first_seen_on(self, day: str) -> list[dict[str, Any]]:
        """The sites first found on ``day`` (``YYYY-MM-DD``; index ``first_day``), by site."""
        return sorted(self.sites.find({"first_day": day}, _LISTED), key=lambda doc: doc["_id"])

    def all(self) -> list[dict[str, Any]]:
        """Every registered site (a small collection: one document a site), by site."""
        return sorted(self.sites.find({}, _LISTED), key=lambda doc: doc["_id"])


_LISTED = {"changes": 0}


def _new_site(now: datetime, found_by: str, by: str) -> dict[str, Any]:
    """The fields a site gets when it is registered: a candidate, found by ``found_by``."""
    return {
        "state": CANDIDATE,
        "first_seen": now,
        "first_day": now.astimezone(UTC).date().isoformat(),
        "found_by": found_by,
        "changes": [{"at": now, "state": CANDIDATE, "by": by}],
    }
