"""Master sources (drop folder, MongoDB collection), their cursors, and the schedule settings."""

from __future__ import annotations

import json
import os
import threading
from dataclasses import replace
from datetime import UTC, date, datetime, timedelta

import pytest

from tracker.config import ConfigError, Settings
from tracker.matching.library import MasterLibrary
from tracker.scheduler.jobs import job_plan, report_days
from tracker.scheduler.sources import CollectionSource, DropFolder, configured_sources
from tracker.stores.sources import SourceCollection, SourceCursorStore

TEXT = "萧炎望着那测验魔石碑，面无表情，三十年河东，三十年河西，莫欺少年穷！"


def record(doc_id: str, work: str = "w") -> dict:
    return {"id": doc_id, "work": work, "title": doc_id, "text": f"{doc_id}：{TEXT}"}


def write_jsonl(path, *records: dict) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records), "utf-8")


@pytest.fixture()
def library(runtime) -> MasterLibrary:
    return MasterLibrary.from_runtime(runtime)


@pytest.mark.integration
def test_drop_folder_ingests_new_and_changed_files_once(runtime, library, tmp_path):
    inbox = tmp_path / "inbox"
    write_jsonl(inbox / "a.jsonl", record("a1"), record("a2"))
    write_jsonl(inbox / "sub" / "b.jsonl", record("b1"))
    write_jsonl(inbox / ".c.jsonl", record("c1"))  # being copied in: ignored
    write_jsonl(inbox / "d.jsonl.part", record("d1"))
    (inbox / "notes.md").write_text("not a master file")
    drop, cursors = DropFolder(inbox), SourceCursorStore(runtime.db)

    first = drop.pull(library, cursors, batch_size=10)
    assert (first.files, first.documents, first.added) == (2, 3, 3)
    assert sorted(d["_id"] for d in runtime.db["masters"].find()) == ["a1", "a2", "b1"]
    assert cursors.get("drop:sub/b.jsonl")["status"] == "done"

    again = drop.pull(library, cursors, batch_size=10)
    assert (again.files, again.documents) == (0, 0)

    os.utime(inbox / "a.jsonl")  # touched, same content: not ingested again
    assert drop.pull(library, cursors, batch_size=10).documents == 0

    stored_in = runtime.db["masters"].find_one({"_id": "a1"})["changed_in"]
    write_jsonl(inbox / "a.jsonl", record("a1"), record("a2"), record("a3"))  # grew
    changed = drop.pull(library, cursors, batch_size=10)
    # a1 and a2 are read again but stored unchanged: left as they were, not replaced.
    assert (changed.files, changed.documents, changed.added) == (1, 3, 1)
    assert (changed.replaced, changed.unchanged) == (0, 2)
    assert runtime.db["masters"].find_one({"_id": "a1"})["changed_in"] == stored_in
    assert runtime.db["masters"].count_documents({}) == 4


@pytest.mark.integration
def test_a_malformed_file_is_skipped_until_it_changes(runtime, library, tmp_path, caplog):
    inbox = tmp_path / "inbox"
    write_jsonl(inbox / "good.jsonl", record("g1"))
    (inbox / "bad.jsonl").write_text('{"id": "x1", "text": "fine"}\n{"id": "x2", "text": \n')
    drop, cursors = DropFolder(inbox), SourceCursorStore(runtime.db)

    summary = drop.pull(library, cursors, batch_size=10)

    assert (summary.documents, summary.skipped) == (1, 1)
    assert "bad.jsonl:2: invalid JSON" in summary.errors[0]
    assert "skipped malformed master file" in caplog.text
    assert runtime.db["masters"].find_one({"_id": "x1"}) is None  # nothing of a bad file
    assert cursors.get("drop:bad.jsonl")["status"] == "failed"
    assert drop.pull(library, cursors, batch_size=10).skipped == 0  # not retried unchanged

    write_jsonl(inbox / "bad.jsonl", record("x1"), record("x2"))
    fixed = drop.pull(library, cursors, batch_size=10)
    assert (fixed.documents, fixed.skipped) == (2, 0)


