"""Crawled pages and their matches in MongoDB.

``pages``: one document per URL (upserted), with the extracted text, a content hash so an
unchanged re-crawl adds nothing, and its *match state*: whether matching succeeded
(``match_state``: ``ok`` or ``failed``), the library version it was matched against
(``matched_version``), the masters it carries (``matched_doc_ids``), and ``n``, its number in
the page index (:mod:`tracker.index.page_index`), new for every new text.

``matches``: one document per (page URL, master doc id) with the score, coverage and evidence
passages; ``first_seen``/``last_seen`` record when the page was first and last seen carrying it,
``active`` whether its latest check still finds it (a match the page no longer carries is
*closed*: ``active: false``, ``closed_at``, its ``last_seen`` kept).

``page_days``: one document per page and UTC day it carried a match, with the doc ids its
latest check of that day found: a day's report lists exactly these.

Writes go matches first, page last: the page document is the commit point, so a page whose
matches could not be written keeps its old content hash (or none) and is matched again by the
next crawl.
"""

from __future__ import annotations

from collections.abc import Callable, Container, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from datetime import UTC, date, datetime
from typing import Any

from pymongo import UpdateMany, UpdateOne
from pymongo.database import Database

from tracker.batching import ID_BATCH, batches
from tracker.fingerprints.document import to_unsigned
from tracker.model import content_hash, site_of
from tracker.stores.counters import allocate, increment
from tracker.stores.writes import Upsert, write

OK, FAILED = "ok", "failed"


@dataclass
class PageRecord:
    url: str
    text: str
    title: str = ""
    extractor: str = ""
    status: int = 200
    simhash: int | None = None
    extra: dict[str, Any] = field(default_factory=dict)
    # Match state: the doc ids the page carries (None: matching failed), the library version
    # they were found against, and the page's number in the page index (for a new text).
    matched: list[str] | None = field(default_factory=list)
    library_version: int = 0
    n: int | None = None
    content_hash: str | None = None  # of ``text``, when known already


@dataclass(frozen=True)
class PagePrint:
    """A stored page's SimHash (unsigned; None when it has none), site and first sighting."""

    url: str
    simhash: int | None
    site: str
    first_seen: datetime | None


