"""`tracker schedule` and `tracker run-job` as real processes on the embedded servers: a scheduler
killed mid-pull, restarted, and stopped cleanly; a real crawl job through ``run_crawl``."""

from __future__ import annotations

import contextlib
import json
import os
import random
import signal
import subprocess
import sys
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path

import pytest

from tracker.crawling.crawl import crawl_environment
from tracker.demo import build_site, master_documents, serve
from tracker.matching.library import MasterLibrary
from tracker.scheduler.service import lock_name

pytestmark = pytest.mark.integration

DOCUMENTS = 900
BATCH = 20


def wait_for(condition, proc: subprocess.Popen, log: Path, what: str, polls: int = 3000):
    """Poll ``condition`` every 20 ms while the process lives (bounded, so a hang fails)."""
    for _ in range(polls):
        value = condition()
        if value:
            return value
        if proc.poll() is not None:
            pytest.fail(f"scheduler exited ({proc.returncode}) before {what}:\n{tail(log)}")
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(0.02)
    pytest.fail(f"gave up waiting for {what}:\n{tail(log)}")


def tail(log: Path) -> str:
    return log.read_text(errors="replace")[-4000:] if log.exists() else "(no log)"


def start_scheduler(env: dict[str, str], log: Path) -> subprocess.Popen:
    return subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import sys; from tracker.cli import main; sys.exit(main())",
            "schedule",
        ],
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=log.open("ab"),
        stderr=subprocess.STDOUT,
    )


