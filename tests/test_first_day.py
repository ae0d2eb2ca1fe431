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


def report_urls(env: dict[str, str]) -> list[str]:
    report = tracker(env, "report", "--format", "json")
    assert report.returncode == 0, report.stderr
    return sorted(page["url"] for page in json.loads(report.stdout)["pages"])


def test_after_the_demo_in_a_fresh_home_the_report_lists_its_pages(newcomer, tmp_path):
    env, stats, demo = newcomer
    assert stats.returncode == 0, stats.stdout + stats.stderr  # a fresh install: exit 0
    assert "nothing ingested yet" in stats.stdout
    assert demo.returncode == 0, demo.stdout[-2000:] + demo.stderr[-2000:]
    assert "the demo writes into your library (database tracker" in demo.stdout
    listed = re.findall(r"^  (http://127\.0\.0\.1:\d+/\S+)  copies", demo.stdout, re.M)
    site = build_site(tmp_path / "site")
    # Every copy of the demo site (a chapter over two pages is one page, read whole).
    assert {url.split("/", 3)[3] for url in listed} == set(site.expected)
    assert report_urls(env) == sorted(listed)

    # A copied chapter as the pirate site serves it (ads, its own encoding): found in the
    # library the demo filled (it said "no match", exit 0, with the demo's database apart).
    check = tracker(env, "check", "--json", str(site.root / "book/1/4.html"))
    assert check.returncode == 1, check.stdout + check.stderr
    found = [match["doc_id"] for match in json.loads(check.stdout)["matches"]]
    assert found == site.expected["book/1/4.html"]
    assert tracker(env, "index", "stats").returncode == 0


def test_the_embedded_database_backed_up_and_restored(newcomer, tmp_path):
    """deploy/README.md's embedded backup and restore: backed up while it runs, the data
    destroyed, restored; the index rebuilt, the report lists the same pages."""
    env = newcomer[0]
    before = report_urls(env)
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
        done = tracker(env, *step)
        assert done.returncode == 0, (step, done.stdout, done.stderr)
    assert report_urls(env) == before


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
    from tracker.console.users import Users
    from tracker.stores.demo import DemoStore, Holds

    monkeypatch.setattr(tracker.crawling.crawl, "run_crawl", crawl_leaving_a_page)
    Users(runtime.db).add("alice", "viewer", "a long passphrase")
    assert main(["demo"]) == 1
    [first] = [page["_id"] for page in runtime.db["pages"].find({}, {"_id": 1})]
    assert DemoStore(runtime.db).holds() is Holds.DEMO
    assert main(["demo"]) == 1
    [second] = [page["_id"] for page in runtime.db["pages"].find({}, {"_id": 1})]
    assert second != first  # the first demo's page went with it (another port)
    assert "an earlier demo's data, replaced" in capsys.readouterr().out
    assert runtime.db["masters"].count_documents({}) == 9

    assert main(["demo", "--clear"]) == 0
    assert "removed the demo's data" in capsys.readouterr().out
    assert DemoStore(runtime.db).holds() is Holds.NOTHING
    assert not list(runtime.redis.scan_iter(match=settings.redis_prefix + "ix:*"))
    assert not list(runtime.redis.scan_iter(match=settings.redis_prefix + "pix:*"))
    assert Users(runtime.db).get("alice") is not None  # the console's users stay
    assert main(["index", "stats"]) == 0


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
