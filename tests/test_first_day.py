"""A newcomer's first day (issue 28): ``tracker index stats`` tells the index's own bytes and
passes on a fresh install; the demo's findings are what ``tracker report`` shows next, and a
library of the user's own is left alone."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
from dataclasses import replace
from pathlib import Path

import pytest

from tracker.cli import main
from tracker.cli.index import _per_document
from tracker.demo.site import build_site
from tracker.index.storage import RedisStorage, StorageMemory
from tracker.matching.library import MasterLibrary
from tracker.model import MasterDocument

from .texts import prose

DOCS = [
    MasterDocument(f"书/{i:02d}", "书", f"第{i}章", prose(seed=280 + i, chars=3000))
    for i in range(5)
]


# -------------------------------------------------------------------------------- index stats


def test_index_stats_counts_the_index_keys_bytes_not_the_server(cli_env, runtime, capsys):
    assert main(["index", "stats"]) == 0  # a new library: nothing to disagree about
    out = capsys.readouterr().out
    assert "index:   empty: nothing ingested yet" in out

    MasterLibrary.from_runtime(runtime).ingest(DOCS)
    assert main(["index", "stats"]) == 0
    out = capsys.readouterr().out
    keys = list(runtime.redis.scan_iter(match=runtime.settings.redis_prefix + "ix:*"))
    held = sum(runtime.redis.memory_usage(key, samples=0) for key in keys)
    assert f"{len(keys):,} keys, {held:,} bytes (MEMORY USAGE)" in out
    # 5 chapters: nearly every posting has a key of its own, whose bytes say nothing of a
    # larger library's cost per chapter.
    assert "per document: not meaningful yet" in out
    assert "bytes per document" not in out
    assert "used_memory" in out and "the whole server" in out


def test_index_memory_is_estimated_from_a_sample_of_keys(runtime):
    MasterLibrary.from_runtime(runtime).ingest(DOCS)
    storage = RedisStorage(runtime.redis, runtime.settings.redis_prefix + "ix:")
    exact, sampled = storage.memory(), storage.memory(sample=100)
    assert exact.exact and exact.sampled == exact.keys > 100
    assert not sampled.exact and sampled.sampled == 100 and sampled.keys == exact.keys
    assert abs(sampled.bytes - exact.bytes) < 0.2 * exact.bytes
    assert 0 < exact.payload < exact.bytes


def test_bytes_per_document_once_the_records_are_most_of_them():
    assert _per_document(StorageMemory(10_000, 1_000_000, 900_000, 2000), 1000) == (
        "; 1,000 bytes per document"
    )
    assert "not meaningful" in _per_document(StorageMemory(10_000, 1_000_000, 100_000, 2000), 9)
    assert _per_document(StorageMemory(0, 0, 0, 0), 0) == ""


# ------------------------------------------------------------------------------------- demo


def fresh_home(tmp_path: Path) -> dict[str, str]:
    """A newcomer's environment: no server URLs, no settings, an empty HOME (the embedded
    servers start under it)."""
    env = {k: v for k, v in os.environ.items() if k not in ("MONGO_URL", "REDIS_URL")}
    env = {k: v for k, v in env.items() if not k.startswith(("TRACKER_", "SCRAPY", "XDG_"))}
    env.update(HOME=str(tmp_path), TRACKER_DATA_DIR=str(tmp_path / "data"), COLUMNS="100")
    env["TRACKER_CHECK_WARM_S"] = "0"  # no warm checker left behind
    return env


def tracker(env: dict[str, str], *args: str, timeout: float = 300) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "tracker.cli", *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
        cwd=env["HOME"],
    )


@pytest.fixture(scope="module")
def newcomer(tmp_path_factory):
    """A fresh HOME on embedded servers: ``tracker index stats`` first, then ``tracker demo``
    (the servers stopped at the end)."""
    home = tmp_path_factory.mktemp("newcomer")
    env = fresh_home(home)
    try:
        stats = tracker(env, "index", "stats")
        demo = tracker(env, "demo")
        yield env, stats, demo
    finally:
        tracker(env, "services", "stop", timeout=60)


def report_urls(env: dict[str, str], *more: str) -> list[str]:
    report = tracker(env, "report", "--format", "json", *more)
    assert report.returncode == 0, report.stderr
    return sorted(page["url"] for page in json.loads(report.stdout)["pages"])


def demo_env(env: dict[str, str]) -> dict[str, str]:
    """The demo's own database and Redis keys (``tracker.cli.demo.apart`` of the defaults)."""
    return {**env, "TRACKER_MONGO_DB": "tracker_demo", "TRACKER_REDIS_PREFIX": "tracker-demo:"}


