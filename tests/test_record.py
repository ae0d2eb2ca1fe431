"""A complete and truthful record (issue 11), on real servers that the tests kill (``kill -9``)
and restart: outages in the middle of a crawl or an ingest, a master registered after its
pirate copy was crawled, a page that changes to another chapter, concurrent ingests. In every
case, after the next crawl or ``tracker rematch``, every copy is in the report, no match is
stored twice and no stale master is listed.

The module starts embedded servers of its own (under a temporary data directory), so that
killing them touches no other module; each test has a database and key prefix of its own.
"""

from __future__ import annotations

import json
import os
import signal
import stat
import subprocess
import sys
import threading
import time
import uuid
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import pymongo
import pytest
import redis

from tests.disguise import typos, with_ads
from tests.sites import Page, TestSite, chapter_p, encoded, html_page, link_list
from tests.stages import process
from tests.texts import prose
from tracker.config import Settings
from tracker.crawling.crawl import run_crawl
from tracker.index.master_index import MasterIndex
from tracker.index.postings import STOP
from tracker.index.simhash_index import RECORD as SIMHASH_RECORD
from tracker.index.storage import RedisStorage, doc_ids
from tracker.matching.library import MasterLibrary
from tracker.matching.rematch import Rematcher
from tracker.model import MasterDocument
from tracker.reports.build import build_report
from tracker.reports.notices import to_notices
from tracker.servers import services
from tracker.servers.runtime import Runtime

pytestmark = pytest.mark.integration

CHAPTERS = 100
FAST = {
    "AUTOTHROTTLE_ENABLED": 0,
    "RETRY_TIMES": 1,
    "RETRY_BACKOFF_BASE": 0.1,
    "DOWNLOAD_TIMEOUT": 5,
    "CONCURRENT_REQUESTS_PER_DOMAIN": 8,
}


# ------------------------------------------------------------------------------ fixtures


@pytest.fixture(scope="module")
def own_servers(tmp_path_factory):
    """Embedded servers of this module's own, under a data directory of its own: the tests
    kill and restart them, which touches no other module. (Starting SecantusDB takes two
    launches, one to make its user: seconds that each test need not pay again.)"""
    with pytest.MonkeyPatch.context() as patch:
        for name in ("MONGO_URL", "REDIS_URL"):
            patch.delenv(name, raising=False)
        settings = Settings(data_dir=tmp_path_factory.mktemp("own") / "data")
        yield settings
    services.stop(settings)


@pytest.fixture()
def own(own_servers, monkeypatch):
    """The module's embedded servers, (re)started if a test before killed them, with a database
    and key prefix of this test's own: (settings, runtime)."""
    for name in ("MONGO_URL", "REDIS_URL"):
        monkeypatch.delenv(name, raising=False)
    tag = uuid.uuid4().hex[:10]
    settings = replace(own_servers, mongo_db=f"record_{tag}", redis_prefix=f"record{tag}:")
    runtime = Runtime(settings)
    runtime.db.command("ping")
    runtime.redis.ping()
    yield settings, runtime
    runtime.close()  # its database is left to the module's servers, dropped with them


def book(
    n: int = CHAPTERS, work: str = "记录之书", chars: int = 700, seed: int = 5000
) -> list[MasterDocument]:
    return [
        MasterDocument(f"{work}/{i:04d}", work, f"第{i}章 章节{i}", prose(seed + i, chars))
        for i in range(1, n + 1)
    ]


def pirate_site(masters: list[MasterDocument], disguise=None, innocent: list[str] = ()) -> TestSite:
    """A catalogue, one chapter page per master (with ads, optionally disguised) and pages of
    unrelated text (``/x/N.html``)."""
    site = TestSite()
    links = [(f"/c/{i}.html", m.title) for i, m in enumerate(masters, start=1)]
    links += [(f"/x/{i}.html", f"闲话{i}") for i in range(1, len(innocent) + 1)]
    site.pages["/"] = Page(encoded(html_page("盗版书城", link_list(links)), "utf-8"))
    for i, master in enumerate(masters, start=1):
        text = disguise(master.text, i) if disguise else master.text
        set_chapter(site, i, master.title, text)
    for i, text in enumerate(innocent, start=1):
        page = html_page("闲话", chapter_p("闲话", text, '<a href="/">目录</a>'))
        site.pages[f"/x/{i}.html"] = Page(encoded(page, "utf-8"))
    return site


