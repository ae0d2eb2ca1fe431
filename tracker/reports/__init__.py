"""The daily infringement report: build it from MongoDB, render it as JSON, CSV or HTML (its
takedown notice drafts: :mod:`tracker.reports.notices`), and publish it (cluster, build, store,
write) for a day."""

from tracker.reports.build import build_report, day_window, summary_line
from tracker.reports.render import to_csv, to_html, to_json

__all__ = [
    "build_report",
    "day_window",
    "summary_line",
    "to_csv",
    "to_html",
    "to_json",
]
