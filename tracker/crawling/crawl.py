"""Run a Scrapy crawl of this project in a subprocess (as ``scrapy crawl`` would), sharing the
caller's MongoDB/Redis settings."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from collections.abc import Mapping
from pathlib import Path

from tracker.config import Settings


def crawl_environment(settings: Settings) -> dict[str, str]:
    """The environment of a crawl process: every setting of ``settings`` (servers, database,
    key prefix, the crawl's knobs), and no settings file, so that the crawl runs with exactly
    the caller's settings whatever its own environment or a ``tracker.toml`` say.

    Server URLs are passed only when configured; otherwise the crawl finds the embedded servers
    already running under the data directory.
    """
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith("TRACKER_") and k not in ("MONGO_URL", "REDIS_URL")
    }
    env.update(settings.environment())
    env["TRACKER_CONFIG"] = os.devnull  # an empty file: the settings are all in the environment
    env["SCRAPY_SETTINGS_MODULE"] = "tracker.crawling.settings"
    return env


def crawl_command(
    spider: str,
    arguments: Mapping[str, object] | None = None,
    scrapy_settings: Mapping[str, object] | None = None,
    log_file: Path | None = None,
) -> list[str]:
    """``python -m scrapy crawl spider -a k=v … -s K=V …``."""
    command = [sys.executable, "-m", "scrapy", "crawl", spider]
    for key, value in (arguments or {}).items():
        command += ["-a", f"{key}={value}"]
    for key, value in (scrapy_settings or {}).items():
        command += ["-s", f"{key}={value}"]
    if log_file:
        command += ["-s", f"LOG_FILE={log_file}"]
    return command


def run_crawl(
    spider: str,
    settings: Settings,
    arguments: Mapping[str, object] | None = None,
    scrapy_settings: Mapping[str, object] | None = None,
    log_file: Path | None = None,
    timeout: float | None = 1800,
    stop: threading.Event | None = None,
) -> int:
    """Run ``scrapy crawl spider -a k=v … -s K=V …``; returns the process exit code. A crawl
    running past ``timeout`` is killed (:class:`subprocess.TimeoutExpired`); once ``stop`` is
    set, it is sent SIGTERM: Scrapy finishes the requests in flight and closes (a distributed
    crawl keeps the rest queued for the other workers)."""
    command = crawl_command(spider, arguments, scrapy_settings, log_file)
    if stop is None:
        result = subprocess.run(
            command,
            env=crawl_environment(settings),
            timeout=timeout,
            check=False,
            stdin=subprocess.DEVNULL,
        )
        return result.returncode
    deadline = time.monotonic() + timeout if timeout is not None else None
    with subprocess.Popen(
        command, env=crawl_environment(settings), stdin=subprocess.DEVNULL
    ) as process:
        stopping = False
        while True:
            try:
                return process.wait(timeout=0.5)
            except subprocess.TimeoutExpired:
                if deadline is not None and time.monotonic() > deadline:
                    process.kill()
                    process.wait()
                    raise subprocess.TimeoutExpired(command, timeout) from None
                if stop.is_set() and not stopping:
                    process.terminate()
                    stopping = True
