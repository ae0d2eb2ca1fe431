"""The console's side of enforcement: a page's captures and its evidence bundle (zip), the
takedown figures per site (API, sites page, site page), stamping by operators only; every
value from a crawled page escaped."""

from __future__ import annotations

import io
import json
import time
import uuid
import zipfile
from datetime import UTC, datetime, timedelta
from urllib.parse import quote
from zoneinfo import ZoneInfo

import pytest
from fastapi.testclient import TestClient

from tests.console_data import HOSTILE_URL, OPERATOR, VIEWER, drop, module_settings, seed
from tracker.console import create_app
from tracker.enforcement.capture import Exchange, capture_document
from tracker.enforcement.warc import EvidenceWriter, evidence_dir, parse_records
from tracker.stores.evidence import CaptureStore
from tracker.stores.takedowns import LIVE, REMOVED, TakedownStore

pytestmark = pytest.mark.integration

BODY = b"<html><body>\xe7\x9b\x97\xe7\x89\x88 <script>alert(1)</script></body></html>"


@pytest.fixture(scope="module")
def seeded(server_settings):
    data = seed(module_settings(server_settings, "enforce"))
    headers = [(b"Content-Type", b"text/html")]
    exchange = Exchange(HOSTILE_URL, "GET", [(b"User-Agent", b"ua")], 200, headers, BODY,
                        time.time(), "127.0.0.1")  # fmt: skip
    (records,) = EvidenceWriter(evidence_dir(data.settings)).write([[exchange]])
    document = capture_document(uuid.uuid4().hex, HOSTILE_URL, "h", [{"doc_id": "x/1"}],
                                [exchange], records, datetime.now(UTC))  # fmt: skip
    CaptureStore(data.runtime.db).add_many([document])
    takedowns = TakedownStore(data.runtime.db)
    start = datetime.now(UTC) - timedelta(days=30)
    urls = {f"https://pirate.example/book/{k}.html": ["x/1"] for k in range(4)}
    takedowns.noticed(urls, "n1", start)
    later = start + timedelta(hours=5)
    checks = [(url, REMOVED if k < 1 else LIVE, 404 if k < 1 else 200, "", later)
              for k, url in enumerate(sorted(urls))]  # fmt: skip
    takedowns.record_checks(checks)
    yield data, document
    drop(data)


@pytest.fixture(scope="module")
def client(seeded):
    data, _ = seeded
    with TestClient(create_app(data.settings, data.runtime)) as client:
        yield client


def test_a_pages_evidence_bundle(client, seeded):
    data, capture = seeded
    page = client.get(f"/page?url={quote(HOSTILE_URL, safe='')}", auth=VIEWER)
    assert page.status_code == 200
    assert "<script>alert(3)" not in page.text and capture["payload_sha256"] in page.text
    assert "/api/evidence?url=" in page.text and "Evidence bundle (zip)" in page.text
    answer = client.get("/api/evidence", params={"url": HOSTILE_URL}, auth=VIEWER)
    assert answer.status_code == 200 and answer.headers["content-type"] == "application/zip"
    archive = zipfile.ZipFile(io.BytesIO(answer.content))
    folder = f"evidence-{capture['_id']}"
    names = set(archive.namelist())
    assert f"{folder}/manifest.json" in names and f"{folder}/timestamp.tsr" not in names
    warc = archive.read(f"{folder}/capture-{capture['_id']}.warc.gz")
    assert next(r for r in parse_records(warc) if r.type == "response").payload == BODY
    manifest = json.loads(archive.read(f"{folder}/manifest.json"))
    assert manifest["url"] == HOSTILE_URL
    # Reading stored nothing.
    assert CaptureStore(data.runtime.db).get(capture["_id"])["stamp"] == {"state": "none"}
    missing = client.get("/api/evidence", params={"url": "https://none.example/"}, auth=VIEWER)
    assert missing.status_code == 404 and "no evidence captured" in missing.json()["error"]


def test_a_pending_stamp_shows_the_tsas_last_answer(client, seeded):
    data, capture = seeded
    store = CaptureStore(data.runtime.db)
    since = datetime.now(UTC) - timedelta(hours=30)
    answer = "TSA at http://tsa.test/: its token is for another hash <b>than</b> the one sent"
    store.set_pending(capture["_id"], b"{}", answer, since, "http://tsa.test/")
    try:
        page = client.get(f"/page?url={quote(HOSTILE_URL, safe='')}", auth=VIEWER).text
        shanghai = since.astimezone(ZoneInfo("Asia/Shanghai"))  # the default display_timezone
        assert "failing since " + shanghai.strftime("%Y-%m-%d %H:%M") in page
        assert "another hash &lt;b&gt;than&lt;/b&gt; the one sent" in page
        dashboard = client.get("/", auth=VIEWER).text  # failing for over 24 h: listed
        assert "Time-stamps failing for over 24 h: 1" in dashboard
        assert "another hash &lt;b&gt;than&lt;/b&gt; the one sent" in dashboard
    finally:
        data.runtime.db["captures"].update_one(
            {"_id": capture["_id"]}, {"$set": {"stamp": {"state": "none"}}}
        )


def test_stamping_is_for_operators(client):
    body = {"url": HOSTILE_URL}
    assert client.post("/api/evidence/stamp", json=body, auth=VIEWER).status_code == 403
    answer = client.post("/api/evidence/stamp", json=body, auth=OPERATOR)
    assert answer.status_code == 422 and "tsa_url" in answer.json()["error"]


def test_takedown_figures(client):
    answer = client.get("/api/takedown", auth=VIEWER).json()
    (site,) = answer["takedown"]
    assert (site["site"], site["noticed"], site["removed"], site["live"]) == (
        "pirate.example", 4, 1, 3,
    )  # fmt: skip
    assert site["removal_rate"] == 0.25 and site["noncompliant"] is True
    assert site["median_hours_to_removal"] == 5.0
    urls = client.get("/api/takedown?site=pirate.example", auth=VIEWER).json()["urls"]
    assert len(urls) == 4 and urls[0]["state"] == "removed" and urls[0]["changes"]
    sites = client.get("/sites", auth=VIEWER).text
    assert "Takedown compliance" in sites and "non-compliant" in sites and "25.0%" in sites
    page = client.get("/site?name=pirate.example", auth=VIEWER).text
    assert "Removal rate <strong>25.0%</strong>" in page and "Non-compliant" in page