def test_the_demo_in_a_fresh_home_keeps_to_its_own_database(newcomer, tmp_path):
    env, stats, demo = newcomer
    assert stats.returncode == 0, stats.stdout + stats.stderr  # a fresh install: exit 0
    assert "nothing ingested yet" in stats.stdout
    assert demo.returncode == 0, demo.stdout[-2000:] + demo.stderr[-2000:]
    assert "the demo uses its own database tracker_demo and Redis keys tracker-demo:*" in (
        demo.stdout
    )
    assert "`tracker serve --demo`" in demo.stdout and "`tracker report --demo`" in demo.stdout
    listed = re.findall(r"^  (http://127\.0\.0\.1:\d+/\S+)  copies", demo.stdout, re.M)
    site = build_site(tmp_path / "site")
    # Every copy of the demo site (a chapter over two pages is one page, read whole).
    assert {url.split("/", 3)[3] for url in listed} == set(site.expected)
    assert report_urls(env, "--demo") == sorted(listed)
    assert report_urls(env) == []  # the user's library: nothing of the demo's
    stats = tracker(env, "index", "stats")
    assert stats.returncode == 0 and "nothing ingested yet" in stats.stdout

    # A copied chapter as the pirate site serves it (ads, its own encoding): found in the
    # demo's library.
    check = tracker(demo_env(env), "check", "--json", str(site.root / "book/1/4.html"))
    assert check.returncode == 1, check.stdout + check.stderr
    found = [match["doc_id"] for match in json.loads(check.stdout)["matches"]]
    assert found == site.expected["book/1/4.html"]
    assert tracker(demo_env(env), "index", "stats").returncode == 0


def test_the_embedded_database_backed_up_and_restored(newcomer, tmp_path):
    """deploy/README.md's embedded backup and restore: backed up while it runs, the data
    destroyed, restored; the index rebuilt, the report lists the same pages."""
    env = newcomer[0]
    before = report_urls(env, "--demo")
    assert len(before) == len(build_site(tmp_path / "site").expected)
    archive = tmp_path / "tracker.tar.gz"
    done = tracker(env, "services", "backup", str(archive))
    assert done.returncode == 0, done.stderr
    assert archive.stat().st_mode & 0o777 == 0o600

    assert tracker(env, "services", "stop").returncode == 0
    shutil.rmtree(Path(env["TRACKER_DATA_DIR"]) / "services" / "mongo" / "db")  # lost
    restored = tracker(env, "services", "restore", str(archive))
    assert restored.returncode == 0, restored.stderr
    assert "`tracker index rebuild`" in restored.stdout
    for step in (("index", "rebuild"), ("index", "verify")):
        done = tracker(demo_env(env), *step)
        assert done.returncode == 0, (step, done.stdout, done.stderr)
    assert report_urls(env, "--demo") == before


def test_the_user_s_ingest_crawl_report_and_rematch_never_meet_the_demo_s(newcomer, tmp_path):
    """After the demo: the user's own book, and a crawl of a site copying it. The report and
    rematch name only the user's pages and masters; ``demo --clear`` leaves them as they are."""
    from tests.pirate import PirateSite
    from tracker.config import Settings
    from tracker.crawling.crawl import run_crawl

    env = newcomer[0]
    demo_pages = report_urls(env, "--demo")
    assert demo_pages
    with PirateSite(3) as pirate:
        own = tmp_path / "own.jsonl"
        own.write_text(
            "".join(
                json.dumps({"id": m.doc_id, "work": m.work, "title": m.title, "text": m.text})
                + "\n"
                for m in pirate.masters
            ),
            encoding="utf-8",
        )
        ingested = tracker(env, "ingest", str(own))
        assert ingested.returncode == 0 and "3 new" in ingested.stdout, ingested.stderr
        settings = Settings(data_dir=Path(env["TRACKER_DATA_DIR"]))
        code = run_crawl(
            "novel",
            settings,
            arguments={"start_url": pirate.url + "book/"},
            log_file=tmp_path / "crawl.log",
            timeout=300,
        )
        assert code == 0, (tmp_path / "crawl.log").read_text(encoding="utf-8")[-3000:]
        pirated = sorted(pirate.page_url(k) for k in range(1, 4))
    ours = {m.doc_id for m in pirate.masters}
    report = tracker(env, "report", "--format", "json")
    pages = json.loads(report.stdout)["pages"]
    assert sorted(page["url"] for page in pages) == pirated
    assert {d for page in pages for d in page["doc_ids"]} == ours
    rematch = tracker(env, "rematch", "--json")
    assert rematch.returncode == 0, rematch.stderr
    assert set(json.loads(rematch.stdout)["new_doc_ids"]) <= ours
    assert report_urls(env) == pirated  # rematch matched nothing of the demo's

    cleared = tracker(env, "demo", "--clear")
    assert cleared.returncode == 0, cleared.stderr
    assert "removed the demo's database tracker_demo" in cleared.stdout
    assert "your library (database tracker) was not touched" in cleared.stdout
    assert report_urls(env) == pirated
    assert report_urls(env, "--demo") == []
    listing = tracker(env, "index", "list", "--work", pirate.masters[0].work)
    assert listing.returncode == 0 and "3 document" not in listing.stderr
    assert all(doc_id in listing.stdout for doc_id in ours)