@pytest.fixture()
def inbox(tmp_path) -> Path:
    """Three .jsonl files of distinct short articles cut from the bundled sample."""
    text = "".join(doc.text for doc in master_documents())
    rng = random.Random(5)
    folder = tmp_path / "inbox"
    folder.mkdir()
    per_file = DOCUMENTS // 3
    for part in range(3):
        lines = []
        for i in range(per_file):
            start = rng.randrange(0, len(text) - 400)
            doc_id = f"art-{part}-{i:04d}"
            record = {"id": doc_id, "work": f"feed-{part}", "text": text[start : start + 300]}
            lines.append(json.dumps(record, ensure_ascii=False))
        (folder / f"feed-{part}.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return folder


def test_killed_mid_pull_then_restarted_ingests_every_document_once(
    runtime, settings, inbox, tmp_path
):
    # Embedded defaults: unless the test session runs on external servers, the scheduler
    # finds the embedded ones through the data directory alone.
    embedded = replace(
        settings, mongo_url=os.environ.get("MONGO_URL"), redis_url=os.environ.get("REDIS_URL")
    )
    env = crawl_environment(embedded)
    env.update(
        {
            "TRACKER_DROP_DIR": str(inbox),
            "TRACKER_PULL_BATCH_SIZE": str(BATCH),
            "TRACKER_PULL_CRON": "0 0 1 1 *",  # only the first pull, at start, and its rerun
            "TRACKER_SCHEDULER_LOCK_S": "3",
        }
    )
    env.pop("TRACKER_CONFIG", None)
    db, log = runtime.db, tmp_path / "scheduler.log"
    cursors = db["master_sources"]

    def committed() -> int:
        return sum(int(doc.get("done", 0)) for doc in cursors.find())

    first = start_scheduler(env, log)
    try:
        wait_for(lambda: committed() >= BATCH, first, log, "the first committed batch")
        first.send_signal(signal.SIGKILL)
        assert first.wait(60) == -signal.SIGKILL
    finally:
        if first.poll() is None:
            first.kill()
    done_at_kill = committed()
    masters_at_kill = db["masters"].count_documents({})
    assert BATCH <= done_at_kill < DOCUMENTS, "the pull finished before it could be killed"
    assert masters_at_kill - done_at_kill <= BATCH  # at most the batch in flight
    assert runtime.redis.get(lock_name(settings)) is not None  # the dead holder's lock

    second = start_scheduler(env, log)
    try:
        # The restarted scheduler waits for the dead one's lock to expire, marks the killed
        # run interrupted and runs the pull again at once, from the cursors.
        resumed = wait_for(
            lambda: db["job_runs"].find_one({"job": "pull", "status": "ok"}),
            second,
            log,
            "the resumed pull",
        )
        second.send_signal(signal.SIGTERM)
        assert second.wait(120) == 0, tail(log)
    finally:
        if second.poll() is None:
            second.kill()
    assert runtime.redis.get(lock_name(settings)) is None  # released on SIGTERM
    assert "scheduler stopped" in tail(log)

    statuses = sorted(r["status"] for r in db["job_runs"].find({"job": "pull"}))
    assert statuses == ["interrupted", "ok"]
    result = resumed["result"]
    assert result["documents"] == DOCUMENTS - done_at_kill  # nothing committed was repeated
    # The batch in flight was stored before the kill: read again, it is left as it was.
    assert (result["replaced"], result["unchanged"]) == (0, masters_at_kill - done_at_kill)
    assert db["masters"].count_documents({}) == DOCUMENTS
    assert len(db["masters"].distinct("n")) == DOCUMENTS
    for cursor in cursors.find():
        assert (cursor["status"], cursor["done"]) == ("done", DOCUMENTS // 3)
    # Documents from before the kill and from after the restart are both in the index.
    detector = MasterLibrary.from_runtime(runtime).detector(settings)
    for doc_id in ("art-0-0000", f"art-2-{DOCUMENTS // 3 - 1:04d}"):
        text = db["masters"].find_one({"_id": doc_id})["text"]
        assert doc_id in [m.doc_id for m in detector.check(text)]


def main(argv: list[str]) -> int:
    from tracker.cli import main as tracker_main

    return tracker_main(argv)


def test_a_real_crawl_job_then_the_notices(runtime, settings, tmp_path, monkeypatch, capsys):
    library = MasterLibrary.from_runtime(runtime)
    library.ingest(master_documents())
    manifest = build_site(tmp_path / "site")
    data_dir = tmp_path / "data"
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("TRACKER_CONFIG", raising=False)
    monkeypatch.setenv("MONGO_URL", settings.mongo_url)
    monkeypatch.setenv("REDIS_URL", settings.redis_url)
    monkeypatch.setenv("TRACKER_MONGO_DB", settings.mongo_db)
    monkeypatch.setenv("TRACKER_REDIS_PREFIX", settings.redis_prefix)

    with serve(manifest.root) as site:
        sites = [
            {
                "name": "demo",
                "spider": "novel",
                "cron": "0 3 * * *",
                "arguments": {"start_url": site.url},
                "timeout_s": 300,
            }
        ]
        monkeypatch.setenv("TRACKER_SITES", json.dumps(sites))
        code = main(["--data-dir", str(data_dir), "run-job", "crawl:demo"])
    record = json.loads(capsys.readouterr().out)
    assert code == 0, record
    assert record["status"] == "ok" and record["trigger"] == "manual"
    result = record["result"]
    assert result["exit_code"] == 0 and result["reason"] == "finished"
    assert result["stats"]["tracker__pages_matched"] == len(manifest.expected)
    assert result["clustering"]["pages"] == len(manifest.expected)
    assert Path(result["log_file"]).parent == data_dir / "logs"

    today = datetime.now(UTC).date().isoformat()
    assert (
        main(["--data-dir", str(data_dir), "report", "--date", today, "--format", "notices"]) == 0
    )
    [path] = capsys.readouterr().out.split()
    notice = Path(path).read_text(encoding="utf-8")
    assert Path(path).name == "notice-127.0.0.1.txt"
    for page in manifest.expected:
        assert site.url + page in notice
    assert "《红楼梦》" in notice and "复制内容（最长一段）：「" in notice
    # Reading a report stores nothing: the figures trends read are the report job's to store.
    assert runtime.db["reports"].find_one({"_id": today}) is None

    assert main(["--data-dir", str(data_dir), "schedule", "--list"]) == 0
    listing = capsys.readouterr().out.splitlines()
    assert listing[0] == "no scheduler is acting"
    assert listing[1].split() == ["JOB", "SCHEDULE", "NEXT", "RUN", "LAST", "RUN"]
    crawl_row = next(line for line in listing if line.startswith("crawl:demo"))
    assert "0 3 * * *" in crawl_row and "(not yet scheduled)" in crawl_row
    assert " ok " in crawl_row


def test_run_job_names_the_jobs_when_asked_for_an_unknown_one(
    runtime, settings, monkeypatch, capsys, tmp_path
):
    monkeypatch.setenv("MONGO_URL", settings.mongo_url)
    monkeypatch.setenv("REDIS_URL", settings.redis_url)
    monkeypatch.setenv("TRACKER_MONGO_DB", settings.mongo_db)
    monkeypatch.delenv("TRACKER_SITES", raising=False)
    monkeypatch.delenv("TRACKER_CONFIG", raising=False)
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("TRACKER_SEARCH_URL", raising=False)
    assert main(["run-job", "crawl:nowhere"]) == 2
    assert capsys.readouterr().err.strip() == (
        "tracker: error: no job named 'crawl:nowhere' (no site named 'nowhere' in the sites "
        "setting: [[sites]] name = …); the jobs are: pull, rematch, report, takedown, discover"
    )
    # Discover is every tracker's job; with no engine and no book source its search says why.
    assert main(["run-job", "discover"]) == 0
    record = json.loads(capsys.readouterr().out)
    skipped = record["result"]["discovery"]["skipped"]
    assert "search_url (TRACKER_SEARCH_URL) is not set" in skipped
    assert "tracker sources import" in skipped
