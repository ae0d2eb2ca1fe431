"""Render a report from :func:`tracker.reports.build.build_report` as JSON, CSV or HTML.

Titles, URLs and evidence come from crawled pages and are hostile: the HTML escapes every value,
links only http(s) URLs, and its Content-Security-Policy forbids scripts and external resources.
"""

from __future__ import annotations

import csv
import io
import json
from html import escape
from typing import Any

CSV_COLUMNS = ("date", "work", "doc_id", "url", "site", "score", "coverage", "first_seen")


def to_json(report: dict[str, Any]) -> str:
    """The report as indented JSON, Chinese text kept as is."""
    return json.dumps(report, ensure_ascii=False, indent=2)


def to_csv(report: dict[str, Any]) -> str:
    """One row per (page, doc_id) match; score, coverage and first_seen are the page's values
    for that work."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(CSV_COLUMNS)
    for work in report["works"]:
        for page in work["pages"]:
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
                    )
                )
    return out.getvalue()


STYLE = """
body { font-family: "PingFang SC", "Microsoft YaHei", "Noto Sans CJK SC", sans-serif;
       margin: 2em auto; max-width: 72em; padding: 0 1em; color: #222; line-height: 1.5; }
h1 { font-size: 1.6em; margin-bottom: .2em; }
h2 { font-size: 1.25em; margin-top: 2em; border-bottom: 2px solid #c33; padding-bottom: .2em; }
.meta { color: #666; font-size: .9em; }
.summary { display: flex; gap: 1em; flex-wrap: wrap; margin: 1.5em 0; }
.summary div { background: #f6f6f6; border-radius: 6px; padding: .6em 1.2em; text-align: center; }
.summary strong { display: block; font-size: 1.8em; color: #c33; }
table { border-collapse: collapse; width: 100%; font-size: .9em; }
th, td { border: 1px solid #ddd; padding: .4em .6em; text-align: left; vertical-align: top; }
th { background: #f0f0f0; }
td.url { word-break: break-all; max-width: 22em; }
td.num { text-align: right; white-space: nowrap; }
td.evidence { color: #555; font-size: .95em; max-width: 30em; }
.empty { color: #666; font-style: italic; }
"""


def to_html(report: dict[str, Any]) -> str:
    """A self-contained HTML page: the summary, then one table of pages per work."""
    summary = report["summary"]
    date = escape(str(report["date"]))
    cards = "".join(
        f"<div><strong>{escape(str(summary[key]))}</strong>{label}</div>"
        for key, label in (
            ("pages", "infringing pages"),
            ("sites", "sites"),
            ("works", "works"),
            ("matches", "matches"),
        )
    )
    sections = "\n".join(_work_section(work) for work in report["works"])
    if not report["works"]:
        sections = '<p class="empty">No infringement was seen on this day.</p>'
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
<p class="meta">Generated {escape(str(report["generated_at"]))}</p>
<section class="summary">{cards}</section>
{sections}
</body>
</html>
"""


def _work_section(work: dict[str, Any]) -> str:
    rows = "\n".join(_page_row(page) for page in work["pages"])
    pages = len(work["pages"])
    return f"""<section class="work">
<h2>{escape(str(work["work"]))}</h2>
<p class="meta">{pages} page{"" if pages == 1 else "s"}, \
{escape(str(work["chapters"]))} chapter(s) copied</p>
<table>
<thead><tr><th>Page</th><th>Site</th><th>Chapters</th><th>Score</th><th>Coverage</th>\
<th>First seen</th><th>Evidence</th></tr></thead>
<tbody>
{rows}
</tbody>
</table>
</section>"""


def _page_row(page: dict[str, Any]) -> str:
    title = str(page.get("title") or "")
    title_html = f"<div>{escape(title)}</div>" if title else ""
    doc_ids = ", ".join(escape(str(doc_id)) for doc_id in page["doc_ids"])
    return (
        f'<tr><td class="url">{title_html}{_link(str(page["url"]))}</td>'
        f"<td>{escape(str(page['site']))}</td><td>{doc_ids}</td>"
        f'<td class="num">{_number(page["score"], "{:.3f}")}</td>'
        f'<td class="num">{_number(page["coverage"], "{:.1%}")}</td>'
        f"<td>{escape(str(page['first_seen']))}</td>"
        f'<td class="evidence">{escape(str(page.get("evidence") or ""))}</td></tr>'
    )


def _link(url: str) -> str:
    """An escaped link for http(s) URLs; any other scheme (javascript:, data:…) as plain text."""
    text = escape(url)
    if url[:8].lower().startswith(("http://", "https://")):
        return f'<a href="{text}" rel="noopener noreferrer nofollow">{text}</a>'
    return f'<span class="unlinked">{text}</span>'


def _number(value: Any, template: str) -> str:
    try:
        return escape(template.format(float(value)))
    except (TypeError, ValueError):
        return escape(str(value))