def test_a_backup_never_overwrites_and_a_broken_one_changes_nothing(tmp_path, monkeypatch):
    from tracker.config import Settings
    from tracker.servers import services
    from tracker.servers.backup import backup, restore
    from tracker.servers.services import ServiceError

    def no_swap(*args, **kwargs):
        raise AssertionError("the server's data was replaced")

    monkeypatch.setattr(services, "replace_data", no_swap)
    settings = Settings(data_dir=tmp_path / "data")  # embedded: no server is reached here
    (tmp_path / "taken.tar.gz").write_bytes(b"kept")
    with pytest.raises(ServiceError, match="exists: give the backup a new file name"):
        backup(settings, tmp_path / "taken.tar.gz")
    assert (tmp_path / "taken.tar.gz").read_bytes() == b"kept"
    with pytest.raises(ServiceError, match="is not a backup"):
        restore(settings, tmp_path / "taken.tar.gz")
    cut = tmp_path / "cut.tar.gz"  # a gzip'd tar cut short (a copy that did not finish)
    with tarfile.open(cut, "w:gz") as tar:
        tar.add(Path(__file__), arcname="WiredTiger")
        tar.add(Path(tarfile.__file__), arcname="collection-1.wt")
    cut.write_bytes(cut.read_bytes()[: cut.stat().st_size // 2])
    with pytest.raises(ServiceError, match="could not be restored"):
        restore(settings, cut)
    assert not (tmp_path / "data" / "services" / "mongo" / "db").exists()  # nothing swapped
    with pytest.raises(ServiceError, match="MONGO_URL is set: restore that server"):
        restore(Settings(data_dir=tmp_path, mongo_url="mongodb://db.example/"), cut)


def crawl_leaving_a_page(spider: str, settings, arguments: dict, log_file) -> int:
    """In place of the demo's crawl: one page of the site stored, then a failure."""
    from tracker.servers.runtime import Runtime
    from tracker.stores.pages import PageRecord, PageStore

    runtime = Runtime(settings)
    PageStore(runtime.db).save(PageRecord(url=arguments["start_url"] + "book/1/1.html", text="页"))
    runtime.close()
    return 1


def test_a_second_demo_replaces_the_first_and_clear_removes_it(
    cli_env, settings, runtime, monkeypatch, capsys
):
    import tracker.crawling.crawl
    from tracker.cli.demo import apart
    from tracker.console.users import Users
    from tracker.servers.runtime import Runtime
    from tracker.stores.demo import DemoStore, Holds

    monkeypatch.setattr(tracker.crawling.crawl, "run_crawl", crawl_leaving_a_page)
    Users(runtime.db).add("alice", "viewer", "a long passphrase")
    own = DOCS[0]
    MasterLibrary.from_runtime(runtime).ingest([own])
    demo = Runtime(apart(settings))
    try:
        assert main(["demo"]) == 1  # the stand-in crawl fails after storing a page
        [first] = [page["_id"] for page in demo.db["pages"].find({}, {"_id": 1})]
        assert main(["demo"]) == 1
        [second] = [page["_id"] for page in demo.db["pages"].find({}, {"_id": 1})]
        assert second != first  # the first demo's page went with it (another port)
        out = capsys.readouterr().out
        assert f"the demo uses its own database {settings.mongo_db}_demo" in out
        assert demo.db["masters"].count_documents({}) == 9
        assert list(demo.redis.scan_iter(match=apart(settings).redis_prefix + "ix:*"))
        # The user's library, fresh install or not, is never written.
        assert runtime.db["masters"].distinct("_id") == [own.doc_id]
        assert runtime.db["pages"].count_documents({}) == 0

        assert main(["demo", "--clear"]) == 0
        out = capsys.readouterr().out
        assert f"removed the demo's database {settings.mongo_db}_demo (9 sample masters" in out
        assert f"your library (database {settings.mongo_db}) was not touched" in out
        assert demo.db["masters"].count_documents({}) == 0
        assert not list(demo.redis.scan_iter(match=apart(settings).redis_prefix + "ix:*"))
        assert runtime.db["masters"].distinct("_id") == [own.doc_id]
        assert Users(runtime.db).get("alice") is not None
        assert main(["index", "stats"]) == 0

        # What an earlier version's demo left in the user's database, holding nothing else,
        # goes too, its masters kept.
        runtime.db["masters"].delete_many({})
        sample = [replace(doc, doc_id=f"红楼梦/{i}") for i, doc in enumerate(DOCS, 1)]
        DemoStore(runtime.db).mark([doc.doc_id for doc in sample])
        library = MasterLibrary.from_runtime(runtime)
        library.ingest(sample)
        DemoStore(runtime.db).mark([doc.doc_id for doc in sample], library.store.version())
        assert DemoStore(runtime.db).holds() is Holds.DEMO
        assert main(["demo", "--clear"]) == 0
        out = capsys.readouterr().out
        assert "removed an earlier demo's data from your library" in out
        assert "5 sample masters, kept for 30 days" in out
        assert runtime.db["masters"].count_documents({}) == 0
        assert DemoStore(runtime.db).holds() is Holds.NOTHING
        assert main(["index", "restore-deleted", "--all"]) == 0
        assert sorted(runtime.db["masters"].distinct("_id")) == sorted(d.doc_id for d in sample)
    finally:
        demo.close()


def test_what_counts_as_the_user_s_own_data(runtime):
    from tracker.stores.demo import DemoStore, Holds
    from tracker.stores.pages import PageRecord, PageStore

    store, pages = DemoStore(runtime.db), PageStore(runtime.db)
    assert store.holds() is Holds.NOTHING
    pages.save(PageRecord(url="https://pirate.example/1.html", text="页"))
    assert store.holds() is Holds.DATA  # a page, and no demo ever ran
    runtime.db["pages"].delete_many({})

    library = MasterLibrary.from_runtime(runtime)
    store.mark([doc.doc_id for doc in DOCS[:2]])
    library.ingest(DOCS[:2])
    assert store.holds() is Holds.DEMO  # cut short before its version was recorded
    store.mark([doc.doc_id for doc in DOCS[:2]], library.store.version())
    store.add_site("http://127.0.0.1:8000/")
    pages.save(PageRecord(url="http://127.0.0.1:8000/book/1/1.html", text="页"))
    assert store.holds() is Holds.DEMO
    pages.save(PageRecord(url="http://127.0.0.1:8001/book/1/1.html", text="页"))
    assert store.holds() is Holds.DATA  # a crawl of another site
    runtime.db["pages"].delete_one({"_id": "http://127.0.0.1:8001/book/1/1.html"})
    library.ingest(DOCS[:1])  # the same ids, the same texts: left as they were, the demo's
    assert store.holds() is Holds.DEMO
    library.ingest([replace(DOCS[0], text=DOCS[0].text + "补")])  # changed: the version moves on
    assert store.holds() is Holds.DATA
    store.mark([doc.doc_id for doc in DOCS[:2]], library.store.version())
    assert store.holds() is Holds.DEMO
    library.ingest(DOCS[2:3])  # a master of the user's
    assert store.holds() is Holds.DATA


def test_serve_demo_shows_the_demo_s_pages_to_the_user_s_accounts(settings, runtime):
    """``tracker serve --demo``: the console on the demo's database, the user's accounts
    signing in; the user's own console does not show the demo's pages."""
    from fastapi.testclient import TestClient

    from tracker.cli.demo import apart
    from tracker.console import create_app
    from tracker.console.users import Users
    from tracker.servers.runtime import Runtime
    from tracker.stores.pages import MatchStore, PageRecord, PageStore

    viewer = ("vera", "a long passphrase for vera")
    Users(runtime.db).add(viewer[0], "viewer", viewer[1])
    demo_settings = apart(settings)
    demo = Runtime(demo_settings)
    url = "http://127.0.0.1:8000/book/1/1.html"
    try:
        doc = DOCS[0]
        MasterLibrary.from_runtime(demo).ingest([doc])
        PageStore(demo.db).save(PageRecord(url=url, text=doc.text, matched=[doc.doc_id]))
        MatchStore(demo.db).record(url, [{"doc_id": doc.doc_id, "work": doc.work, "score": 1.0}])
        app = create_app(demo_settings, demo, users_db=runtime.db)
        with TestClient(app) as client:
            answer = client.get("/api/pages", auth=viewer)
            assert answer.status_code == 200, answer.text
            assert url in answer.text
        with TestClient(create_app(settings, runtime)) as own:
            answer = own.get("/api/pages", auth=viewer)
            assert answer.status_code == 200 and url not in answer.text
    finally:
        demo.mongo.drop_database(demo_settings.mongo_db)
        demo.close()
