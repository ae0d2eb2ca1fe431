"""Build the daily infringement report from the ``matches`` and ``pages`` collections.

A match counts for a day when it was seen during the UTC day ``[day 00:00, day+1 00:00)``, i.e.
last seen after the day began and first seen before it ended (:meth:`MatchStore.seen_between`).
The report is a plain dict (see :func:`build_report`) that the renderers in
:mod:`tracker.reports.render` turn into JSON, CSV or HTML.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from datetime import UTC, date, datetime, time, timedelta
from typing import Any

from pymongo.database import Database

from tracker.stores.pages import MatchStore, site_of

EVIDENCE_CHARS = 200
UNKNOWN_WORK = "(unknown work)"


def day_window(day: date) -> tuple[datetime, datetime]:
    """The UTC day ``[day 00:00, day+1 00:00)`` as tz-aware datetimes."""
    start = datetime.combine(day, time.min, tzinfo=UTC)
    return start, start + timedelta(days=1)


def build_report(db: Database, day: date, *, now: datetime | None = None) -> dict[str, Any]:
    """The infringements seen on ``day``.

    Shape::

        {"date", "generated_at",
         "summary": {"pages", "works", "sites", "matches"},
         "works": [{"work", "chapters", "pages": [{"url", "site", "title", "doc_ids", "score",
                                                   "coverage", "first_seen", "evidence"}]}],
         "pages": [{"url", "site", "doc_ids", "score", "coverage", "first_seen"}]}

    Works are sorted by number of pages (desc) then name; a work's pages by score (desc) then
    URL, and their doc_ids/score/coverage/first_seen/evidence cover that work's matches only.
    The flat ``pages`` list (sorted by URL) aggregates every match of each page.
    """
    matches = MatchStore(db).seen_between(*day_window(day))
    titles = _page_titles(db, {m["url"] for m in matches})

    by_url: dict[str, list[dict]] = defaultdict(list)
    by_work: dict[str, dict[str, list[dict]]] = defaultdict(lambda: defaultdict(list))
    for match in matches:
        by_url[match["url"]].append(match)
        by_work[_work_of(match)][match["url"]].append(match)

    works = []
    for work, pages in by_work.items():
        entries = [
            {
                **_page_entry(url, page_matches),
                "title": titles.get(url, ""),
                "evidence": _best_evidence(page_matches),
            }
            for url, page_matches in pages.items()
        ]
        entries.sort(key=lambda e: (-e["score"], e["url"]))
        works.append(
            {
                "work": work,
                "chapters": len({m["doc_id"] for ms in pages.values() for m in ms}),
                "pages": [_ordered_page(e) for e in entries],
            }
        )
    works.sort(key=lambda w: (-len(w["pages"]), w["work"]))

    flat_pages = [_page_entry(url, by_url[url]) for url in sorted(by_url)]
    return {
        "date": day.isoformat(),
        "generated_at": (now or datetime.now(UTC)).isoformat(timespec="seconds"),
        "summary": {
            "pages": len(by_url),
            "works": len(by_work),
            "sites": len({p["site"] for p in flat_pages}),
            "matches": len(matches),
        },
        "works": works,
        "pages": flat_pages,
    }


def summary_line(report: dict[str, Any]) -> str:
    """One line such as ``2026-11-22: 3 infringing pages on 1 site(s), copying 2 work(s) (5
    matches)``."""
    s = report["summary"]
    pages = f"{s['pages']} infringing page{'' if s['pages'] == 1 else 's'}"
    matches = f"{s['matches']} match{'' if s['matches'] == 1 else 'es'}"
    return (
        f"{report['date']}: {pages} on {s['sites']} site(s), copying {s['works']} work(s) "
        f"({matches})"
    )


def _page_titles(db: Database, urls: Iterable[str]) -> dict[str, str]:
    """Titles of the crawled pages, looked up by ``_id``; pages never stored are left out."""
    urls = sorted(urls)
    if not urls:
        return {}
    cursor = db["pages"].find({"_id": {"$in": urls}}, {"title": 1})
    return {doc["_id"]: str(doc.get("title") or "") for doc in cursor}


def _work_of(match: dict) -> str:
    return str(match.get("work") or "") or UNKNOWN_WORK


def _page_entry(url: str, matches: list[dict]) -> dict[str, Any]:
    """``url, site, doc_ids, score, coverage, first_seen`` aggregated over ``matches``."""
    return {
        "url": url,
        "site": matches[0].get("site") or site_of(url),
        "doc_ids": sorted({str(m["doc_id"]) for m in matches}),
        "score": round(max(_number(m.get("score")) for m in matches), 4),
        "coverage": round(max(_number(m.get("coverage")) for m in matches), 4),
        "first_seen": min(_utc(m["first_seen"]) for m in matches).isoformat(),
    }


def _ordered_page(entry: dict[str, Any]) -> dict[str, Any]:
    keys = ("url", "site", "title", "doc_ids", "score", "coverage", "first_seen", "evidence")
    return {key: entry[key] for key in keys}


def _best_evidence(matches: list[dict]) -> str:
    """The longest copied passage (whitespace collapsed), truncated to ``EVIDENCE_CHARS``."""
    best = ""
    for match in sorted(matches, key=lambda m: -_number(m.get("score"))):
        for span in match.get("spans") or ():
            text = " ".join(str(span.get("text") or "").split())
            if len(text) > len(best):
                best = text
    if len(best) > EVIDENCE_CHARS:
        best = best[: EVIDENCE_CHARS - 1] + "…"
    return best


def _number(value: Any) -> float:
    try:
        return float(value or 0.0)
    except (TypeError, ValueError):
        return 0.0


def _utc(moment: datetime) -> datetime:
    """``moment`` as tz-aware UTC (a naive datetime from a non tz-aware client is UTC)."""
    return moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment.astimezone(UTC)
