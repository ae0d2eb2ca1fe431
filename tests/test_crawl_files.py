"""The download channel end to end: two works ingested from their TXT books (80 chapters),
`scrapy crawl novel` of a local TXT-download site (countdown pages, attachments with Chinese
names), and what the store, the evidence, the day's report, its notice and the console say of
each file."""

from __future__ import annotations

import hashlib
import os
from dataclasses import replace
from datetime import UTC, datetime

import pytest

from tests.files_site import WORK_A, WORK_B, book_text, download_site
from tracker.crawling.crawl import run_crawl
from tracker.matching.library import MasterLibrary
from tracker.reading.readers import read_book
from tracker.reports.build import build_report
from tracker.reports.notices import to_notices
from tracker.reports.render import to_html


@pytest.fixture()
def crawled(runtime, settings, tmp_path):
    plan = download_site()
    # the two works ingested from their TXT books, as `tracker ingest` reads them (80 chapters)
    books = []
    for work in (WORK_A, WORK_B):
        path = tmp_path / f"{work}.txt"
        path.write_text(book_text([m for m in plan.masters if m.work == work], work), "gbk")
        books += list(read_book(path))
    assert [m.doc_id for m in books] == [m.doc_id for m in plan.masters]
    MasterLibrary.from_runtime(runtime).ingest(books)
    crawl_settings = replace(
        settings, mongo_url=os.environ.get("MONGO_URL"), redis_url=os.environ.get("REDIS_URL")
    )
    with plan.site as site:
        log = tmp_path / "crawl.log"
        status = run_crawl(
            "novel", crawl_settings, arguments={"start_url": site.url}, log_file=log, timeout=300
        )
        assert status == 0, log.read_text()[-3000:]
        yield plan, site.url.rstrip("/"), log
        # crawled again: the files are known by their SHA-256, seen again, not read again
        before = {name: runtime.db[name].count_documents({}) for name in ("matches", "captures")}
        status = run_crawl(
            "novel", crawl_settings, arguments={"start_url": site.url}, log_file=log, timeout=300
        )
        assert status == 0, log.read_text()[-3000:]
        after = {name: runtime.db[name].count_documents({}) for name in ("matches", "captures")}
        assert after == before
        last = list(runtime.db["crawl_runs"].find().sort("finished_at", 1))[-1]["stats"]
        assert last["tracker__pages_unchanged"] == len(plan.expected) + len(plan.innocent)
        assert "tracker__files__read" not in last


def every_chapter_of_every_file_is_reported_under_its_download_url(crawled, runtime):
    plan, base, _ = crawled
    pages = {
        doc["_id"][len(base) :]: doc
        for doc in runtime.db["pages"].find({}, {"matched_doc_ids": 1, "file": 1})
    }
    flagged = {
        path: sorted(doc["matched_doc_ids"])
        for path, doc in pages.items()
        if doc.get("matched_doc_ids")
    }
    assert flagged == {path: sorted(ids) for path, ids in plan.expected.items()}
    assert sum(len(ids) for ids in flagged.values()) == 280  # 7 files x 40 chapters
    for path in plan.innocent:
        assert not pages.get(path, {}).get("matched_doc_ids")

    report = build_report(runtime.db, datetime.now(UTC).date())
    rows = {p["url"][len(base) :]: p for p in report["pages"]}
    assert set(rows) == set(plan.expected)
    for path, row in rows.items():
        served = plan.files[path][1]
        assert row["file"]["sha256"] == hashlib.sha256(served).hexdigest()
        assert row["file"]["size"] == len(served)
        assert row["file"]["chapters"] == 40
        [copy] = row["copies"]
        assert copy["label"] == f"40 chapters of {copy['work']} in {row['file']['name']} (1–40)"
    assert rows["/get/1"]["file"]["name"] == f"{WORK_A}.txt"  # filename*= of the attachment
    assert rows["/get/5"]["file"]["members"] == [f"{WORK_A}.zip/{WORK_A}.txt"]  # nested
    [notice] = to_notices(report, runtime.db, runtime.settings).values()  # URLs as for pages
    assert all(base + path in notice for path in plan.expected)
    html = to_html(report)
    for row in rows.values():
        assert row["file"]["sha256"] in html and row["copies"][0]["label"] in html


def unreadable_files_are_unread_with_their_reason_and_the_crawl_goes_on(crawled, runtime):
    plan, base, log = crawled
    report = build_report(runtime.db, datetime.now(UTC).date())
    unread = {u["url"][len(base) :]: u["reason"] for u in report["unread"]}
    assert unread == plan.unread  # password, 3 GB bomb, RAR without a reader, cut, damaged
    logged = log.read_text()
    assert "a zip bomb" in logged
    assert f"a broken member {WORK_B}.txt" in logged  # the member's GBK name, read back
    [run] = list(runtime.db["crawl_runs"].find())
    assert run["reason"] == "finished"
    # every URL fetched ended one way; each unreadable file among the unread, with its reason
    assert run["urls"]["unaccounted"] == 0, run["urls"]
    assert run["urls"]["unread"] >= len(plan.unread), run["urls"]
    # password, bomb, RAR, damaged: by the file stage; the cut download by the spider
    assert run["stats"]["tracker__files__unread"] == 4
    assert run["stats"]["tracker__errors__truncated"] == 1
    assert run["stats"]["tracker__files__read"] == len(plan.expected) + len(plan.innocent)


def a_file_is_captured_as_evidence_like_a_page(crawled, runtime):
    plan, base, _ = crawled
    captured = {doc["url"][len(base) :]: doc for doc in runtime.db["captures"].find()}
    assert set(captured) == set(plan.expected)
    for path, doc in captured.items():
        assert doc["payload_sha256"] == hashlib.sha256(plan.files[path][1]).hexdigest()


def the_console_shows_each_file(crawled, runtime, settings):
    from fastapi.testclient import TestClient

    from tracker.console import create_app
    from tracker.console.users import Users

    plan, base, _ = crawled
    Users(runtime.db).add("vera", "viewer", "viewer-pass")
    viewer = ("vera", "viewer-pass")
    with TestClient(create_app(settings, runtime)) as client:
        listed = client.get("/pages", auth=viewer).text
        for path in plan.expected:
            sha256 = hashlib.sha256(plan.files[path][1]).hexdigest()
            assert sha256 in listed
            evidence = client.get("/page", params={"url": base + path}, auth=viewer).text
            assert "Download file" in evidence and sha256 in evidence


def test_crawl_of_a_download_site(crawled, runtime, settings):
    """One crawl (a minute), four findings."""
    every_chapter_of_every_file_is_reported_under_its_download_url(crawled, runtime)
    unreadable_files_are_unread_with_their_reason_and_the_crawl_goes_on(crawled, runtime)
    a_file_is_captured_as_evidence_like_a_page(crawled, runtime)
    the_console_shows_each_file(crawled, runtime, settings)
