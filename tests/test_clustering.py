"""Single-pass clustering of infringing pages by SimHash, against the real servers."""

from __future__ import annotations

import random
from datetime import UTC, date, datetime

import pytest

from tracker.fingerprints.document import to_signed
from tracker.reports.build import build_report
from tracker.reports.clustering import CentreIndex, PageClusterer
from tracker.stores.clusters import ClusterStore
from tracker.stores.pages import MatchStore, PageRecord, PageStore

pytestmark = pytest.mark.integration

DAY = date(2026, 11, 22)
BASE = 0x0123_4567_89AB_CDEF


def flip(fingerprint: int, *bits: int) -> int:
    for bit in bits:
        fingerprint ^= 1 << bit
    return fingerprint


def at(hour: int) -> datetime:
    return datetime(DAY.year, DAY.month, DAY.day, hour, tzinfo=UTC)


def crawl(runtime, url: str, fingerprint: int | None, hour: int, doc_id: str = "w/0001") -> None:
    """What the crawl pipelines store for an infringing page."""
    PageStore(runtime.db).save(
        PageRecord(
            url=url,
            text=f"text of {url} {fingerprint}",
            simhash=None if fingerprint is None else to_signed(fingerprint),
        ),
        now=at(hour),
    )
    MatchStore(runtime.db).record(
        url,
        [{"doc_id": doc_id, "work": "w", "title": doc_id, "score": 0.9, "coverage": 0.9}],
        now=at(hour),
    )


@pytest.fixture()
def clusterer(runtime) -> PageClusterer:
    return PageClusterer.from_runtime(runtime)


def test_centre_index_finds_the_nearest_centre_within_three_bits(runtime):
    index = CentreIndex(runtime.redis, runtime.settings.redis_prefix + "cl:")
    rng = random.Random(7)
    others = [rng.getrandbits(64) for _ in range(500)]
    index.add(list(enumerate(others, start=100)))
    index.add([(1, BASE), (2, flip(BASE, 0, 1))])  # 2 bits from BASE

    assert index.nearest(BASE) == (1, 0)
    assert index.nearest(flip(BASE, 0, 1, 2)) == (2, 1)  # 3 bits from centre 1, 1 from centre 2
    assert index.nearest(flip(BASE, 1, 2)) == (1, 2)  # equidistant: the older cluster
    assert index.nearest(flip(BASE, 40, 50, 60)) == (1, 3)  # bits spread over three blocks
    assert index.nearest(flip(BASE, 10, 30, 50, 63)) is None  # 4 bits: no cluster
    assert index.nearest(others[123]) == (223, 0)
    assert index.size() == 502
    probes = [BASE, flip(BASE, 0, 1, 2), flip(BASE, 1, 2), flip(BASE, 10, 30, 50, 63), others[7]]
    assert index.nearest_many(probes) == [index.nearest(p) for p in probes]


def test_a_batch_is_clustered_as_one_page_at_a_time(runtime, clusterer):
    """Centres founded within one run take part like stored ones: a page joins the nearest
    (a new centre only when strictly nearer than a stored one: ties go to the older)."""
    crawl(runtime, "https://a.example/1.html", BASE, hour=1)
    clusterer.cluster_seen_since(at(0))  # cluster 1, stored
    new_centre = flip(BASE, 10, 20, 30, 40)  # 4 bits from cluster 1: founds cluster 2
    crawl(runtime, "https://b.example/1.html", new_centre, hour=2)
    crawl(runtime, "https://c.example/1.html", flip(BASE, 10, 20), hour=3)  # 2 from each: 1
    crawl(runtime, "https://d.example/1.html", flip(new_centre, 50), hour=4)  # 1 from 2, 5 from 1
    crawl(runtime, "https://e.example/1.html", flip(BASE, 10, 20, 30), hour=5)  # 3 from 1, 1 from 2
    crawl(runtime, "https://f.example/1.html", flip(new_centre, 1, 2, 3, 4), hour=6)  # founds 3

    summary = clusterer.cluster_seen_since(at(2))

    assert (summary.assigned, summary.created) == (5, 2)
    members = {
        doc["_id"].split("/")[2]: (doc["cluster"], doc["distance"])
        for doc in runtime.db["cluster_members"].find()
    }
    assert members == {
        "a.example": (1, 0),
        "b.example": (2, 0),
        "c.example": (1, 2),
        "d.example": (2, 1),
        "e.example": (2, 1),
        "f.example": (3, 0),
    }
    assert CentreIndex(runtime.redis, runtime.settings.redis_prefix + "cl:").size() == 3


