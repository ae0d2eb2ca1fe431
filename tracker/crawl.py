"""Run a Scrapy crawl of this project in a subprocess (as ``scrapy crawl`` would), sharing the
caller's MongoDB/Redis settings."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path

from tracker.config import Settings


def crawl_environment(settings: Settings, mongo_url: str, redis_url: str) -> dict[str, str]:
    env = dict(os.environ)
    env.update({
        "SCRAPY_SETTINGS_MODULE": "tracker.settings",
        "MONGO_URL": mongo_url,
        "REDIS_URL": redis_url,
        "TRACKER_DATA_DIR": str(settings.data_dir),
        "TRACKER_MONGO_DB": settings.mongo_db,
        "TRACKER_REDIS_PREFIX": settings.redis_prefix,
    })
    return env


def run_crawl(spider: str, settings: Settings, mongo_url: str, redis_url: str,
              arguments: Mapping[str, object] | None = None,
              scrapy_settings: Mapping[str, object] | None = None,
              log_file: Path | None = None, timeout: float | None = 1800) -> int:
    """Run ``scrapy crawl spider -a k=v … -s K=V …``; returns the process exit code."""
    command = [sys.executable, "-m", "scrapy", "crawl", spider]
    for key, value in (arguments or {}).items():
        command += ["-a", f"{key}={value}"]
    for key, value in (scrapy_settings or {}).items():
        command += ["-s", f"{key}={value}"]
    if log_file:
        command += ["-s", f"LOG_FILE={log_file}"]
    result = subprocess.run(command, env=crawl_environment(settings, mongo_url, redis_url),
                            timeout=timeout, check=False, stdin=subprocess.DEVNULL)
    return result.returncode
