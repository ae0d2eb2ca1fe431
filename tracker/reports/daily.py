"""One day's report end to end: cluster the day's pages, build the report, store its figures,
and (for the scheduler) write it in every format."""

from __future__ import annotations

from datetime import date, datetime
from pathlib import Path
from typing import Any

from tracker.reports.build import build_report, day_window
from tracker.reports.clustering import PageClusterer
from tracker.reports.notices import notice_file_name, to_notices
from tracker.reports.render import to_csv, to_html, to_json
from tracker.servers.runtime import Runtime
from tracker.stores.reports import ReportStore

RENDERERS = {"html": to_html, "csv": lambda report: to_csv(report, bom=True), "json": to_json}


def prepare_report(runtime: Runtime, day: date, *, now: datetime | None = None) -> dict[str, Any]:
    """Group the day's infringing pages into mirror groups, build the report of ``day`` and
    store its figures (replacing an earlier version of the same day)."""
    start, end = day_window(day)
    PageClusterer.from_runtime(runtime).cluster_seen_since(start, until=end)
    from tracker.enforcement.compliance import Compliance

    compliance = Compliance.of(runtime.settings)
    report = build_report(runtime.db, day, now=now, compliance=compliance)
    ReportStore(runtime.db).save(report)
    return report


def notice_files(
    report: dict[str, Any], db: Any, settings: Any, *, resend: bool = False
) -> dict[str, str]:
    """One takedown notice draft per site of ``report`` (:func:`to_notices`):
    ``{"notice-SITE.txt": text}`` (the web console zips them)."""
    files: dict[str, str] = {}
    for site, text in to_notices(report, db, settings, resend=resend).items():
        name = notice_file_name(site)
        counter = 2
        while name in files:  # two hostile host names that make the same file name
            name = f"{name.removesuffix('.txt').rsplit('~', 1)[0]}~{counter}.txt"
            counter += 1
        files[name] = text
    return files


def write_notices(
    report: dict[str, Any], folder: Path, db: Any, settings: Any, *, resend: bool = False
) -> list[Path]:
    """:func:`notice_files` written to ``folder``; returns the paths."""
    folder.mkdir(parents=True, exist_ok=True)
    paths = []
    for name, text in notice_files(report, db, settings, resend=resend).items():
        path = folder / name
        path.write_text(text, encoding="utf-8")
        paths.append(path)
    return paths


def write_report(report: dict[str, Any], out_dir: Path, runtime: Runtime) -> dict[str, Path]:
    """``out_dir/report-DATE.{html,csv,json}`` (the HTML's times in ``display_timezone``, the
    CSV with a byte-order mark) and ``out_dir/notices-DATE/``."""
    out_dir.mkdir(parents=True, exist_ok=True)
    settings = runtime.settings
    paths: dict[str, Path] = {}
    for fmt, render in RENDERERS.items():
        path = out_dir / f"report-{report['date']}.{fmt}"
        text = to_html(report, settings.display_timezone) if fmt == "html" else render(report)
        path.write_text(text, encoding="utf-8")
        paths[fmt] = path
    notices = out_dir / f"notices-{report['date']}"
    write_notices(report, notices, runtime.db, settings)
    paths["notices"] = notices
    return paths


def publish_report(
    runtime: Runtime, day: date, *, out_dir: Path, now: datetime | None = None
) -> tuple[dict[str, Any], dict[str, Path]]:
    """:func:`prepare_report`, then :func:`write_report` under ``out_dir``."""
    report = prepare_report(runtime, day, now=now)
    return report, write_report(report, out_dir, runtime)
