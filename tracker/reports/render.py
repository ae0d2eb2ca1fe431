"""Render a report from :func:`tracker.reports.build.build_report` as JSON, CSV or HTML.

The HTML is drawn by the templates of :mod:`tracker.html` (``report/``), autoescaped: titles,
URLs and evidence come from crawled pages and are hostile, so every value is escaped, only
http(s) URLs are links, and its Content-Security-Policy forbids scripts and external
resources; its charts are inline SVG (:mod:`tracker.reports.charts`), so it opens from disk,
offline. Takedown notices are in :mod:`tracker.reports.notices`.
"""

from __future__ import annotations

import csv
import io
import json
from typing import Any

from tracker.reports.build import COPIED_SHARE, unread_sites
from tracker.reports.charts import report_charts, sparkline
from tracker.reports.pairs import REWRITE, VERBATIM, marked

CSV_COLUMNS = (
    "date",
    "work",
    "doc_id",
    "url",
    "site",
    "score",
    "coverage",
    "first_seen",
    "last_seen",
    "new",
    "group",
    "copies",
    "method",
)


def to_json(report: dict[str, Any]) -> str:
    """The report as indented JSON, Chinese text kept as is."""
    return json.dumps(report, ensure_ascii=False, indent=2)


#: The UTF-8 byte-order mark: Excel (on a Chinese Windows above all) reads a CSV file as
#: UTF-8 only when it starts with one, and as the ANSI code page (garbled) otherwise.
BOM = "\ufeff"


def to_csv(report: dict[str, Any], *, bom: bool = False) -> str:
    """One row per (page, doc_id) match; score, coverage (the copied share), first/last seen
    and new are the page's values for that work, group its mirror group, copies what the page
    copies of the work ("98 chapters of 西游记 (1–98)"), method how it copies that doc id:
    ``verbatim``, or ``rewrite`` (a rewritten copy, 改写/洗稿). With ``bom`` it starts with the
    UTF-8 byte-order mark (:data:`BOM`), for Excel."""
    out = io.StringIO()
    if bom:
        out.write(BOM)
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(CSV_COLUMNS)
    for work in report["works"]:
        for page in work["pages"]:
            copied = "; ".join(c["label"] for c in page.get("copies", []))
            rewrites = set(page.get("rewritten") or ())
            for doc_id in page["doc_ids"]:
                writer.writerow(
                    (
                        report["date"],
                        work["work"],
                        doc_id,
                        page["url"],
                        page["site"],
                        page["score"],
                        page["coverage"],
                        page["first_seen"],
                        page.get("last_seen", ""),
                        "yes" if page.get("new") else "no",
                        "" if page.get("group") is None else page["group"],
                        copied,
                        REWRITE if doc_id in rewrites else VERBATIM,
                    )
                )
    return out.getvalue()


FOLDED_CHAPTERS = 3  # a page copying more chapters shows their count, the list folded
OPEN_UNREAD = 20  # a site's unread pages are listed open up to this many, folded beyond


def to_html(report: dict[str, Any], zone: str | None = None) -> str:
    """A self-contained HTML page (the template ``report/report.html`` of :mod:`tracker.html`):
    the summary, charts (trend over days, top sites, top works), one section per work, the
    sites with their 30-day trend, the mirror groups, the pages that could not be read (per
    site, with the reason in words) and each noticed site's takedown compliance; its times in
    the time zone ``zone`` (``display_timezone``; None: UTC)."""
    from tracker.html import render

    return render(
        "report/report.html",
        zone,
        report=report,
        charts=report_charts(report),
        sparkline=sparkline,
        folded=FOLDED_CHAPTERS,
        copied_share=COPIED_SHARE,
        unread_sites=unread_sites(report.get("unread") or ()),
        open_unread=OPEN_UNREAD,
        marked=marked,
        rewrites=any(page.get("pairs") for work in report["works"] for page in work["pages"]),
    )
