"""The crawl fleet: the scheduler's job posts a distributed crawl on the board, a standing
``tracker crawl-worker`` joins it, and the two processes fetch each page once between them; the
board is empty afterwards, and a worker never starts a crawl that is over."""

from __future__ import annotations

import signal
import subprocess
import sys
import threading
import time
from dataclasses import replace

import pytest

from tests.test_crawl_distributed import PAGES, linked_site
from tracker.cli.crawl_worker import least_manned
from tracker.crawling.crawl import run_crawl
from tracker.crawling.crawl_board import JOIN_SETTING, CrawlBoard, crawl_keys
from tracker.scheduler.jobs import JobContext

pytestmark = pytest.mark.integration


def test_the_board_lists_the_crawls_posted_until_they_go_stale(runtime):
    board = CrawlBoard(runtime.redis, runtime.settings.redis_prefix)
    entry = board.post("pirate-1", "novel", {"start_url": "http://127.0.0.1:1/"}, {"X": 1}, 60)
    board.post("pirate-0", "novel", {}, {}, ttl=-1)  # its scheduler died long ago
    [crawl] = board.crawls()
    assert crawl["id"] == "pirate-1" and crawl["spider"] == "novel"
    assert crawl["arguments"] == {"start_url": "http://127.0.0.1:1/"}
    assert crawl["settings"] == {"X": 1}
    assert runtime.redis.zcard(board.key) == 1  # the stale one is gone
    assert board.workers("pirate-1") == 0  # posted, but no process has it open yet
    # A worker goes where the fewest processes are (each keeps its own per-site limits).
    board.post("pirate-2", "novel", {"start_url": "http://127.0.0.1:2/"}, {}, 60)
    for crawl_id, processes in (("pirate-1", 2), ("pirate-2", 1)):
        keys = f"{crawl_keys(runtime.settings.redis_prefix, crawl_id)}:workers"
        runtime.redis.zadd(keys, {f"worker{i}": 0 for i in range(processes)})
    assert least_manned(board, board.crawls())["id"] == "pirate-2"
    assert least_manned(board, board.crawls()[:1])["id"] == "pirate-1"
    board.remove(entry)
    assert [crawl["id"] for crawl in board.crawls()] == ["pirate-2"]


def test_a_standing_worker_joins_the_schedulers_crawl(runtime, settings, server_env, tmp_path):
    site = linked_site()
    for page in site.pages.values():
        page.delay = 0.5  # the crawl lasts long enough for a worker to join
    crawl = {
        "TRACKER_DISTRIBUTED": 1,
        "MAX_IDLE_TIME_BEFORE_CLOSE": 2,
        "AUTOTHROTTLE_START_DELAY": 0.2,
        "CONCURRENT_REQUESTS_PER_DOMAIN": 1,
    }
    with site:
        sched = replace(
            settings,  # the session's servers, named by URL: the crawls reach them too
            data_dir=tmp_path,
            sites=(
                {
                    "name": "pirate",
                    "spider": "novel",
                    "cron": "0 3 * * *",
                    "arguments": {"start_url": site.url},
                    "settings": crawl,
                },
            ),
        )
        worker = subprocess.Popen(
            [sys.executable, "-m", "tracker.cli", "crawl-worker", "--poll", "0.3"],
            env=server_env,
            stderr=subprocess.PIPE,
            text=True,
        )
        lines: list[str] = []
        waiting = threading.Event()

        def read() -> None:
            for line in worker.stderr:
                lines.append(line)
                if "crawl worker waiting for crawls" in line:
                    waiting.set()

        reader = threading.Thread(target=read, daemon=True)
        reader.start()
        try:
            # Posted once the worker looks at the board: on a loaded machine its start-up
            # alone could outlast the crawl it is meant to join.
            assert waiting.wait(120), "".join(lines)
            record = JobContext(sched, runtime).run("crawl:pirate")
            # The worker leaves once idle, recording its run: the second record.
            deadline = time.monotonic() + 60
            while runtime.db["crawl_runs"].count_documents({}) < 2 and time.monotonic() < deadline:
                time.sleep(0.2)
        finally:
            worker.send_signal(signal.SIGTERM)
            worker.wait(timeout=60)
            reader.join(10)
        said = "".join(lines)
        fetched = site.fetched()
        total = sum(fetched.values())

        assert worker.returncode == 0, said
        assert record["status"] == "ok", record
        crawl_id = record["result"]["crawl_id"]
        assert f"joining crawl {crawl_id}" in said and f"left crawl {crawl_id}" in said
        assert fetched.pop("/robots.txt") <= 2  # each process reads robots.txt for itself
        assert dict(fetched) == {
            "/": 1,
            "/about.html": 1,
            **{f"/c/{i}.html": 1 for i in range(PAGES)},
        }
        runs = list(runtime.db["crawl_runs"].find())
        assert len(runs) == 2 and all(r["reason"] == "finished" for r in runs)
        assert min(r["pages"]["stored"] for r in runs) > 0  # both took part
        assert {r["crawl_id"] for r in runs} == {crawl_id}
        # The job's record is of the scheduler's own run, not of whichever finished last.
        [own] = [r for r in runs if r["_id"] == record["result"]["crawl_run"]]
        [theirs] = [r for r in runs if r is not own]
        assert own["worker"] != theirs["worker"]
        assert record["result"]["stats"] == own["stats"]
        assert [w["crawl_run"] for w in record["result"]["worker_runs"]] in ([], [theirs["_id"]])
        assert CrawlBoard(runtime.redis, settings.redis_prefix).crawls() == []

        # A worker that comes when the crawl is over leaves without fetching anything.
        code = run_crawl(
            "novel",
            sched,
            arguments={"start_url": site.url},
            scrapy_settings={**crawl, "TRACKER_CRAWL_ID": crawl_id, JOIN_SETTING: 1},
            log_file=tmp_path / "late.log",
            timeout=120,
        )
        assert code == 0
        assert sum(site.fetched().values()) == total
    assert not list(runtime.redis.scan_iter(match=f"{settings.redis_prefix}crawl:*"))