class PageStore:
    def __init__(self, db: Database) -> None:
        self.pages = db["pages"]
        self.counters = db["counters"]

    def allocate_n(self) -> int:
        """A new page number for the page index."""
        return increment(self.counters, "page_n")

    def allocate_ns(self, count: int) -> range:
        """``count`` new page numbers in one step."""
        return allocate(self.counters, "page_n", count)

    def state(self, url: str) -> dict[str, Any] | None:
        """The stored page's content hash and match state, or None."""
        return self.states([url]).get(url)

    def states(self, urls: Iterable[str]) -> dict[str, dict[str, Any]]:
        """:meth:`state` of the stored pages among ``urls``, by URL (ids read in lists of
        ``ID_BATCH``)."""
        found = {}
        for chunk in batches(sorted(set(urls)), ID_BATCH):
            found.update(
                (doc["_id"], doc) for doc in self.pages.find({"_id": {"$in": chunk}}, _STATE)
            )
        return found

    def known_hashes(self, urls: Iterable[str]) -> dict[str, str]:
        """The content hash of the stored pages among ``urls``, by URL."""
        return {
            url: doc["content_hash"]
            for url, doc in self.states(urls).items()
            if doc.get("content_hash")
        }

    def save(self, page: PageRecord, now: datetime | None = None) -> bool:
        """Upsert ``page`` with its match state; returns True when its content is new or
        changed."""
        return self.save_many([page], now)[0]

    def save_many(
        self,
        pages: list[PageRecord],
        now: datetime | None = None,
        known: Mapping[str, dict[str, Any] | None] | None = None,
    ) -> list[bool]:
        """:meth:`save` for several pages: one read of their stored hashes, one bulk write
        (inserts for the new pages, see :mod:`tracker.stores.writes`). ``known``: the stored
        state (:meth:`states`; None: not stored) of pages the caller has just read, which are
        not read again (a crawl's unchanged stage read them; a page stored meanwhile by
        another process is met by its insert and upserted, see :func:`write`)."""
        now = now or datetime.now(UTC)
        known = known or {}
        stored = {url: doc.get("content_hash") for url, doc in known.items() if doc is not None}
        unknown = [page.url for page in pages if page.url not in known]
        for chunk in batches(unknown, ID_BATCH):
            for doc in self.pages.find({"_id": {"$in": chunk}}, {"content_hash": 1}):
                stored[doc["_id"]] = doc.get("content_hash")
        upserts: list[Upsert] = []
        changes = []
        for page in pages:
            digest = page.content_hash or content_hash(page.text)
            changed = stored.get(page.url) != digest
            fields: dict[str, Any] = {
                "last_seen": now,
                "status": page.status,
                "stored_at": now,
                "match_state": OK if page.matched is not None else FAILED,
                "matched_version": page.library_version,
            }
            if page.matched is not None:
                fields["matched_doc_ids"] = list(page.matched)
            if page.n is not None:
                fields["n"] = page.n
            if changed:
                fields.update(
                    {
                        "text": page.text,
                        "title": page.title,
                        "content_hash": digest,
                        "extractor": page.extractor,
                        "simhash": page.simhash,
                        "changed_at": now,
                        **page.extra,
                    }
                )
            first = {"first_seen": now, "site": site_of(page.url)}
            upserts.append(Upsert(page.url, fields, first))
            changes.append(changed)
        write(self.pages, upserts, {page.url for page in pages} - stored.keys())
        return changes

    def set_matched(
        self, pages: list[tuple[str, list[str], int | None]], version: int, now: datetime
    ) -> None:
        """Record successful (re)matches of stored pages: ``(url, doc ids, new page number or
        None)`` each, in one bulk write."""
        ops = []
        for url, doc_ids, n in pages:
            fields: dict[str, Any] = {
                "match_state": OK,
                "matched_version": version,
                "matched_doc_ids": doc_ids,
                "stored_at": now,
            }
            if n is not None:
                fields["n"] = n
            ops.append(UpdateOne({"_id": url}, {"$set": fields}))
        if ops:
            self.pages.bulk_write(ops, ordered=False)

    def touch(self, url: str, now: datetime | None = None, status: int | None = None) -> bool:
        """Record that ``url`` was seen again, unchanged; returns False when it is not stored."""
        return self.touch_many([(url, status)], now) > 0

    def touch_many(
        self, pages: Iterable[tuple[str, int | None]], now: datetime | None = None
    ) -> int:
        """:meth:`touch` of several ``(url, status or None)`` in one bulk write; returns how
        many of them are stored."""
        now = now or datetime.now(UTC)
        ops = []
        for url, status in pages:
            fields: dict[str, Any] = {"last_seen": now}
            if status is not None:
                fields["status"] = status
            ops.append(UpdateOne({"_id": url}, {"$set": fields}))
        return self.pages.bulk_write(ops, ordered=False).matched_count if ops else 0

    # Pages to match again (tracker rematch): each with its text, number and match state
    # (``_id``, ``text``, ``n``, ``matched_version``, ``stored_at``, ``match_state``,
    # ``matched_doc_ids``).

    def by_ns(self, ns: Iterable[int]) -> list[dict]:
        """The stored pages whose current page number is one of ``ns``."""
        found = []
        for chunk in batches(sorted({int(n) for n in ns}), ID_BATCH):
            found += self.pages.find({"n": {"$in": chunk}}, _TO_MATCH)
        return found

    def by_urls(self, urls: Iterable[str]) -> list[dict]:
        """The stored pages among ``urls``, in URL order."""
        found = []
        for chunk in batches(sorted(set(urls)), ID_BATCH):
            found += self.pages.find({"_id": {"$in": chunk}}, _TO_MATCH)
        return sorted(found, key=lambda page: page["_id"])

    def failed(self) -> list[dict]:
        """Pages whose matching failed."""
        return list(self.pages.find({"match_state": FAILED}, _TO_MATCH))

    def stored_since(self, moment: datetime) -> list[dict]:
        """Pages stored (or matched again) at or after ``moment``."""
        return list(self.pages.find({"stored_at": {"$gte": moment}}, _TO_MATCH))

    def matched_versions(self, stored_since: datetime | None = None) -> Iterator[int]:
        """The library version each page (stored at or after ``stored_since``) was matched
        against, read as it is used; pages whose matching failed are left out."""
        query = {} if stored_since is None else {"stored_at": {"$gte": stored_since}}
        for page in self.pages.find(query, {"matched_version": 1, "match_state": 1}):
            if page.get("match_state") != FAILED:
                yield int(page.get("matched_version") or 0)

    # Pages to file in the page index: ``_id``, ``text`` and ``n``.

    def with_n_above(self, n: int) -> list[dict]:
        """Pages whose page number is above ``n`` (filed after it)."""
        return list(self.pages.find({"n": {"$gt": n}}, _TO_FILE))

    def iter_texts(self) -> Iterator[dict]:
        """Every stored page, read as it is used."""
        return iter(self.pages.find({}, _TO_FILE))

    def number(self, url: str, n: int) -> None:
        """Give stored page ``url`` page number ``n`` (a page filed for the first time)."""
        self.pages.update_one({"_id": url}, {"$set": {"n": n}})

    def max_n(self) -> int:
        """The highest page number handed out (a sort on ``n`` would read the whole index on
        SecantusDB)."""
        doc = self.counters.find_one({"_id": "page_n"})
        return int(doc["seq"]) if doc else 0

    def prints(self, urls: Iterable[str], seen_since: datetime | None = None) -> list[PagePrint]:
        """:class:`PagePrint` of the stored pages among ``urls`` (ids read in lists of
        ``ID_BATCH``). With ``seen_since``, when the pages were likely all seen since then (a
        crawl's matched pages, at its close), they are read first from one range of the
        ``last_seen`` index, at most twice as many pages as ``urls`` (SecantusDB reads a range
        at less than half the cost a page of ``$in`` lists: 1,000 pages 0.11-0.17 s against
        0.26-0.34 s), and only those not found there by id."""
        wanted = set(urls)
        found: dict[str, PagePrint] = {}
        if seen_since is not None and wanted:
            seen = self.pages.find({"last_seen": {"$gte": seen_since}}, _PRINT)
            for doc in seen.limit(2 * len(wanted)):
                if doc["_id"] in wanted:
                    found[doc["_id"]] = _page_print(doc)
        for chunk in batches(sorted(wanted - found.keys()), ID_BATCH):
            for doc in self.pages.find({"_id": {"$in": chunk}}, _PRINT):
                found[doc["_id"]] = _page_print(doc)
        return list(found.values())

    def titles(self, urls: Iterable[str]) -> dict[str, str]:
        """The titles of the stored pages among ``urls``, by URL (pages never stored are left
        out)."""
        titles = {}
        for chunk in batches(sorted(set(urls)), ID_BATCH):
            for doc in self.pages.find({"_id": {"$in": chunk}}, {"title": 1}):
                titles[doc["_id"]] = str(doc.get("title") or "")
        return titles

    def files(self, urls: Iterable[str]) -> dict[str, dict[str, Any]]:
        """What the stored download files among ``urls`` are (name, size, SHA-256, members,
        chapters: :mod:`tracker.files`), by URL; pages are left out."""
        found = {}
        for chunk in batches(sorted(set(urls)), ID_BATCH):
            query = {"_id": {"$in": chunk}, "file": {"$exists": True}}
            for doc in self.pages.find(query, {"file": 1}):
                found[doc["_id"]] = dict(doc["file"])
        return found

    def matched_doc_ids(self) -> dict[str, list[str]]:
        """Every stored page's URL with the masters it carries (a scan: for small stores, such
        as the demo's)."""
        found = self.pages.find({}, {"matched_doc_ids": 1})
        return {doc["_id"]: list(doc.get("matched_doc_ids") or []) for doc in found}

    def details(self, url: str) -> dict[str, Any] | None:
        """The stored page as the console shows it, without its text and fingerprints:
        ``_id`` (the URL), ``title``, ``site``, ``status``, ``extractor``, ``first_seen``,
        ``last_seen``, ``changed_at``, ``match_state``, ``matched_doc_ids`` (and ``file``, for
        a download file); None when it is not stored."""
        return self.pages.find_one({"_id": url}, _DETAILS)

    def count(self) -> int:
        return self.pages.estimated_document_count()

    def matched_on(self, site: str) -> list[str]:
        """The URLs of ``site``'s pages that carried a match at their latest check (index
        ``site, last_seen``)."""
        # The site alone in the filter: SecantusDB plans a filter of two fields as a scan.
        found = self.pages.find({"site": site}, {"matched_doc_ids": 1})
        return [doc["_id"] for doc in found if doc.get("matched_doc_ids")]