@pytest.mark.integration
def test_a_stopped_pull_resumes_after_the_last_committed_batch(runtime, library, tmp_path):
    inbox = tmp_path / "inbox"
    write_jsonl(inbox / "big.jsonl", *(record(f"d{i}") for i in range(7)))
    drop, cursors = DropFolder(inbox), SourceCursorStore(runtime.db)
    stop = threading.Event()
    ingest = library.ingest

    def ingest_then_stop(batch, *args, **kwargs):
        result = ingest(batch, *args, **kwargs)
        stop.set()  # a shutdown arrives during the first batch
        return result

    library.ingest = ingest_then_stop  # type: ignore[method-assign]
    first = drop.pull(library, cursors, batch_size=3, stop=stop)
    assert (first.documents, first.interrupted) == (3, True)
    assert cursors.get("drop:big.jsonl")["done"] == 3

    library.ingest = ingest  # type: ignore[method-assign]
    rest = drop.pull(library, cursors, batch_size=3)
    assert (rest.documents, rest.added, rest.replaced) == (4, 4, 0)
    assert cursors.get("drop:big.jsonl")["status"] == "done"
    assert runtime.db["masters"].count_documents({}) == 7


@pytest.mark.integration
def test_collection_source_reads_new_documents_in_cursor_order(runtime, library, settings):
    source_db = runtime.mongo[settings.mongo_db + "_src"]
    try:
        collection = source_db["articles"]
        moment = datetime(2031, 1, 1, tzinfo=UTC)
        collection.insert_many(
            [
                {"_id": 1, "updated_at": moment, **record("n1", "news")},
                {"_id": 2, "updated_at": moment, **record("n2", "news")},
                {"_id": 3, "updated_at": moment, "title": "no text"},
                {"_id": 4, "updated_at": moment, **record("n4", "news")},
            ]
        )
        source = CollectionSource(SourceCollection(collection, "updated_at"))
        cursors = SourceCursorStore(runtime.db)

        first = source.pull(library, cursors, batch_size=2)
        assert (first.documents, first.skipped) == (3, 1)
        # The cursor sits on a tie (same updated_at): documents after it still come.
        collection.insert_one({"_id": 5, "updated_at": moment, **record("n5", "news")})
        collection.insert_one(
            {"_id": 0, "updated_at": moment + timedelta(seconds=1), **record("n0", "news")}
        )
        second = source.pull(library, cursors, batch_size=2)
        assert second.documents == 2
        assert source.pull(library, cursors, batch_size=2).documents == 0
        assert sorted(d["_id"] for d in runtime.db["masters"].find()) == [
            "n0",
            "n1",
            "n2",
            "n4",
            "n5",
        ]
        assert runtime.db["masters"].find_one({"_id": "n1"})["work"] == "news"

        configured = replace(
            settings, master_source_db=source_db.name, master_source_collection="articles"
        )
        _, by_id = configured_sources(configured, runtime.db)
        assert by_id.documents.client is None and by_id.cursor_field == "_id"
        assert by_id.source_id == f"mongo:{source_db.name}.articles"
    finally:
        runtime.mongo.drop_database(source_db.name)


