"""Takedown tracking's parts: how a re-fetched page is classified, the compliance figures at any
moment (removal rate, median hours to removal, reappeared, non-compliant), the delisting list,
and the enforcement collections' queries on their indexes."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from tests.test_scheduler import uses_an_index
from tracker.enforcement.compliance import Compliance, delisting_rows, takedown_figures
from tracker.enforcement.takedown import Fetched, classify
from tracker.stores.takedowns import LIVE, NOTICED, REMOVED

T0 = datetime(2031, 3, 1, tzinfo=UTC)
PAGE = (
    "<html><body><div id=content>"
    + "<p>一段被复制的正文，足够长的文字。</p>" * 20
    + "</div></body></html>"
)


def fetched(status, body=PAGE, **kw):
    return Fetched("http://p.test/1", status, body.encode(), [(b"Content-Type", b"text/html")],
                   **kw)  # fmt: skip


def copies(text):
    return [{"doc_id": "书/0001"}] if "被复制" in text else []


@pytest.mark.parametrize(
    ("page", "state", "reason"),
    [
        (fetched(404), REMOVED, "HTTP 404"),
        (fetched(410), REMOVED, "HTTP 410"),
        (fetched(451), REMOVED, "HTTP 451"),
        (fetched(None, error="Name or service not known", gone=True), REMOVED, "no longer"),
        (fetched(503), None, "unreachable: HTTP 503"),
        (fetched(403), None, "unreachable: HTTP 403"),
        (fetched(None, error="timed out"), None, "unreachable: timed out"),
        (fetched(200), LIVE, "still copies"),
        (fetched(200, PAGE.replace("被复制", "全新的")), REMOVED, "no longer copies"),
        (fetched(200, "<html><body></body></html>"), REMOVED, "no text"),
    ],
)
def test_classify(page, state, reason):
    checked = classify("http://p.test/1", page, ["书/0001"], copies)
    assert checked.state == state and reason in checked.reason


def test_a_page_copying_another_master_only_is_removed():
    """Noticed for one chapter, now carrying another: the notice was complied with."""
    checked = classify("http://p.test/1", fetched(200), ["书/0009"], copies)
    assert checked.state == REMOVED


def record(url, site, noticed, *changes):
    return {
        "_id": url,
        "site": site,
        "first_noticed": noticed,
        "state": changes[-1][1] if changes else NOTICED,
        "doc_ids": ["书/0001"],
        "changes": [{"at": noticed, "state": NOTICED}]
        + [{"at": at, "state": state} for at, state in changes],
    }


def test_figures_at_any_moment():
    day = timedelta(days=1)
    docs = [
        record("http://a.test/1", "a.test", T0, (T0 + day, REMOVED)),
        record("http://a.test/2", "a.test", T0, (T0 + 2 * day, REMOVED), (T0 + 3 * day, LIVE)),
        record("http://a.test/3", "a.test", T0, (T0 + day, LIVE)),
        record("http://a.test/4", "a.test", T0),
        record("http://b.test/1", "b.test", T0 + 5 * day),  # noticed later
    ]
    (a,) = takedown_figures(docs, T0 + 2 * day + timedelta(hours=1))
    assert (a["noticed"], a["removed"], a["live"], a["reappeared"], a["unchecked"]) == (
        4, 2, 1, 0, 1,
    )  # fmt: skip
    assert a["removal_rate"] == 0.5 and a["median_hours_to_removal"] == 36.0
    later = {f["site"]: f for f in takedown_figures(docs, T0 + 15 * day, Compliance(0.5, 14))}
    a = later["a.test"]
    assert (a["removed"], a["live"], a["reappeared"]) == (1, 2, 1)
    assert a["removal_rate"] == 0.25 and a["noncompliant"] is True
    assert later["b.test"]["noncompliant"] is False  # its first notice is 10 days old: not yet
    assert later["b.test"]["median_hours_to_removal"] is None
    rows = delisting_rows(docs, list(later.values()))
    assert [row[0] for row in rows] == ["http://a.test/2", "http://a.test/3", "http://a.test/4"]


@pytest.mark.integration
def test_enforcement_queries_use_indexes(runtime):
    db = runtime.db
    now = datetime.now(UTC)
    db["captures"].insert_many([{"_id": str(k), "url": f"u{k}", "at": now,
                                 "stamp": {"state": "none"}} for k in range(20)])  # fmt: skip
    db["notices"].insert_many([{"_id": str(k), "site": "s", "state": "sent", "created_at": now}
                               for k in range(20)])  # fmt: skip
    db["takedowns"].insert_many([{"_id": f"u{k}", "site": "s", "first_noticed": now}
                                 for k in range(20)])  # fmt: skip
    db["alerts"].insert_many([{"_id": str(k), "state": "sent", "next_at": now}
                              for k in range(20)])  # fmt: skip
    queries = {
        "export: newest capture": db["captures"].find({"url": "u1"}).sort("at", -1).limit(1),
        "crawl: captured texts": db["captures"].find({"url": {"$in": ["u1", "u2"]}}),
        "stamps pending": db["captures"].find({"stamp.state": "pending"}),
        "stamps overdue": db["captures"].find(
            {"stamp.state": "pending", "stamp.failing_since": {"$lt": now}}
        ),
        "notices pending": db["notices"].find({"state": "pending"}),
        "a site's notices": db["notices"].find({"site": "s"}).sort("created_at", -1),
        "a site's takedowns": db["takedowns"].find({"site": "s"}),
        "noticed URLs": db["takedowns"].find({"_id": {"$in": ["u1"]}}),
        "report: noticed by": db["takedowns"].find({"first_noticed": {"$lte": now}}),
        "alerts due": db["alerts"].find({"state": "pending", "next_at": {"$lte": now}}),
        "notices: a site's pages": db["pages"].find({"site": "s"}, {"matched_doc_ids": 1}),
    }
    assert [name for name, cursor in queries.items() if not uses_an_index(cursor)] == []
