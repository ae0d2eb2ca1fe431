"""Render a report from :func:`tracker.reports.build.build_report` as JSON, CSV or HTML.

Titles, URLs and evidence come from crawled pages and are hostile: the HTML escapes every value,
links only http(s) URLs, and its Content-Security-Policy forbids scripts and external resources;
its charts are inline SVG (:mod:`tracker.reports.charts`), so it opens from disk, offline.
Takedown notices are in :mod:`tracker.reports.notices`.
"""

from __future__ import annotations

import csv
import io
import json
from html import escape
from typing import Any

from tracker.formats import when
from tracker.reports.charts import daily_bars, horizontal_bars, sparkline

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
)


def to_json(report: dict[str, Any]) -> str:
    """The report as indented JSON, Chinese text kept as is."""
    return json.dumps(report, ensure_ascii=False, indent=2)


def to_csv(report: dict[str, Any]) -> str:
    """One row per (page, doc_id) match; score, coverage, first/last seen and new are the
    page's values for that work, group its mirror group, copies what the page copies of the
    work ("98 chapters of 西游记 (1–98)")."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(CSV_COLUMNS)
    for work in report["works"]:
        for page in work["pages"]:
            copied = "; ".join(c["label"] for c in page.get("copies", []))
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
                    )
                )
    return out.getvalue()


STYLE = """
body { font-family: "PingFang SC", "Microsoft YaHei", "Noto Sans CJK SC", sans-serif;
       margin: 2em auto; max-width: 80em; padding: 0 1em; color: #222; line-height: 1.5; }
h1 { font-size: 1.6em; margin-bottom: .2em; }
h2 { font-size: 1.25em; margin-top: 2em; border-bottom: 2px solid #c33; padding-bottom: .2em; }
h3 { font-size: 1.05em; margin: 1.2em 0 .4em; }
.meta { color: #666; font-size: .9em; }
.summary { display: flex; gap: 1em; flex-wrap: wrap; margin: 1.5em 0; }
.summary div { background: #f6f6f6; border-radius: 6px; padding: .6em 1.2em; text-align: center; }
.summary strong { display: block; font-size: 1.8em; color: #c33; }
.charts { display: flex; flex-wrap: wrap; gap: 1.5em 3em; align-items: flex-start; }
svg.chart { max-width: 100%; height: auto; }
table { border-collapse: collapse; width: 100%; font-size: .9em; margin-bottom: 1em; }
th, td { border: 1px solid #ddd; padding: .4em .6em; text-align: left; vertical-align: top; }
th { background: #f0f0f0; }
td.url { word-break: break-all; max-width: 22em; }
td.num { text-align: right; white-space: nowrap; }
td.evidence { color: #555; font-size: .95em; max-width: 30em; }
.new { background: #c33; color: #fff; border-radius: 3px; padding: 0 .35em; font-size: .8em; }
.empty { color: #666; font-style: italic; }
"""


def to_html(report: dict[str, Any]) -> str:
    """A self-contained HTML page: the summary, charts (trend over days, top sites, top works),
    one section per work, the sites with their 30-day trend, and the mirror groups."""
    summary = report["summary"]
    date = escape(str(report["date"]))
    cards = "".join(
        f"<div><strong>{escape(str(summary.get(key, 0)))}</strong>{label}</div>"
        for key, label in (
            ("pages", "infringing pages"),
            ("new_pages", "new pages"),
            ("sites", "sites"),
            ("works", "works"),
            ("matches", "matches"),
            ("groups", "mirror groups"),
        )
    )
    previous = report.get("previous_report")
    since = (
        f"New: first seen after the report of {escape(str(previous))}."
        if previous
        else "No earlier report: every page counts as new."
    )
    if report["works"]:
        body = "\n".join(
            [
                charts(report),
                "<h2>Works</h2>",
                *(_work_section(work) for work in report["works"]),
                _sites_section(report.get("sites", [])),
                _groups_section(report.get("groups", [])),
            ]
        )
    else:
        body = charts(report) + '\n<p class="empty">No infringement was seen on this day.</p>'
    return f"""<!DOCTYPE html>
<html lang="zh">
<head>
<meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src 'unsafe-inline'">
<meta name="referrer" content="no-referrer">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Infringement report {date}</title>
<style>{STYLE}</style>
</head>
<body>
<h1>Infringement report {date}</h1>
<p class="meta">Generated {_when(report["generated_at"])}. {since}</p>
<section class="summary">{cards}</section>
{body}
</body>
</html>
"""


def charts(report: dict[str, Any]) -> str:
    """The report's charts: pages per day (new ones darker), top sites, top works."""
    trend = [(t["date"], t.get("pages"), t.get("new_pages")) for t in report.get("trend", [])]
    sites = [(s["site"], s["pages"]) for s in report.get("sites", [])[:10]]
    works = sorted(((w["work"], len(w["pages"])) for w in report["works"]), key=lambda w: -w[1])
    charts = [
        daily_bars(trend, title=f"Infringing pages per day, last {len(trend)} days"),
        horizontal_bars(sites, title="Top sites (pages)"),
        horizontal_bars(works[:10], title="Top works (pages)"),
    ]
    return '<section class="charts">' + "".join(charts) + "</section>"


def _work_section(work: dict[str, Any]) -> str:
    rows = "\n".join(_page_row(page) for page in work["pages"])
    pages = len(work["pages"])
    total = work.get("total_chapters") or 0
    coverage = (
        f" of {escape(str(total))} ({_number(work.get('coverage'), '{:.1%}')})" if total else ""
    )
    new = work.get("new_pages", 0)
    site_rows = "\n".join(
        f'<tr><td>{escape(str(s["site"]))}</td><td class="num">{escape(str(s["pages"]))}</td>'
        f'<td class="num">{escape(str(s["chapters"]))}</td>'
        f'<td class="num">{_number(s["coverage"], "{:.1%}") if s["coverage"] is not None else ""}'
        f"</td><td>{_when(s['first_seen'])}</td><td>{_when(s['last_seen'])}</td>"
        f'<td class="num">{escape(str(s["new_pages"]))}</td></tr>'
        for s in work.get("sites", [])
    )
    chapters = ", ".join(
        escape(str(c.get("title") or c["doc_id"])) for c in work.get("chapters_found", [])
    )
    return f"""<section class="work">
<h2>{escape(str(work["work"]))}</h2>
<p class="meta">{pages} page{"" if pages == 1 else "s"} ({escape(str(new))} new), \
{escape(str(work["chapters"]))} chapter(s) copied{coverage}; \
first seen {_when(work.get("first_seen"))}, last seen {_when(work.get("last_seen"))}</p>
<p class="meta">Chapters found: {chapters}</p>
<h3>Sites</h3>
<table>
<thead><tr><th>Site</th><th>Pages</th><th>Chapters</th><th>Coverage</th><th>First seen</th>\
<th>Last seen</th><th>New pages</th></tr></thead>
<tbody>
{site_rows}
</tbody>
</table>
<h3>Pages</h3>
<table>
<thead><tr><th>Page</th><th>Site</th><th>Chapters</th><th>Score</th><th>Coverage</th>\
<th>First seen</th><th>Last seen</th><th>Group</th><th>Evidence</th></tr></thead>
<tbody>
{rows}
</tbody>
</table>
</section>"""


FOLDED_CHAPTERS = 3  # a page copying more chapters shows their count, the list folded


def _page_row(page: dict[str, Any]) -> str:
    title = str(page.get("title") or "")
    title_html = f"<div>{escape(title)}</div>" if title else ""
    new = ' <span class="new">new</span>' if page.get("new") else ""
    doc_ids = ", ".join(escape(str(doc_id)) for doc_id in page["doc_ids"])
    if len(page["doc_ids"]) > FOLDED_CHAPTERS:  # a whole book: one line, the list behind it
        label = "; ".join(str(c["label"]) for c in page.get("copies", []))
        doc_ids = f"<details><summary>{escape(label)}</summary>{doc_ids}</details>"
    group = page.get("group")
    group_html = (
        f'<a href="#group-{escape(str(group))}">G{escape(str(group))}</a>'
        if (isinstance(group, int))
        else ""
    )
    return (
        f'<tr><td class="url">{title_html}{_link(str(page["url"]))}{new}</td>'
        f"<td>{escape(str(page['site']))}</td><td>{doc_ids}</td>"
        f'<td class="num">{_number(page["score"], "{:.3f}")}</td>'
        f'<td class="num">{_number(page["coverage"], "{:.1%}")}</td>'
        f"<td>{_when(page['first_seen'])}</td>"
        f"<td>{_when(page.get('last_seen'))}</td><td>{group_html}</td>"
        f'<td class="evidence">{escape(str(page.get("evidence") or ""))}</td></tr>'
    )


def _sites_section(sites: list[dict[str, Any]]) -> str:
    rows = "\n".join(
        f'<tr><td>{escape(str(s["site"]))}</td><td class="num">{escape(str(s["pages"]))}</td>'
        f'<td class="num">{escape(str(s["new_pages"]))}</td>'
        f'<td class="num">{escape(str(s["works"]))}</td>'
        f'<td class="num">{escape(str(s["matches"]))}</td>'
        f"<td>{_when(s['first_seen'])}</td><td>{_when(s['last_seen'])}</td>"
        f"<td>{sparkline([t['pages'] for t in s.get('trend', [])])}</td></tr>"
        for s in sites
    )
    return f"""<section class="sites">
<h2>Sites</h2>
<table>
<thead><tr><th>Site</th><th>Pages</th><th>New</th><th>Works</th><th>Matches</th>\
<th>First seen</th><th>Last seen</th><th>Pages per day, 30 days</th></tr></thead>
<tbody>
{rows}
</tbody>
</table>
</section>"""


def _groups_section(groups: list[dict[str, Any]]) -> str:
    if not groups:
        return ""
    items = "\n".join(
        f'<tr id="group-{escape(str(g["group"]))}"><td>G{escape(str(g["group"]))}</td>'
        f'<td class="num">{len(g["pages"])}</td>'
        f"<td>{escape(', '.join(str(s) for s in g['sites']))}</td>"
        f"<td>{escape(', '.join(str(w) for w in g['works']))}</td>"
        f'<td class="url">{"<br>".join(_link(str(url)) for url in g["pages"])}</td></tr>'
        for g in groups
    )
    return f"""<section class="groups">
<h2>Mirror groups</h2>
<p class="meta">Near-identical pages (SimHash within 3 bits) seen on this day.</p>
<table>
<thead><tr><th>Group</th><th>Pages</th><th>Sites</th><th>Works</th><th>URLs</th></tr></thead>
<tbody>
{items}
</tbody>
</table>
</section>"""


def _when(value: Any) -> str:
    """An ISO time as ``YYYY-MM-DD HH:MM UTC``, escaped."""
    return escape(when(str(value or "")))


def _link(url: str) -> str:
    """An escaped link for http(s) URLs; any other scheme (javascript:, data:…) as plain text."""
    text = escape(url)
    if is_http_url(url):
        return f'<a href="{text}" rel="noopener noreferrer nofollow">{text}</a>'
    return f'<span class="unlinked">{text}</span>'


def is_http_url(url: str) -> bool:
    """Whether ``url`` may be a link: http(s) only (never javascript:, data:, …)."""
    return url[:8].lower().startswith(("http://", "https://"))


def _number(value: Any, template: str) -> str:
    try:
        return escape(template.format(float(value)))
    except (TypeError, ValueError):
        return escape(str(value))
