"""tracker.stores.writes and the stores that write through it, on the real MongoDB server."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from pymongo import MongoClient, monitoring
from pymongo.errors import BulkWriteError

from tracker.stores.pages import MatchStore, PageRecord, PageStore
from tracker.stores.writes import Upsert, write

T0 = datetime(2031, 3, 2, 8, 0, tzinfo=UTC)


def test_new_ids_are_inserted_and_the_others_upserted(runtime):
    docs = runtime.db["writes_test"]
    docs.insert_one({"_id": "old", "a": 0, "first": "kept", "gone": 1})
    upserts = [
        Upsert("old", {"a": 1}, {"first": "new"}, unset=("gone",)),
        Upsert("new", {"a": 2}, {"first": "new"}, unset=("gone",), key={"site": "s"}),
    ]
    assert write(docs, upserts, {"new"}) == 1
    assert docs.find_one({"_id": "old"}) == {"_id": "old", "a": 1, "first": "kept"}
    assert docs.find_one({"_id": "new"}) == {"_id": "new", "site": "s", "a": 2, "first": "new"}


def test_an_id_stored_meanwhile_is_written_as_its_upsert_would_have(runtime):
    """Another process stored ``raced`` between the read and the write: the insert fails on
    the duplicate key and is redone as the upsert (fields set, the first values kept, the
    unset ones removed); it is not counted as created."""
    docs = runtime.db["writes_test"]
    docs.insert_one({"_id": "raced", "a": 0, "first": "theirs", "gone": 1})
    upserts = [
        Upsert("raced", {"a": 1}, {"first": "ours"}, unset=("gone",)),
        Upsert("fresh", {"a": 2}, {"first": "ours"}),
    ]
    assert write(docs, upserts, {"raced", "fresh"}) == 1
    assert docs.find_one({"_id": "raced"}) == {"_id": "raced", "a": 1, "first": "theirs"}
    assert docs.find_one({"_id": "fresh"}) == {"_id": "fresh", "a": 2, "first": "ours"}


def test_a_duplicate_on_another_unique_index_is_raised(runtime):
    docs = runtime.db["writes_test"]
    docs.create_index("n", unique=True)
    docs.insert_one({"_id": "one", "n": 1})
    with pytest.raises(BulkWriteError):
        write(docs, [Upsert("two", {"n": 1})], {"two"})
    assert docs.count_documents({}) == 1


def test_a_page_saved_again_keeps_its_first_sighting(runtime):
    pages = PageStore(runtime.db)
    url = "http://pirate.test/1.html"
    assert pages.save_many([PageRecord(url=url, text="正文一", matched=[])], T0) == [True]
    later = T0 + timedelta(hours=1)
    assert pages.save_many([PageRecord(url=url, text="正文二", matched=[])], later) == [True]
    doc = runtime.db["pages"].find_one({"_id": url})
    assert (doc["first_seen"], doc["last_seen"], doc["text"]) == (T0, later, "正文二")


def test_matches_are_created_reopened_and_closed_by_what_a_check_finds(runtime):
    store = MatchStore(runtime.db)
    url = "http://pirate.test/1.html"

    def found(*doc_ids: str) -> dict:
        return {url: [{"doc_id": d, "score": 0.9} for d in doc_ids]}

    assert store.record_many(found("A/1", "A/2"), T0) == (2, 0)
    assert store.record_many(found("A/2"), T0 + timedelta(hours=1)) == (0, 1)
    assert store.record_many(found("A/1", "A/2"), T0 + timedelta(hours=2)) == (0, 0)
    matches = {d["doc_id"]: d for d in runtime.db["matches"].find({"url": url})}
    assert {d: m["active"] for d, m in matches.items()} == {"A/1": True, "A/2": True}
    assert "closed_at" not in matches["A/1"]  # reopened
    assert matches["A/1"]["first_seen"] == T0
    day = runtime.db["page_days"].find_one({"url": url})
    assert sorted(day["doc_ids"]) == ["A/1", "A/2"]
    assert store.record_many({url: []}, T0 + timedelta(hours=3)) == (0, 2)
    assert runtime.db["page_days"].find_one({"url": url})["doc_ids"] == []


class _CountedFinds:
    """A collection whose ``find`` calls are counted (everything else passed through)."""

    def __init__(self, collection) -> None:
        self.collection = collection
        self.finds = 0

    def find(self, *args, **kwargs):
        self.finds += 1
        return self.collection.find(*args, **kwargs)

    def __getattr__(self, name):
        return getattr(self.collection, name)


def test_pages_whose_stored_state_is_known_are_not_read_again(runtime):
    """A crawl's store stage passes the states its unchanged stage read: those pages are not
    read again, a known new page is inserted, a known stored one updated (its first sighting
    kept), and a page the caller did not know about is still read."""
    pages = PageStore(runtime.db)
    stored, new, unknown = (f"http://pirate.test/{n}.html" for n in (1, 2, 3))
    pages.save_many([PageRecord(url=u, text="正文一", matched=[]) for u in (stored, unknown)], T0)
    known = {stored: pages.states([stored])[stored], new: None}
    pages.pages = counted = _CountedFinds(pages.pages)
    later = T0 + timedelta(hours=1)
    records = [
        PageRecord(url=stored, text="正文一", matched=[]),
        PageRecord(url=new, text="正文二", matched=[]),
    ]
    assert pages.save_many(records, later, known) == [False, True]
    assert counted.finds == 0
    assert pages.save_many([PageRecord(url=unknown, text="正文一", matched=[])], later) == [False]
    assert counted.finds == 1
    docs = {d["_id"]: d for d in runtime.db["pages"].find({})}
    assert (docs[stored]["first_seen"], docs[stored]["last_seen"]) == (T0, later)
    assert (docs[new]["first_seen"], docs[new]["text"]) == (later, "正文二")


def test_day_records_of_unstored_pages_are_written_without_a_read(runtime):
    """The day records of pages said unstored are inserted without looking for them; one a
    crash left behind (its page never stored) is met by the insert and set as a read would
    have: the same records either way, one query fewer."""
    store = MatchStore(runtime.db)
    left, fresh = "http://pirate.test/left.html", "http://pirate.test/fresh.html"
    store.record_many({left: [{"doc_id": "A/1", "score": 0.9}]}, T0)  # its page never stored
    found = {url: [{"doc_id": "A/2", "score": 0.8}] for url in (left, fresh)}
    reads = []

    class Reads(monitoring.CommandListener):
        def started(self, event):
            if event.command_name == "find" and event.command["find"] == "page_days":
                reads.append(event)

        def succeeded(self, event): ...
        def failed(self, event): ...

    listener = Reads()
    client = MongoClient(runtime.settings.mongo_url, event_listeners=[listener])
    try:
        MatchStore(client[runtime.settings.mongo_db]).record_many(
            found, T0 + timedelta(hours=1), unstored={left, fresh}
        )
    finally:
        client.close()
    assert reads == []
    days = {d["url"]: d for d in runtime.db["page_days"].find()}
    assert {url: d["doc_ids"] for url, d in days.items()} == {left: ["A/2"], fresh: ["A/2"]}
    assert days[left]["at"] == days[fresh]["at"]