_DETAILS = dict.fromkeys(
    (
        "title",
        "site",
        "status",
        "extractor",
        "first_seen",
        "last_seen",
        "changed_at",
        "match_state",
        "matched_doc_ids",
        "file",  # a download file's name, size, SHA-256, members (tracker.files)
    ),
    1,
)
_PRINT = {"simhash": 1, "site": 1, "first_seen": 1}


def _page_print(doc: dict[str, Any]) -> PagePrint:
    simhash = doc.get("simhash")
    return PagePrint(
        doc["_id"],
        None if simhash is None else to_unsigned(int(simhash)),
        doc.get("site") or site_of(doc["_id"]),
        doc.get("first_seen"),
    )


_TO_FILE = {"text": 1, "n": 1, "stored_at": 1}  # filed in the generation of its time
_TO_MATCH = dict.fromkeys(
    ("text", "n", "matched_version", "stored_at", "match_state", "matched_doc_ids"), 1
)
_STATE = {
    "content_hash": 1,
    "match_state": 1,
    "matched_version": 1,
    "matched_doc_ids": 1,
    "stored_at": 1,
    "n": 1,
}


def _utc(moment: datetime) -> datetime:
    """``moment`` in UTC (a naive one, as MongoDB returns without ``tz_aware``, taken as
    UTC)."""
    return moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment.astimezone(UTC)


