"""``tracker crawl-worker``: one worker of the crawl fleet, until stopped.

It watches the board where the scheduler posts each distributed crawl it runs
(:class:`tracker.crawling.crawl_board.CrawlBoard`) and joins the crawls in progress one at a time,
as ``scrapy crawl`` processes with the crawl's own spider, arguments and settings: they take their
requests from the crawl's shared queue in Redis (:mod:`tracker.crawling.distributed`), so N workers
fetch each page once between them. It joins the crawl in progress with the fewest processes at it:
every process keeps its own per-site limits, so workers spread over the crawls running rather than
piling onto one site. A crawl it has left is not joined again. SIGINT/SIGTERM: the crawl at hand
finishes its requests in flight and leaves the rest queued for the others; a second signal stops at
once.
"""

from __future__ import annotations

import argparse
import logging
import socket
import subprocess
import threading
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from tracker.cli._signals import graceful_stop
from tracker.config import Settings

log = logging.getLogger("tracker.crawl_worker")


def register(commands: argparse._SubParsersAction) -> None:
    parser = commands.add_parser(
        "crawl-worker",
        help="join the distributed crawls the scheduler runs (one worker of a crawl fleet)",
        description="One worker of the crawl fleet, until Ctrl-C or SIGTERM: it joins each "
        "distributed crawl the scheduler runs (posted in Redis) as a `scrapy crawl` of the same "
        "spider, arguments and settings, taking its requests from the crawl's shared queue.",
    )
    parser.add_argument(
        "--poll", type=float, default=5.0, metavar="S", help="seconds between looks at the board"
    )
    parser.set_defaults(func=run)


def run(args: argparse.Namespace, settings: Settings) -> int:
    from tracker.crawling.crawl_board import board_for
    from tracker.servers.connect import connect

    logging.basicConfig(
        force=True,
        level=logging.DEBUG if args.verbose else logging.INFO,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    runtime = connect(settings)
    board = board_for(settings)
    log.info("crawl worker waiting for crawls (board %s)", board.key)
    try:
        with graceful_stop(log, "leaving once the crawl at hand has stopped") as stop:
            serve(board, settings, stop, max(0.1, args.poll))
    finally:
        board.close()
        runtime.close()
    log.info("crawl worker stopped")
    return 0


def serve(board: Any, settings: Settings, stop: threading.Event, poll: float) -> None:
    """Join the crawls posted on ``board`` until ``stop`` is set."""
    from redis.exceptions import RedisError

    from tracker.crawling.crawl import run_crawl
    from tracker.crawling.crawl_board import JOIN_SETTING

    left: set[str] = set()
    while not stop.is_set():
        try:
            posted = board.crawls()
            left &= {c["id"] for c in posted}
            crawl = least_manned(board, [c for c in posted if c["id"] not in left])
        except RedisError as exc:  # Redis away: the board is read again after the pause
            log.error("could not read the crawl board: %s", exc)
            crawl = None
        if crawl is None:
            stop.wait(poll)
            continue
        stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%S")
        name = f"worker-{crawl['id']}-{socket.gethostname()}-{stamp}.log"  # one data dir, N hosts
        log_file = Path(settings.data_dir) / "logs" / name
        log_file.parent.mkdir(parents=True, exist_ok=True)
        log.info("joining crawl %s (%s); log: %s", crawl["id"], crawl["spider"], log_file)
        try:
            code = run_crawl(
                crawl["spider"],
                settings,
                arguments=crawl["arguments"],
                scrapy_settings={
                    **crawl["settings"],
                    "TRACKER_DISTRIBUTED": 1,
                    "TRACKER_CRAWL_ID": crawl["id"],
                    JOIN_SETTING: 1,
                },
                log_file=log_file,
                timeout=max(poll, crawl["until"] - time.time()),  # no longer than posted
                stop=stop,
            )
        except (OSError, subprocess.TimeoutExpired) as exc:
            log.error("crawl %s: %s", crawl["id"], exc)
            code = -1
        left.add(crawl["id"])
        log.info("left crawl %s (exit status %d)", crawl["id"], code)


def least_manned(board: Any, crawls: list[dict[str, Any]]) -> dict[str, Any] | None:
    """The crawl in progress with the fewest processes at it (the first posted on a tie)."""
    best: tuple[int, dict[str, Any]] | None = None
    for crawl in crawls:
        workers = board.workers(crawl["id"])
        if workers and (best is None or workers < best[0]):
            best = (workers, crawl)
    return best[1] if best else None