def set_chapter(site: TestSite, i: int, title: str, text: str) -> None:
    page = html_page(title, chapter_p(title, with_ads(text), '<a href="/">目录</a>'))
    site.pages[f"/c/{i}.html"] = Page(encoded(page, "utf-8"))


def crawl(settings: Settings, site: TestSite, tmp_path: Path, name: str = "crawl") -> int:
    return run_crawl(
        "novel",
        settings,
        arguments={"start_url": site.url},
        scrapy_settings=FAST,
        log_file=tmp_path / f"{name}.log",
        timeout=600,
    )


def embedded_env(settings: Settings) -> dict[str, str]:
    """The environment of a command on the embedded servers of ``settings``' data directory,
    its database and its key prefix."""
    environment = {k: v for k, v in os.environ.items() if k not in ("MONGO_URL", "REDIS_URL")}
    environment["TRACKER_DATA_DIR"] = str(settings.data_dir)
    environment["TRACKER_MONGO_DB"] = settings.mongo_db
    environment["TRACKER_REDIS_PREFIX"] = settings.redis_prefix
    return environment


def jsonl_file(folder: Path, masters: list[MasterDocument]) -> Path:
    """``masters`` as a ``.jsonl`` file for ``tracker ingest``."""
    path = folder / "masters.jsonl"
    lines = (
        json.dumps({"id": m.doc_id, "work": m.work, "title": m.title, "text": m.text})
        for m in masters
    )
    path.write_text("\n".join(lines), encoding="utf-8")
    return path