def day_of(moment: datetime) -> str:
    """The UTC day of ``moment``, ``YYYY-MM-DD``."""
    return _utc(moment).date().isoformat()


class MatchStore:
    def __init__(self, db: Database) -> None:
        self.matches = db["matches"]
        self.page_days = db["page_days"]

    def record(
        self, url: str, matches: list[dict[str, Any]], now: datetime | None = None
    ) -> tuple[int, int]:
        """What a check of page ``url`` found now: its matches are upserted (reopened if they
        had been closed), the page's other open matches closed, and the day's record of the
        page set to these. Returns (new matches, closed matches)."""
        return self.record_many({url: matches}, now)

    def record_many(
        self,
        found: dict[str, list[dict[str, Any]]],
        now: datetime | None = None,
        on_new: Callable[[list[tuple[str, dict[str, Any]]]], None] | None = None,
        unstored: Container[str] = (),
    ) -> tuple[int, int]:
        """:meth:`record` for several pages: one read of their stored matches, then bulk writes
        of the matches found, of those closed and of the days' records; returns the totals.
        ``on_new`` is given the ``(url, match)`` pairs never stored before, ahead of the
        writes (the alert outbox is written first: a crash in between finds them new again).
        ``unstored``: URLs the caller found no page stored for, whose day records are written
        as inserts without a read (see :meth:`_write_days`)."""
        now = now or datetime.now(UTC)
        carried = {url: [str(m["doc_id"]) for m in matches] for url, matches in found.items()}
        stored = self._stored_matches(found)
        upserts, closes = [], []
        for url, matches in found.items():
            site = site_of(url)
            upserts += [
                Upsert(
                    f"{url}\x00{match['doc_id']}",
                    {
                        **{k: v for k, v in match.items() if k != "doc_id"},
                        "site": site,
                        "doc_id": str(match["doc_id"]),
                        "last_seen": now,
                        "active": True,
                    },
                    {"first_seen": now},
                    unset=("closed_at",),
                    key={"url": url},  # matches are sharded by URL: a write names its shard
                )
                for match in matches
            ]
            # The page's open matches of other masters are closed, by _id (no query per page).
            closes += [
                UpdateOne(
                    {"_id": doc["_id"], "url": url, "active": {"$ne": False}},
                    {"$set": {"active": False, "closed_at": now}},
                )
                for doc in stored.get(url, ())
                if doc.get("active") is not False and str(doc["doc_id"]) not in carried[url]
            ]
        existing = {doc["_id"] for docs in stored.values() for doc in docs}
        if on_new is not None:
            fresh = [
                (url, match)
                for url, matches in found.items()
                for match in matches
                if f"{url}\x00{match['doc_id']}" not in existing
            ]
            if fresh:
                on_new(fresh)
        new = write(self.matches, upserts, {upsert._id for upsert in upserts} - existing)
        closed = self.matches.bulk_write(closes, ordered=False).modified_count if closes else 0
        # The day's record of every page that carries a match now, and (when matches were
        # closed) of those that lost them all; not of pages that carried nothing and still do.
        days = [(url, ids) for url, ids in carried.items() if ids or closed]
        self._write_days(days, now, unstored)
        return new, closed

    def _stored_matches(self, urls: Iterable[str]) -> dict[str, list[dict[str, Any]]]:
        """The stored matches of these pages, open or closed (``_id``, ``doc_id``, ``active``),
        by URL: one indexed query per chunk of URLs."""
        stored: dict[str, list[dict[str, Any]]] = {}
        for chunk in batches(sorted(set(urls)), ID_BATCH):
            query = {"url": {"$in": chunk}}
            for doc in self.matches.find(query, {"url": 1, "doc_id": 1, "active": 1}):
                stored.setdefault(doc["url"], []).append(doc)
        return stored

    def touch(self, url: str, now: datetime | None = None) -> list[str]:
        """Mark the open matches of an unchanged page as seen again; returns their doc ids."""
        return self.touch_many([url], now)[url]

    def touch_many(self, urls: Iterable[str], now: datetime | None = None) -> dict[str, list[str]]:
        """:meth:`touch` of several pages: one query, one update and one bulk write for all;
        the doc ids by URL."""
        now = now or datetime.now(UTC)
        carried: dict[str, list[str]] = {url: [] for url in urls}
        for chunk in batches(sorted(carried), ID_BATCH):
            open_matches = {"url": {"$in": chunk}, "active": {"$ne": False}}
            for doc in self.matches.find(open_matches, {"url": 1, "doc_id": 1}):
                carried[doc["url"]].append(str(doc["doc_id"]))
            seen = [url for url in chunk if carried[url]]
            if seen:
                self.matches.update_many(
                    {"url": {"$in": seen}, "active": {"$ne": False}}, {"$set": {"last_seen": now}}
                )
                self._write_days([(url, carried[url]) for url in seen], now)
        return carried

    def close_doc(self, doc_id: str, now: datetime | None = None) -> int:
        """Close every open match of master ``doc_id`` (deleted from the library)."""
        result = self.matches.update_many(
            {"doc_id": doc_id, "active": {"$ne": False}},
            {"$set": {"active": False, "closed_at": now or datetime.now(UTC)}},
        )
        return result.modified_count

    def set_capture(self, captures: dict[str, tuple[str, str]]) -> None:
        """Name each page's evidence (``url → (capture id, payload SHA-256)``) on its open
        matches (index ``url``)."""
        ops = [
            UpdateMany(
                {"url": url, "active": {"$ne": False}},
                {"$set": {"capture_id": capture_id, "payload_sha256": digest}},
            )
            for url, (capture_id, digest) in captures.items()
        ]
        if ops:
            self.matches.bulk_write(ops, ordered=False)

    def open_of(self, urls: Iterable[str]) -> list[dict]:
        """The open matches of these pages (index ``url``)."""
        found = []
        for chunk in batches(sorted(set(urls)), ID_BATCH):
            found += self.matches.find({"url": {"$in": chunk}, "active": {"$ne": False}})
        return found

    def open_urls(self, doc_ids: Iterable[str]) -> set[str]:
        """Pages with an open match of one of these masters."""
        urls: set[str] = set()
        for chunk in batches(sorted(set(doc_ids)), ID_BATCH):
            query = {"doc_id": {"$in": chunk}, "active": {"$ne": False}}
            urls.update(doc["url"] for doc in self.matches.find(query, {"url": 1}))
        return urls

    def _write_days(
        self, pages: list[tuple[str, list[str]]], now: datetime, unstored: Container[str] = ()
    ) -> None:
        """Set the day's record of each page ``(url, doc ids)`` to these doc ids. The records
        of pages among ``unstored`` are not looked for: a page not stored has none, but for
        one a crash left between its day's record and its page, which the insert meets and
        redoes as its upsert (:func:`tracker.stores.writes.write`)."""
        day = day_of(now)
        upserts = [
            Upsert(
                f"{day} {url}",
                {"day": day, "url": url, "site": site_of(url), "doc_ids": doc_ids, "at": now},
            )
            for url, doc_ids in pages
        ]
        ids = [upsert._id for upsert in upserts]
        existing = set()
        looked_for = [i for i, (url, _) in zip(ids, pages, strict=True) if url not in unstored]
        for chunk in batches(looked_for, ID_BATCH):
            found = self.page_days.find({"_id": {"$in": chunk}}, {"_id": 1})
            existing.update(doc["_id"] for doc in found)
        write(self.page_days, upserts, set(ids) - existing)

    def carried_on(self, day: date) -> list[dict]:
        """The day's record of every page that carried a match on ``day``: ``url``, ``site``,
        ``doc_ids`` (found by its latest check that day; empty if it lost them all), ``at``."""
        return list(self.page_days.find({"day": day.isoformat()}))

    def urls_seen_since(
        self, since: datetime, first_seen_before: datetime | None = None
    ) -> set[str]:
        """The pages with a match seen since ``since`` (its ``last_seen`` index), and first
        seen before ``first_seen_before`` when given."""
        found = self.matches.find({"last_seen": {"$gte": since}}, {"url": 1, "first_seen": 1})
        return {
            doc["url"]
            for doc in found
            if first_seen_before is None or _utc(doc["first_seen"]) < first_seen_before
        }

    def of_page(self, url: str) -> list[dict[str, Any]]:
        """Every match stored for page ``url``, open or closed, without ``_id`` (its ``url``
        index)."""
        return list(self.matches.find({"url": url}, {"_id": 0}))

    def by_ids(self, keys: Iterable[tuple[str, str]]) -> list[dict]:
        """The match documents of these (url, doc id) pairs."""
        found = []
        for chunk in batches(sorted({f"{url}\x00{doc_id}" for url, doc_id in keys}), ID_BATCH):
            found += self.matches.find({"_id": {"$in": chunk}})
        return found
