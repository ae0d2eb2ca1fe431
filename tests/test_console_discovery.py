"""The console's discovered sites: listed with the query that found each, escaped; marked
watched, ignored or licensed by operators only, with the form's CSRF token."""

from __future__ import annotations

import re
from dataclasses import replace
from datetime import UTC, datetime

import pytest
from fastapi.testclient import TestClient

from tests.console_data import OPERATOR, VIEWER
from tracker.console import create_app
from tracker.console.users import Users
from tracker.discovery.run import licensed_sites
from tracker.stores.discovery import SiteRegistry

HOSTILE_QUERY = '"<script>alert(1)</script>" 免费阅读'


@pytest.fixture()
def client(settings, runtime):
    users = Users(runtime.db)
    users.add(OPERATOR[0], "operator", OPERATOR[1])
    users.add(VIEWER[0], "viewer", VIEWER[1])
    registry = SiteRegistry(runtime.db)
    now = datetime.now(UTC)
    for site, query in (("pirate.test", HOSTILE_QUERY), ("127.0.0.1:8081", "某书 笔趣阁")):
        registry.found(
            site, query=query, url=f"http://{site}/1.html", entries=[], pages=3, copies=2, now=now
        )
    app = create_app(replace(settings, console_cache_s=0), runtime)
    with TestClient(app) as client:
        yield client, registry


def csrf_of(html: str) -> str:
    return re.search(r'name="csrf" value="([0-9a-f]{64})"', html)[1]


def test_candidates_are_listed_with_their_query_escaped(client):
    client, _ = client
    page = client.get("/discovered", auth=VIEWER)
    assert page.status_code == 200
    assert "pirate.test" in page.text and "127.0.0.1:8081" in page.text
    assert "<script>alert(1)" not in page.text and "&lt;script&gt;" in page.text
    assert 'action="/discovered/mark"' not in page.text  # a viewer reads only
    assert 'action="/discovered/mark"' in client.get("/discovered", auth=OPERATOR).text
    assert client.get("/discovered?state=bogus", auth=VIEWER).status_code == 422


def test_operators_mark_with_csrf_and_a_licensed_site_is_never_checked(client, settings):
    client, registry = client
    token = csrf_of(client.get("/discovered", auth=OPERATOR).text)
    form = {"csrf": token, "site": "pirate.test", "state": "watched"}
    assert client.post("/discovered/mark", data=form, auth=VIEWER).status_code == 403
    assert (
        client.post("/discovered/mark", data={**form, "csrf": "0" * 64}, auth=OPERATOR).status_code
        == 403
    )
    assert registry.get("pirate.test")["state"] == "candidate"
    done = client.post("/discovered/mark", data=form, auth=OPERATOR, follow_redirects=False)
    assert done.status_code == 303
    doc = registry.get("pirate.test")
    assert doc["state"] == "watched" and doc["decided_by"] == OPERATOR[0]
    assert [c["state"] for c in doc["changes"]] == ["candidate", "watched"]
    missing = {**form, "site": "nowhere.test"}
    assert client.post("/discovered/mark", data=missing, auth=OPERATOR).status_code == 404
    bad = {**form, "state": "deleted"}
    assert client.post("/discovered/mark", data=bad, auth=OPERATOR).status_code == 422

    licensed = {**form, "site": "127.0.0.1:8081", "state": "licensed"}
    assert client.post("/discovered/mark", data=licensed, auth=OPERATOR).status_code in (200, 303)
    assert "127.0.0.1:8081" in licensed_sites(settings, registry)
    assert client.get("/discovered?state=watched", auth=VIEWER).text.count("pirate.test") >= 1