def test_mirror_copies_across_sites_become_one_cluster(runtime, clusterer):
    crawl(runtime, "https://pirate.example/book/1.html", BASE, hour=1)
    crawl(runtime, "https://mirror.example/b/1.html", flip(BASE, 5, 17), hour=2)
    crawl(runtime, "https://other.example/1.html", flip(BASE, 3, 20, 41), hour=3)
    crawl(runtime, "https://pirate.example/book/2.html", BASE ^ 0xFFFF_0000_FFFF, hour=1)
    crawl(runtime, "https://pirate.example/no-fingerprint.html", None, hour=1)

    summary = clusterer.cluster_seen_since(at(0))

    assert summary.to_dict() == {
        "pages": 5,
        "assigned": 4,
        "created": 2,
        "unchanged": 0,
        "skipped": 1,
    }
    clusters = ClusterStore(runtime.db).cluster_of(
        [
            "https://pirate.example/book/1.html",
            "https://mirror.example/b/1.html",
            "https://other.example/1.html",
            "https://pirate.example/book/2.html",
            "https://pirate.example/no-fingerprint.html",
        ]
    )
    mirror = clusters["https://pirate.example/book/1.html"]
    assert clusters["https://mirror.example/b/1.html"] == mirror
    assert clusters["https://other.example/1.html"] == mirror
    assert clusters["https://pirate.example/book/2.html"] != mirror
    assert "https://pirate.example/no-fingerprint.html" not in clusters
    # The earliest copy founded the group and is its centre.
    centre = runtime.db["clusters"].find_one({"_id": mirror})
    assert centre["leader"] == "https://pirate.example/book/1.html"

    again = clusterer.cluster_seen_since(at(0))
    assert (again.assigned, again.created, again.unchanged) == (0, 0, 4)

    report = build_report(runtime.db, DAY)
    assert report["summary"]["groups"] == 1
    [group] = report["groups"]
    assert group == {
        "group": mirror,
        "pages": [
            "https://mirror.example/b/1.html",
            "https://other.example/1.html",
            "https://pirate.example/book/1.html",
        ],
        "sites": ["mirror.example", "other.example", "pirate.example"],
        "works": ["w"],
        "doc_ids": ["w/0001"],
    }
    by_url = {p["url"]: p["group"] for p in report["pages"]}
    assert by_url["https://mirror.example/b/1.html"] == mirror
    # A cluster of one page is no mirror group: the report shows none for it, as its summary
    # counts none, though the page has a cluster of its own.
    assert clusters["https://pirate.example/book/2.html"] not in (None, mirror)
    assert by_url["https://pirate.example/book/2.html"] is None
    assert by_url["https://pirate.example/no-fingerprint.html"] is None


def test_centres_do_not_move(runtime, clusterer):
    """Single pass with fixed centres: a page 3 bits from a member but 6 from the centre
    founds a cluster of its own rather than chaining groups together."""
    crawl(runtime, "https://a.example/1", BASE, hour=1)
    crawl(runtime, "https://b.example/1", flip(BASE, 1, 2, 3), hour=2)
    crawl(runtime, "https://c.example/1", flip(BASE, 1, 2, 3, 30, 31, 32), hour=3)

    clusterer.cluster_seen_since(at(0))

    clusters = ClusterStore(runtime.db).cluster_of(
        ["https://a.example/1", "https://b.example/1", "https://c.example/1"]
    )
    assert clusters["https://a.example/1"] == clusters["https://b.example/1"]
    assert clusters["https://c.example/1"] != clusters["https://a.example/1"]


def test_a_changed_page_is_clustered_again(runtime, clusterer):
    crawl(runtime, "https://a.example/1", BASE, hour=1)
    crawl(runtime, "https://b.example/1", BASE, hour=1)
    clusterer.cluster_seen_since(at(0))
    store = ClusterStore(runtime.db)
    before = store.cluster_of(["https://b.example/1"])["https://b.example/1"]

    crawl(runtime, "https://b.example/1", ~BASE & (2**64 - 1), hour=5)  # now another text
    summary = clusterer.cluster_seen_since(at(4))

    assert (summary.pages, summary.assigned, summary.created) == (1, 1, 1)
    after = store.cluster_of(["https://b.example/1"])["https://b.example/1"]
    assert after != before
    assert store.cluster_of(["https://a.example/1"])["https://a.example/1"] == before


def test_the_redis_index_is_rebuilt_from_mongodb(runtime, clusterer):
    crawl(runtime, "https://a.example/1", BASE, hour=1)
    clusterer.cluster_seen_since(at(0))
    first = ClusterStore(runtime.db).cluster_of(["https://a.example/1"])["https://a.example/1"]
    clusterer.index.clear()  # Redis lost its data

    crawl(runtime, "https://b.example/1", flip(BASE, 9), hour=2)
    summary = clusterer.cluster_seen_since(at(2))

    assert summary.created == 0
    assert ClusterStore(runtime.db).cluster_of(["https://b.example/1"]) == {
        "https://b.example/1": first
    }
    assert clusterer.index.size() == 1


def test_prints_read_from_the_pages_seen_since_are_those_read_by_id(runtime):
    """The close of a crawl reads its matched pages from one range of ``last_seen`` (at most
    twice as many pages as asked), then the rest by id: the same prints as by id alone, whether
    the pages were seen since then, before, or lie beyond the range's limit."""
    store = PageStore(runtime.db)
    for k in range(30):
        crawl(runtime, f"https://s.example/{k}", flip(BASE, k), hour=1 + k % 6)
    wanted = [f"https://s.example/{k}" for k in (0, 3, 17, 29)] + ["https://s.example/unstored"]

    def key(page):
        return page.url

    by_id = sorted(store.prints(wanted), key=key)
    assert {p.url: p.simhash for p in by_id} == {
        f"https://s.example/{k}": flip(BASE, k) for k in (0, 3, 17, 29)
    }
    for since in (at(0), at(3), at(7)):  # all seen since, some, none
        assert sorted(store.prints(wanted, seen_since=since), key=key) == by_id