def test_sites_and_schedule_come_from_toml_and_the_environment(tmp_path, monkeypatch):
    for name in list(os.environ):
        if name.startswith("TRACKER_"):
            monkeypatch.delenv(name)
    config = tmp_path / "tracker.toml"
    config.write_text(
        """
report_time = "07:30"
pull_cron = "*/5 * * * *"
schedule_timezone = "Asia/Shanghai"

[[sites]]
name = "biquge"
spider = "site"
cron = "0 */6 * * *"
arguments = { site = "biquge", max_pages = 500 }

[[sites]]
name = "news-mirror"
spider = "novel"
cron = "15 3 * * 1-5"
arguments = { start_url = "https://news-mirror.example/" }
settings = { DOWNLOAD_DELAY = 2 }
timeout_s = 600
""",
        encoding="utf-8",
    )
    settings = Settings.load(config)
    plan = {spec.name: spec for spec in job_plan(settings)}
    assert list(plan) == [
        *("pull", "rematch", "report", "takedown", "discover", "crawl:biquge", "crawl:news-mirror")
    ]
    assert plan["crawl:biquge"].site.arguments == {"site": "biquge", "max_pages": 500}
    assert plan["crawl:news-mirror"].site.settings == {"DOWNLOAD_DELAY": 2}
    assert plan["crawl:news-mirror"].site.timeout_s == 600
    assert plan["report"].schedule == "daily at 07:30 Asia/Shanghai"
    fire = plan["report"].trigger.get_next_fire_time(None, datetime(2031, 1, 1, tzinfo=UTC))
    assert fire.astimezone(UTC) == datetime(2031, 1, 1, 23, 30, tzinfo=UTC)

    monkeypatch.setenv(
        "TRACKER_SITES", json.dumps([{"name": "x", "spider": "novel", "cron": "0 1 * * *"}])
    )
    assert [s.name for s in job_plan(Settings.load(config))][-1] == "crawl:x"


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"pull_cron": "every hour"}, "pull_cron: invalid cron expression"),
        ({"report_time": "25:00"}, "report_time: expected HH:MM"),
        ({"schedule_timezone": "Mars/Olympus"}, "schedule_timezone"),
        ({"sites": ({"name": "a", "spider": "novel"},)}, "sites[0]: missing cron"),
        ({"sites": ({"name": "a b", "spider": "n", "cron": "0 1 * * *"},)}, "may use only"),
        ({"sites": ({"name": "a", "spider": "n", "cron": "0 1 * * *", "cronn": 1},)}, "cronn"),
        ({"sites": ({"name": "a", "spider": "n", "cron": "61 1 * * *"},)}, "sites[0] (a)"),
        ({"sites": ("not a table",)}, "sites[0]: expected a table"),
        (
            {"sites": ({"name": "a", "spider": "n", "cron": "0 1 * * *", "arguments": [1]},)},
            "arguments must be a table",
        ),
        (
            {"sites": tuple({"name": "a", "spider": "n", "cron": "0 1 * * *"} for _ in "xy")},
            "used twice",
        ),
    ],
)
def test_bad_schedule_settings_are_clear_errors(change, message):
    with pytest.raises(ConfigError, match=None) as error:
        job_plan(replace(Settings(), **change))
    assert message in str(error.value)


def test_bad_sites_json_in_the_environment(monkeypatch):
    monkeypatch.setenv("TRACKER_SITES", "[{not json")
    with pytest.raises(ConfigError, match=r"setting sites \(TRACKER_SITES\)="):
        Settings.load()


def test_report_days_catch_up_missed_days():
    target = date(2031, 3, 10)
    assert report_days(None, target) == [target]
    assert report_days(date(2031, 3, 9), target) == [target]
    assert report_days(date(2031, 3, 7), target) == [
        date(2031, 3, 8),
        date(2031, 3, 9),
        target,
    ]
    assert report_days(date(2031, 1, 1), target)[0] == date(2031, 3, 4)  # at most 7 days


def test_a_site_file_can_carry_its_own_schedule(tmp_path):
    site_file = tmp_path / "biquge.yaml"
    site_file.write_text(
        "name: biquge\nstart_urls: ['http://127.0.0.1:9/']\nschedule: '30 2 * * *'\n",
        encoding="utf-8",
    )
    site = {"name": "biquge", "spider": "site", "arguments": {"config": str(site_file)}}
    [spec] = [s for s in job_plan(replace(Settings(), sites=(site,))) if s.site]
    assert (spec.name, spec.site.cron) == ("crawl:biquge", "30 2 * * *")
    site_file.write_text("name: biquge\nstart_urls: ['http://127.0.0.1:9/']\n", encoding="utf-8")
    with pytest.raises(ConfigError, match=r"sites\[0\]: missing cron"):
        job_plan(replace(Settings(), sites=(site,)))
    missing = {**site, "arguments": {"config": str(tmp_path / "nope.yaml")}}
    with pytest.raises(ConfigError, match=r"sites\[0\]: .*nope.yaml"):
        job_plan(replace(Settings(), sites=(missing,)))
