"""The scheduler's jobs as the console shows and starts them.

"Run now" starts ``tracker run-job NAME`` as a detached process, exactly as an operator would
at a shell: the run takes the job's own lock (never alongside the same job, whoever started
it) and is recorded in the job ledger (``job_runs``) under the process's pid, where the console
finds it. A run refused at once (the job is running already) leaves no ledger entry: its
answer is read from the process's output instead, kept in ``<data_dir>/logs``.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from tracker.config import Settings
from tracker.crawling.crawl import crawl_environment
from tracker.scheduler.service import list_jobs, lock_name
from tracker.servers.locks import HeldLock
from tracker.servers.runtime import Runtime
from tracker.stores.job_runs import JobRunStore

HISTORY = 5
START_WAIT_S = 10.0


def job_rows(settings: Settings, runtime: Runtime) -> dict[str, Any]:
    """The jobs with their schedule, next and last runs and latest runs, and who holds the
    scheduler lock (as ``tracker schedule --list`` shows them)."""
    runs = JobRunStore(runtime.db)
    rows = list_jobs(settings, runtime)
    for row in rows:
        row["history"] = runs.history(row["job"], limit=HISTORY)
    holder = HeldLock.holder(runtime.redis, lock_name(settings))
    return {"acting_scheduler": holder, "jobs": rows}


def known_job(settings: Settings, name: str) -> bool:
    from tracker.scheduler.jobs import job_plan

    return name in {spec.name for spec in job_plan(settings)}


def start_job(
    settings: Settings, runtime: Runtime, name: str, config: str | None = None
) -> dict[str, Any]:
    """Start ``tracker run-job name`` detached; returns its ledger entry once it has one (or
    its answer, when it ended without one)."""
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%S")
    logs = Path(settings.data_dir) / "logs"
    logs.mkdir(parents=True, exist_ok=True)
    output = logs / f"run-job-{name.replace(':', '-').replace('/', '-')}-{stamp}.json"
    command = [sys.executable, "-m", "tracker.cli"]
    if config:
        command += ["--config", config]
    command += ["run-job", name]
    env = crawl_environment(settings)
    env.pop("SCRAPY_SETTINGS_MODULE", None)
    with output.open("wb") as out:
        process = subprocess.Popen(
            command,
            stdout=out,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            env=env,
            start_new_session=True,  # outlives a console restart, as a shell's would
        )
    runs = JobRunStore(runtime.db)

    def entry() -> dict[str, Any] | None:
        # The job's latest runs (its job+started_at index), not a filter on pid (unindexed).
        return next((r for r in runs.history(name, limit=10) if r.get("pid") == process.pid), None)

    deadline = time.monotonic() + START_WAIT_S
    while time.monotonic() < deadline:
        found = entry()
        if found is not None:
            return found
        if process.poll() is not None:
            return entry() or _answer(output, name, process.returncode)
        time.sleep(0.1)
    return {"job": name, "status": "starting", "pid": process.pid, "output": str(output)}


def _answer(output: Path, name: str, code: int | None) -> dict[str, Any]:
    text = output.read_text(encoding="utf-8", errors="replace")
    start = text.find("{")
    try:
        record = json.loads(text[start:]) if start >= 0 else None
    except ValueError:
        record = None
    if isinstance(record, dict):
        return record
    return {"job": name, "status": "failed", "error": text.strip()[-2000:] or f"exit {code}"}