def cli(settings: Settings, *args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    environment = {**embedded_env(settings), **(env or {})}
    for key, value in (("MONGO_URL", settings.mongo_url), ("REDIS_URL", settings.redis_url)):
        if value:
            environment[key] = value
    return subprocess.run(
        [sys.executable, "-m", "tracker.cli", *args],
        env=environment,
        capture_output=True,
        text=True,
        timeout=600,
    )


def kill(settings: Settings, name: str) -> int:
    state = services.read_state(settings, name)
    assert state is not None and state.alive()
    os.kill(state.pid, signal.SIGKILL)
    while services._pid_alive(state.pid):
        time.sleep(0.01)
    return state.port


def kill_when(settings: Settings, runtime: Runtime, name: str, pages: int) -> threading.Thread:
    """Kill the embedded ``name`` server once ``pages`` pages are stored (in a thread)."""

    def watch() -> None:
        client = pymongo.MongoClient(runtime.mongo_url, serverSelectionTimeoutMS=20_000)
        deadline = time.monotonic() + 300
        while time.monotonic() < deadline:
            if client[runtime.settings.mongo_db]["pages"].estimated_document_count() >= pages:
                break
            time.sleep(0.05)
        client.close()
        kill(settings, name)

    thread = threading.Thread(target=watch, daemon=True)
    thread.start()
    return thread


def today_report(runtime: Runtime) -> dict:
    return build_report(runtime.db, datetime.now(UTC).date())


def copies_in_report(runtime: Runtime, base: str) -> dict[str, list[str]]:
    report = today_report(runtime)
    rows = [(p["url"][len(base) :], p["doc_ids"]) for p in report["pages"]]
    assert len(rows) == len({url for url, _ in rows})  # one row per page
    return dict(rows)


def expected(masters: list[MasterDocument]) -> dict[str, list[str]]:
    return {f"c/{i}.html": [m.doc_id] for i, m in enumerate(masters, start=1)}


def index_docs(runtime: Runtime) -> set[int]:
    """Every doc number the master index holds a record for (orphans included)."""
    prefix = runtime.settings.redis_prefix + "ix:"
    postings = (MasterIndex.open(RedisStorage(runtime.redis, prefix)).layout).record
    found: set[int] = set()
    for key in runtime.redis.scan_iter(match=prefix + "*", count=1000):
        name = key.decode()[len(prefix) :]
        if name in (
            MasterIndex.VERSION,
            MasterIndex.COUNT,
            MasterIndex.LAYOUT,
            MasterIndex.TABLES,
            MasterIndex.SIZES,
        ):
            continue
        record = SIMHASH_RECORD if name.startswith("sh:") else postings
        records = np.frombuffer(runtime.redis.get(key) or b"", dtype=record)
        found.update(doc_ids(records).tolist())
    return found - {STOP}  # stop markers name no master


def masters_ns(runtime: Runtime) -> set[int]:
    return {int(d["n"]) for d in runtime.db["masters"].find({}, {"n": 1})}


# ----------------------------------------------------------------------- outages mid crawl


def test_embedded_valkey_killed_mid_crawl_is_restarted_and_nothing_is_lost(own, tmp_path):
    settings, runtime = own
    masters = book()
    MasterLibrary.from_runtime(runtime).ingest(masters)
    site = pirate_site(masters)
    with site:
        killer = kill_when(settings, runtime, "redis", pages=20)
        code = crawl(settings, site, tmp_path)
        killer.join(60)
        assert not killer.is_alive()
        run = runtime.db["crawl_runs"].find_one(sort=[("finished_at", -1)])
        assert run is not None and run["reason"] == "finished"
        # The crawl restarted valkey on its port and went on; whatever could not be matched
        # while it was away is marked, counted, and the exit status says so.
        failed = runtime.db["pages"].count_documents({"match_state": "failed"})
        assert (code != 0) == (failed > 0) == (run["status"] == "degraded")
        assert cli(settings, "rematch").returncode == 0
        assert copies_in_report(runtime, site.url) == expected(masters)
        assert crawl(settings, site, tmp_path, "again") == 0
    assert copies_in_report(runtime, site.url) == expected(masters)
    assert runtime.db["matches"].count_documents({}) == CHAPTERS


def test_embedded_mongodb_killed_mid_crawl_is_restarted_and_nothing_is_lost(own, tmp_path):
    settings, runtime = own
    masters = book()
    MasterLibrary.from_runtime(runtime).ingest(masters)
    site = pirate_site(masters)
    with site:
        killer = kill_when(settings, runtime, "mongo", pages=20)
        code = crawl(settings, site, tmp_path)
        killer.join(60)
        run = runtime.db["crawl_runs"].find_one(sort=[("finished_at", -1)])
        assert run is not None, "the crawl's record was lost"
        assert (code != 0) == (run["status"] == "degraded")
        stored = runtime.db["pages"].count_documents({"match_state": "ok"})
        assert stored + sum(run["degraded"].values()) >= CHAPTERS
        # Pages that could not be stored are fetched and stored by the next crawl.
        assert crawl(settings, site, tmp_path, "again") == 0
    assert copies_in_report(runtime, site.url) == expected(masters)
    assert runtime.db["matches"].count_documents({}) == CHAPTERS


def test_external_redis_away_for_the_rest_of_a_crawl(own, tmp_path):
    """A configured Redis (not ours to restart) dies mid crawl: the crawl stores the pages it
    cannot match as failed, ends degraded with a non-zero status; once Redis is back,
    ``tracker rematch`` finishes them."""
    settings, _runtime = own
    other = Settings(data_dir=tmp_path / "redis-only")
    redis_url = services.ensure_service(other, "redis")
    external = replace(settings, redis_url=redis_url)
    ext_runtime = Runtime(external)
    masters = book()
    MasterLibrary.from_runtime(ext_runtime).ingest(masters)
    site = pirate_site(masters)
    try:
        with site:
            killer = kill_when(other, ext_runtime, "redis", pages=20)
            code = crawl(external, site, tmp_path)
            killer.join(60)
            run = ext_runtime.db["crawl_runs"].find_one(sort=[("finished_at", -1)])
            failed = ext_runtime.db["pages"].count_documents({"match_state": "failed"})
            assert code == 1 and run["status"] == "degraded"
            assert failed > 0 and run["degraded"]["unmatched"] == failed
            assert len(copies_in_report(ext_runtime, site.url)) < CHAPTERS
            services.ensure_service(other, "redis")  # back, on its port, with its data
            done = cli(external, "rematch", "--json")
            assert done.returncode == 0, done.stderr
            summary = json.loads(done.stdout)
            assert summary["failed_pages"] == failed and summary["checked"] >= failed
            assert copies_in_report(ext_runtime, site.url) == expected(masters)
            assert ext_runtime.db["pages"].count_documents({"match_state": "failed"}) == 0
    finally:
        ext_runtime.close()
        services.stop(other)


# ---------------------------------------------------------------- late masters, changes


def test_a_master_registered_after_its_copy_was_crawled_is_found_by_rematch(own, tmp_path):
    settings, runtime = own
    masters = book()
    unrelated = book(20, work="无关之书", seed=7000)
    library = MasterLibrary.from_runtime(runtime)
    library.ingest(unrelated)
    innocent = [prose(9000 + i, 900) for i in range(30)]
    site = pirate_site(
        masters, disguise=lambda text, i: typos(text, 0.05, seed=i), innocent=innocent
    )
    with site:
        assert crawl(settings, site, tmp_path) == 0
        assert copies_in_report(runtime, site.url) == {}
        library.ingest(masters)  # the book is registered after the pirates published it
        # A re-crawl of the unchanged pages must not skip them: the library changed.
        done = cli(settings, "rematch", "--json")
        assert done.returncode == 0, done.stderr
        summary = json.loads(done.stdout)
        # Only the pages sharing anchors with the new chapters were checked, not the store.
        assert summary["changed_masters"] == CHAPTERS
        assert CHAPTERS <= summary["candidate_pages"] < CHAPTERS + len(innocent)
        assert summary["new_matches"] == CHAPTERS
        report = today_report(runtime)
        assert {p["url"][len(site.url) :]: p["doc_ids"] for p in report["pages"]} == expected(
            masters
        )
        assert all(p["new"] for p in report["pages"])
        # Nothing left to do: a second rematch checks nothing, a re-crawl skips every page.
        again = json.loads(cli(settings, "rematch", "--json").stdout)
        assert (again["checked"], again["new_matches"]) == (0, 0)
        assert crawl(settings, site, tmp_path, "again") == 0
    run = runtime.db["crawl_runs"].find_one(sort=[("finished_at", -1)])
    assert run["pages"]["unchanged"] == CHAPTERS + len(innocent)
    assert runtime.db["matches"].count_documents({}) == CHAPTERS


def test_an_unchanged_page_is_matched_again_when_the_library_grew(own, tmp_path):
    """Without rematch: the next crawl itself matches pages stored before a master."""
    settings, runtime = own
    masters = book(10)
    site = pirate_site(masters)
    with site:
        assert crawl(settings, site, tmp_path) == 0
        MasterLibrary.from_runtime(runtime).ingest(masters)
        assert crawl(settings, site, tmp_path, "again") == 0
    assert copies_in_report(runtime, site.url) == expected(masters)


def test_a_page_that_changes_to_another_chapter_names_only_what_it_carries(own, tmp_path):
    settings, runtime = own
    masters = book(10)
    MasterLibrary.from_runtime(runtime).ingest(masters)
    site = pirate_site(masters)
    with site:
        assert crawl(settings, site, tmp_path) == 0
        set_chapter(site, 1, masters[1].title, masters[1].text)  # page 1 now copies chapter 2
        assert crawl(settings, site, tmp_path, "again") == 0
    found = copies_in_report(runtime, site.url)
    assert found["c/1.html"] == [masters[1].doc_id]
    assert masters[0].doc_id not in json.dumps(
        to_notices(today_report(runtime), runtime.db, settings), ensure_ascii=False
    )
    stale = runtime.db["matches"].find_one({"doc_id": masters[0].doc_id})
    assert stale["active"] is False and stale["last_seen"] < stale["closed_at"]


# ------------------------------------------------------------------------- ingest faults


def test_valkey_killed_right_after_an_ingest_loses_nothing(own, tmp_path):
    settings, runtime = own
    masters = book(120, chars=900)
    MasterLibrary.from_runtime(runtime).ingest(masters)
    kill(settings, "redis")  # within a second of the last write
    page = tmp_path / "page.txt"
    page.write_text(with_ads(masters[57].text), encoding="utf-8")
    checked = cli(settings, "check", "--json", str(page))
    assert checked.returncode in (0, 1), checked.stderr
    assert [m["doc_id"] for m in json.loads(checked.stdout)["matches"]] == [masters[57].doc_id]
    stats = cli(settings, "index", "stats")
    assert stats.returncode == 0, stats.stdout + stats.stderr
    assert "120 master documents" in stats.stdout.splitlines()[1]


def test_an_ingest_killed_midway_leaves_nothing_invisible(own, tmp_path):
    settings, runtime = own
    masters = book(700, chars=400)
    path = jsonl_file(tmp_path, masters)
    environment = embedded_env(settings)
    ingest = subprocess.Popen(
        [sys.executable, "-m", "tracker.cli", "ingest", str(path)], env=environment
    )
    while runtime.db["masters"].estimated_document_count() < 200 and ingest.poll() is None:
        time.sleep(0.02)
    ingest.send_signal(signal.SIGKILL)
    ingest.wait()
    stored = runtime.db["masters"].count_documents({})
    assert 0 < stored < len(masters)
    assert cli(settings, "index", "verify").returncode == 0
    assert runtime.db["library_journal"].count_documents({}) == 0
    assert index_docs(runtime) == masters_ns(runtime)  # every stored master, no orphan
    library = MasterLibrary.from_runtime(runtime)
    detector = library.detector()
    kept = [m for m in masters if runtime.db["masters"].find_one({"_id": m.doc_id}, {"_id": 1})]
    sample = kept[:: max(1, len(kept) // 25)]
    found = detector.check_many([m.text for m in sample])
    assert [[x.doc_id for x in f] for f in found] == [[m.doc_id] for m in sample]


def test_a_writer_that_dies_between_mongodb_and_redis_is_finished_by_the_next(own):
    _settings, runtime = own
    masters = book(40)
    library = MasterLibrary.from_runtime(runtime)
    library.ingest(masters[:20])

    def dies(*args, **kwargs):
        raise redis.ConnectionError("killed")

    library.index.add = dies  # the process dies after storing the batch in MongoDB
    with pytest.raises(redis.ConnectionError):
        library.ingest([*masters[20:], replace(masters[0], text=masters[0].text + "新的尾声。")])
    [change] = runtime.db["library_journal"].find()  # the batch it was writing
    assert len(change["changes"]) == 21
    again = MasterLibrary.from_runtime(runtime)  # any command that opens the library
    assert runtime.db["library_journal"].count_documents({}) == 0
    assert again.index.state() == (again.store.version(), 40)
    assert index_docs(runtime) == masters_ns(runtime)
    found = again.detector().check_many([m.text for m in masters[18:24]])
    assert [[x.doc_id for x in f] for f in found] == [[m.doc_id] for m in masters[18:24]]


def test_concurrent_ingests_of_the_same_file(own, tmp_path):
    settings, runtime = own
    masters = book(120, chars=900)
    path = jsonl_file(tmp_path, masters)
    environment = embedded_env(settings)
    runtime.redis.ping()  # servers up before both start
    both = [
        subprocess.Popen(
            [sys.executable, "-m", "tracker.cli", "ingest", str(path)], env=environment
        )
        for _ in range(2)
    ]
    assert [p.wait(timeout=600) for p in both] == [0, 0]
    assert runtime.db["masters"].count_documents({}) == 120
    assert index_docs(runtime) == masters_ns(runtime)  # no orphan postings
    assert len(masters_ns(runtime)) == 120
    merged = "\n".join(m.text for m in masters[40:48])
    [found] = MasterLibrary.from_runtime(runtime).detector().check_many([merged])
    assert sorted(m.doc_id for m in found) == [m.doc_id for m in masters[40:48]]


# ----------------------------------------------------------------------------- no pickle


def test_embedded_servers_are_private(own):
    settings, _runtime = own
    data = Path(settings.data_dir)
    assert stat.S_IMODE(data.stat().st_mode) == 0o700
    secret = data / "services" / "secret"
    assert stat.S_IMODE(secret.stat().st_mode) == 0o600
    mongo, valkey = (services.read_state(settings, name) for name in ("mongo", "redis"))
    with pytest.raises(redis.AuthenticationError):
        redis.Redis(port=valkey.port).ping()
    anonymous = pymongo.MongoClient(port=mongo.port, serverSelectionTimeoutMS=5000)
    with pytest.raises(pymongo.errors.OperationFailure, match="authentication"):
        anonymous["tracker"]["masters"].find_one()
    anonymous.close()
    assert secret.read_text() not in (data / "services" / "redis" / "state.json").read_text()


def test_queued_requests_and_scheduler_jobs_are_not_pickled():
    from scrapy import Request
    from scrapy.utils.request import request_from_dict

    from tracker.crawling import request_codec

    request = Request(
        "http://127.0.0.1:1/书/1.html", body=b"\x00\xff", meta={"depth": 2}, priority=10
    )
    data = request_codec.dumps(request.to_dict())
    assert json.loads(data)["priority"] == 10  # plain JSON, no pickle
    again = request_from_dict(request_codec.loads(data))
    assert (again.url, again.body, again.meta, again.priority) == (
        request.url,
        b"\x00\xff",
        {"depth": 2},
        10,
    )
    with pytest.raises(TypeError):
        request_codec.dumps({"url": "http://x/", "meta": {"object": object()}})


def test_servers_left_running_by_an_older_version_are_restarted_with_a_password(own):
    settings, _runtime = own
    old = services.read_state(settings, "redis")
    path = services.services_dir(settings) / "redis" / "state.json"
    legacy = json.loads(path.read_text())
    del legacy["secured"]  # as tracker < 0.4 wrote it
    path.write_text(json.dumps(legacy))
    url = services.ensure_service(settings, "redis")
    new = services.read_state(settings, "redis")
    assert new.secured and new.pid != old.pid and not services._pid_alive(old.pid)
    assert redis.Redis.from_url(url).ping()


@pytest.mark.parametrize("server", ["redis", "mongo"])
def test_a_server_killed_mid_ingest_leaves_a_consistent_library(own, tmp_path, server):
    """kill -9 of valkey or SecantusDB while `tracker ingest` runs: the ingest stops with an
    error; the next command restarts the server, finishes or rebuilds the index, and every
    master MongoDB kept is found, none is indexed twice."""
    settings, runtime = own
    masters = book(700, chars=400)
    path = jsonl_file(tmp_path, masters)
    environment = embedded_env(settings)
    ingest = subprocess.Popen(
        [sys.executable, "-m", "tracker.cli", "ingest", str(path)],
        env=environment,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    while runtime.db["masters"].estimated_document_count() < 200 and ingest.poll() is None:
        time.sleep(0.02)
    kill(settings, server)
    ingest.communicate(timeout=600)
    assert ingest.returncode != 0  # it says it stopped short
    runtime.close()
    after = Runtime(settings)
    try:
        assert cli(settings, "index", "verify").returncode == 0
        kept = [m for m in masters if after.db["masters"].find_one({"_id": m.doc_id}, {"_id": 1})]
        assert len(kept) >= 200
        assert index_docs(after) == masters_ns(after)
        assert after.db["library_journal"].count_documents({}) == 0
        sample = kept[:: max(1, len(kept) // 20)]
        found = MasterLibrary.from_runtime(after).detector().check_many([m.text for m in sample])
        assert [[x.doc_id for x in f] for f in found] == [[m.doc_id] for m in sample]
        # Ingesting the file again completes the library; nothing is indexed twice.
        assert cli(settings, "ingest", str(path)).returncode == 0
        assert after.db["masters"].count_documents({}) == len(masters)
        assert index_docs(after) == masters_ns(after)
    finally:
        after.close()


def test_server_errors_in_the_match_and_store_stages_are_counted_and_repaired(own):
    """A MongoDB error while matching (loading candidate masters) or while storing a page's
    matches: the page is counted as degraded, never stored as done, and the next crawl or
    rematch finishes it."""
    from pymongo.errors import OperationFailure
    from scrapy.utils.test import get_crawler

    from pipelines.fingerprint import FingerprintPipeline
    from pipelines.match import MatchPipeline
    from pipelines.store import StorePipeline
    from pipelines.unchanged import UnchangedPagePipeline
    from tracker.crawling.context import TrackerContext
    from tracker.crawling.items import PageItem

    _settings, runtime = own
    masters = book(3)
    MasterLibrary.from_runtime(runtime).ingest(masters)
    crawler = get_crawler()
    crawler.stats.open_spider()
    context = crawler._tracker_context = TrackerContext(runtime)
    stages = [
        UnchangedPagePipeline.from_crawler(crawler),
        FingerprintPipeline.from_crawler(crawler),
        MatchPipeline.from_crawler(crawler),
        StorePipeline.from_crawler(crawler),
    ]

    def crawl_page(url: str, text: str) -> None:
        item = PageItem(url=url, text=text, status=200)
        for stage in stages:
            item = process(stage, item)

    def refuses(*args, **kwargs):
        raise OperationFailure("not primary", code=10107)

    context.detector.store.by_ns = refuses  # matching fails (MongoDB)
    crawl_page("http://x/1.html", masters[0].text)
    del context.detector.store.by_ns
    context.matches.record_many = refuses  # storing the matches fails (MongoDB)
    crawl_page("http://x/2.html", masters[1].text)
    del context.matches.record_many
    stats = crawler.stats.get_stats()
    assert stats["tracker/degraded/unmatched"] == 1
    assert stats["tracker/degraded/unstored"] == 1
    assert stats["tracker/errors/store"] == 2
    assert runtime.db["pages"].find_one({"_id": "http://x/1.html"})["match_state"] == "failed"
    assert runtime.db["pages"].find_one({"_id": "http://x/2.html"}) is None  # not "done"

    crawl_page("http://x/2.html", masters[1].text)  # the next crawl stores it whole
    assert Rematcher(runtime).run().checked == 1  # and rematch finishes the failed one
    assert copies_in_report(runtime, "http://x/") == {
        "1.html": [masters[0].doc_id],
        "2.html": [masters[1].doc_id],
    }


def test_no_scheduler_job_is_unpickled_from_the_database(own, tmp_path):
    import pickle

    from tracker.scheduler.service import SchedulerService, StepScheduler

    settings, runtime = own
    witness = tmp_path / "pwned"

    class Payload:
        def __reduce__(self):
            return (Path.touch, (witness,))

    runtime.db["scheduler_jobs"].insert_one(
        {"_id": "pull", "next_run_time": 0.0, "job_state": pickle.dumps(Payload())}
    )
    service = SchedulerService(settings, runtime, scheduler_class=StepScheduler)
    assert service.start()
    try:
        assert not witness.exists()
        stored = runtime.db["scheduler_jobs"].find_one({"_id": "pull"}, {"job_state": 0})
        assert set(stored) == {"_id", "next_run_time", "trigger"}
    finally:
        service.halt()
