"""A discovery crawl in a process of its own: its input passed as JSON files, what it found read
back from the summary file it writes (``scrapy crawl discover``, ``scrapy crawl booksource``)."""

from __future__ import annotations

import json
import logging
import tempfile
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from tracker.config import Settings

log = logging.getLogger(__name__)

#: A discovery crawl is stopped after this long.
CRAWL_TIMEOUT_S = 3600.0


@dataclass
class CrawlOutcome:
    exit_code: int | None
    log_file: Path
    summary: dict[str, Any] | None  # None: the crawl wrote none (``error`` says why)
    error: str = ""


def crawl_for_summary(
    crawl: Callable[..., int],
    spider: str,
    settings: Settings,
    inputs: Mapping[str, Any],
    *,
    now: datetime,
    arguments: Mapping[str, object] | None = None,
    scrapy_settings: Mapping[str, object] | None = None,
    log_file: Path | None = None,
    stop: threading.Event | None = None,
) -> CrawlOutcome:
    """Run ``scrapy crawl spider`` through ``crawl`` (:func:`~tracker.crawling.crawl.run_crawl`)
    with each of ``inputs`` written to a JSON file given as ``-a NAME=FILE``, and ``-a
    summary=FILE``; logged to ``log_file`` (default ``<data_dir>/logs/SPIDER-<now>.log``)."""
    if log_file is None:
        stamp = now.astimezone(UTC).strftime("%Y%m%dT%H%M%S")
        log_file = Path(settings.data_dir) / "logs" / f"{spider}-{stamp}.log"
    log_file.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix=f"tracker-{spider}-") as folder:
        given = dict(arguments or {})
        for name, data in inputs.items():
            path = Path(folder) / f"{name}.json"
            path.write_text(json.dumps(data, ensure_ascii=False), "utf-8")
            given[name] = str(path)
        summary_file = Path(folder) / "summary.json"
        given["summary"] = str(summary_file)
        code = crawl(
            spider,
            settings,
            arguments=given,
            scrapy_settings=dict(scrapy_settings or {}),
            log_file=log_file,
            timeout=CRAWL_TIMEOUT_S,
            stop=stop,
        )
        try:
            summary = json.loads(summary_file.read_text("utf-8"))
        except (OSError, ValueError) as exc:
            error = f"the {spider} crawl wrote no summary ({exc}); see {log_file}"
            log.error("%s", error)
            return CrawlOutcome(code, log_file, None, error)
    return CrawlOutcome(code, log_file, summary)
