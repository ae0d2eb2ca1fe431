"""Build the daily infringement report from the ``page_days``, ``matches`` and ``pages``
collections, reading only.

A page counts for a UTC day with the masters its latest check of that day carried (the day's
``page_days`` record, :meth:`MatchStore.carried_on`): a master the page no longer carried at
its last crawl of the day is not listed, however often it was seen earlier. The report is a
plain dict (see :func:`build_report`) that the renderers in :mod:`tracker.reports.render` turn
into JSON, CSV, HTML or takedown notices. Trends read the figures of earlier reports stored in
MongoDB (:mod:`tracker.stores.reports`); mirror groups are made when pages are crawled
(:mod:`tracker.reports.clustering`).
"""

from __future__ import annotations

import re
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable
from datetime import UTC, date, datetime, time, timedelta
from typing import Any

import numpy as np
from pymongo.database import Database

from tracker.enforcement.compliance import (
    Compliance,
    histories,
    history_json,
    takedown_figures,
)
from tracker.formats import number_ranges, plural
from tracker.model import ARTICLE, CHAPTER, site_of
from tracker.reports.pairs import aligned_count, is_rewrite, method_of, rewritten, telling_pairs
from tracker.stores.clusters import ClusterStore
from tracker.stores.discovery import SiteRegistry
from tracker.stores.masters import MasterStore
from tracker.stores.pages import MatchStore, PageStore
from tracker.stores.reports import ReportStore
from tracker.stores.takedowns import TakedownStore
from tracker.stores.unread import UnreadStore
from tracker.text.normalize import boilerplate_mask

EVIDENCE_CHARS = 200
#: A chapter (or article) counts as *copied* when a page copies at least this share of it: the
#: detector's own "most of the master" (MOST_OF_THE_MASTER); found at a lower share, it is
#: *partly copied*.
COPIED_SHARE = 0.5
INSERTED = "[…]"  # in an evidence passage: a line the pirate site inserted, left out
UNKNOWN_WORK = "(unknown work)"
TREND_DAYS = 30
TREND_FIGURES = ("pages", "new_pages", "matches", "sites", "works")


def day_window(day: date) -> tuple[datetime, datetime]:
    """The UTC day ``[day 00:00, day+1 00:00)`` as tz-aware datetimes."""
    start = datetime.combine(day, time.min, tzinfo=UTC)
    return start, start + timedelta(days=1)


def build_report(
    db: Database,
    day: date,
    *,
    now: datetime | None = None,
    trend_days: int = TREND_DAYS,
    compliance: Compliance | None = None,
) -> dict[str, Any]:
    """The infringements seen on ``day``.

    Shape::

        {"date", "generated_at", "previous_report", "new_since",
         "summary": {"pages", "works", "sites", "matches", "new_pages", "new_matches", "groups",
                     "unread"},
         "works": [{"work", "unit", "chapters", "pages": [{"url", "site", "title", "doc_ids",
                                                   "copies", "score", "coverage", "method",
                                                   "rewritten", "first_seen", "evidence",
                                                   "pairs": [{"doc_id", "text", "master_text",
                                                              "swapped"}],
                                                   "aligned", "last_seen", "new", "group",
                                                   "file"}],
                    "total_chapters", "coverage", "found_share", "copied_chapters",
                    "partial_chapters", "partly_copied": [{"doc_id", "title", "copied_share"}],
                    "first_seen", "last_seen", "new_pages",
                    "chapters_found": [{"doc_id", "title", "pages", "sites"}],
                    "sites": [{"site", "pages", "chapters", "coverage", "found_share",
                               "copied_chapters", "partial_chapters", "first_seen",
                               "last_seen", "new_pages"}]}],
         "pages": [{"url", "site", "doc_ids", "copies", "score", "coverage", "method",
                    "rewritten", "first_seen", "last_seen", "new", "group", "file",
                    "takedown": None | {"state", "noticed": [{"at", "to", "message_id",
                                                              "notice"}],
                                        "removed": [at], "reappeared": [at]}}],
         "sites": [{"site", "pages", "works", "matches", "new_pages", "first_seen", "last_seen",
                    "trend": [{"date", "pages"}]}],
         "groups": [{"group", "pages", "sites", "works", "doc_ids"}],
         "trend": [{"date", "pages", "new_pages", "matches", "sites", "works"}],
         "unread": [{"url", "site", "reason", "first_seen", "last_seen", "attempts"}],
         "takedown": [{"site", "noticed", "removed", "live", "reappeared", "unchecked",
                       "removal_rate", "median_hours_to_removal", "first_noticed",
                       "noncompliant"}],
         "discovered": [{"site", "state", "found_by", "found_at", "first_seen", "pages", "sources",
                         "copies"}]}

    Works are sorted by number of pages (desc) then name; a work's pages by score (desc) then
    URL, and their doc_ids/score/coverage/first_seen/evidence cover that work's matches only.
    The flat ``pages`` list (sorted by URL) aggregates every match of each page.

    Two shares, two words. A page's ``coverage`` is its *copied share*: the share of a master
    document copied on it (the best of its masters), as ``tracker check`` prints it. A work's
    ``found_share`` (also under its old name ``coverage``) is the share of its chapters
    (master documents) *found* that day, on all sites together or, under ``sites``, on each
    one. A chapter found counts as *copied* (``copied_chapters``) when the pages copy at
    least :data:`COPIED_SHARE` of it together (a chapter split over three pages is copied;
    :func:`copied_shares`), else as *partly copied* (``partial_chapters``, listed in
    ``partly_copied`` with that share). ``unit`` says what a work's documents are,
    ``chapter`` or ``article`` (news), as the library stored them.

    *New* means first seen after the day of the previous stored report (``previous_report``;
    every match is new when there is none), i.e. since the last report people read. ``groups``
    are the mirror groups: clusters of near-duplicate pages (:mod:`tracker.reports.clustering`)
    with two or more pages seen that day; ``group`` is a page's group (None when no other page
    of the day is near-identical to it). ``copies`` sums up what a page copies per work (see
    :func:`copies`); ``evidence`` is its longest copied passage, without the lines the pirate
    site inserted (:func:`evidence_passage`). A page's ``method`` says how it copies:
    ``verbatim`` (the words kept, however disguised), ``rewrite`` (a rewritten copy, 改写/洗稿:
    the story kept, the words changed) or ``verbatim+rewrite``; ``rewritten`` lists the doc
    ids it copies rewritten. A rewritten copy has no verbatim passage: its evidence is
    ``pairs``, its most telling aligned sentence pairs (the page's sentence beside the
    master's, with the words it swapped: :func:`tracker.reports.pairs.telling_pairs`), of the
    ``aligned`` pairs its matches hold. ``trend`` and each site's ``trend`` cover the
    ``trend_days`` days up to ``day``, read from the stored reports (null for a day without
    one).
    ``unread`` lists the pages the day's crawls could not read and did not read later that day
    (challenges, bans, render failures…; see :mod:`tracker.stores.unread`), by site and URL:
    none of them counts as clean; ``summary["unread"]`` counts them, :func:`unread_sites` sums
    them up per site.
    ``takedown`` is each noticed site's compliance at the end of ``day`` (or now, for today), by
    ``compliance`` (:func:`tracker.enforcement.compliance.takedown_figures`); a page's
    ``takedown`` its history then (:func:`tracker.enforcement.compliance.url_history`: each
    notice sent, to whom, its ``Message-ID``; each removal; each return; times ISO 8601 UTC),
    None for a page never noticed.
    ``discovered`` lists the sites discovery first found carrying copies on ``day``
    (:mod:`tracker.discovery`), by site, each with the search query that found it.
    """
    matches = _carried_matches(db, day)
    previous = ReportStore(db).previous(day)
    new_since = day_window(date.fromisoformat(previous["_id"]))[1] if previous else None
    urls = {m["url"] for m in matches}
    titles = PageStore(db).titles(urls)
    files = PageStore(db).files(urls)
    clusters = ClusterStore(db).cluster_of(urls)
    sizes = Counter(clusters.values())
    groups = {url: group for url, group in clusters.items() if sizes[group] > 1}

    def is_new(page_matches: list[dict]) -> bool:
        return new_since is None or min(_utc(m["first_seen"]) for m in page_matches) >= new_since

    def seen(url: str, page_matches: list[dict]) -> dict[str, Any]:
        return {
            "last_seen": max(_utc(m["last_seen"]) for m in page_matches).isoformat(),
            "new": is_new(page_matches),
            "group": groups.get(url),
        }

    by_url: dict[str, list[dict]] = defaultdict(list)
    by_work: dict[str, dict[str, list[dict]]] = defaultdict(lambda: defaultdict(list))
    for match in matches:
        by_url[match["url"]].append(match)
        by_work[_work_of(match)][match["url"]].append(match)
    library = MasterStore(db).works(by_work)
    units = {work: unit for work, (_, unit) in library.items()}

    works = []
    for work, pages in by_work.items():
        entries = [
            label_files(
                {
                    **_page_entry(url, page_matches, units),
                    "title": titles.get(url, ""),
                    "evidence": evidence_passage(page_matches),
                    "pairs": telling_pairs(page_matches),
                    "aligned": aligned_count(page_matches),
                    **seen(url, page_matches),
                    "file": files.get(url),
                }
            )
            for url, page_matches in pages.items()
        ]
        entries.sort(key=lambda e: (-e["score"], e["url"]))
        works.append(
            _work_entry(
                work,
                pages,
                [_ordered_page(e) for e in entries],
                library.get(work, (0, CHAPTER)),
                is_new,
            )
        )
    works.sort(key=lambda w: (-len(w["pages"]), w["work"]))

    noticed = histories(db, by_url, min(day_window(day)[1], now or datetime.now(UTC)))
    flat_pages = [
        label_files(
            {
                **_page_entry(url, by_url[url], units),
                **seen(url, by_url[url]),
                "file": files.get(url),
                "takedown": history_json(noticed[url]) if url in noticed else None,
            }
        )
        for url in sorted(by_url)
    ]
    trend, site_trends = _trends(db, day, trend_days)
    sites = _site_entries(day, flat_pages, by_url, site_trends, trend)
    mirror_groups = _mirror_groups(flat_pages, by_url)
    unread = UnreadStore(db).on_day(day)
    summary = {
        "pages": len(by_url),
        "works": len(by_work),
        "sites": len(sites),
        "matches": len(matches),
        "new_pages": sum(1 for p in flat_pages if p["new"]),
        "new_matches": sum(1 for m in matches if is_new([m])),
        "groups": len(mirror_groups),
        "unread": len(unread),
    }
    today = {"date": day.isoformat(), **{k: summary[k] for k in TREND_FIGURES}}
    return {
        "date": day.isoformat(),
        "generated_at": (now or datetime.now(UTC)).isoformat(timespec="seconds"),
        "previous_report": previous["_id"] if previous else None,
        "new_since": new_since.isoformat() if new_since else None,
        "summary": summary,
        "works": works,
        "pages": flat_pages,
        "sites": sites,
        "groups": mirror_groups,
        "trend": [*trend, today],
        "unread": unread,
        "takedown": _takedown(db, day, now, compliance),
        "discovered": _discovered(db, day),
    }


def _discovered(db: Database, day: date) -> list[dict[str, Any]]:
    """The sites discovery first found carrying copies on ``day``, with the query or book
    source that found each (a site a book source names is listed once a copy is found on it)."""
    return [
        {
            "site": doc["_id"],
            "state": doc.get("state", ""),
            "found_by": doc.get("found_by", ""),
            "found_at": doc.get("found_at", ""),
            "first_seen": _iso(doc.get("first_seen")),
            "pages": int(doc.get("pages", 0)),
            "copies": int(doc.get("copies", 0)),
            "sources": list(doc.get("sources") or ()),
        }
        for doc in SiteRegistry(db).first_seen_on(day.isoformat())
        if doc.get("found_at")
    ]


def _iso(moment: datetime | None) -> str | None:
    if moment is None:
        return None
    moment = moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment
    return moment.isoformat(timespec="seconds")


def _takedown(
    db: Database, day: date, now: datetime | None, compliance: Compliance | None
) -> list[dict[str, Any]]:
    """Each noticed site's compliance at the end of ``day`` (or now, if sooner)."""
    moment = min(day_window(day)[1], now or datetime.now(UTC))
    return takedown_figures(TakedownStore(db).noticed_by(moment), moment, compliance)


def summary_line(report: dict[str, Any]) -> str:
    """One line such as ``2026-11-22: 3 infringing pages on 1 site(s), copying 2 work(s) (5
    matches)``, then ``; 4 pages could not be read`` when some could not."""
    s = report["summary"]
    pages = f"{s['pages']} infringing page{'' if s['pages'] == 1 else 's'}"
    matches = f"{s['matches']} match{'' if s['matches'] == 1 else 'es'}"
    unread = len(report.get("unread") or ())
    return (
        f"{report['date']}: {pages} on {s['sites']} site(s), copying {s['works']} work(s) "
        f"({matches})" + (f"; {plural(unread, 'page')} could not be read" if unread else "")
    )


def unread_sites(unread: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    """The report's ``unread`` pages per site, the site with most first: ``{"site", "pages",
    "reasons": [{"reason", "pages"}], "first_seen", "last_seen", "entries"}``, ``entries``
    the site's unread pages as the report lists them, ``first_seen`` the earliest of theirs,
    ``last_seen`` the latest attempt. What the HTML report and the console show, so that a
    site none of whose pages could be read never looks clean."""
    by_site: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for entry in unread:
        by_site[entry["site"]].append(entry)
    sites = []
    for site, entries in by_site.items():
        reasons = Counter(entry["reason"] for entry in entries)
        firsts = [e["first_seen"] for e in entries if e.get("first_seen")]
        lasts = [e["last_seen"] for e in entries if e.get("last_seen")]
        sites.append(
            {
                "site": site,
                "pages": len(entries),
                "reasons": [
                    {"reason": reason, "pages": n}
                    for reason, n in sorted(reasons.items(), key=lambda item: (-item[1], item[0]))
                ],
                "first_seen": min(firsts, default=None),
                "last_seen": max(lasts, default=None),
                "entries": entries,
            }
        )
    sites.sort(key=lambda s: (-s["pages"], s["site"]))
    return sites


def _carried_matches(db: Database, day: date) -> list[dict]:
    """The matches the day's pages carried at their latest check of the day, each with
    ``last_seen`` set to that check's time."""
    store = MatchStore(db)
    page_days = store.carried_on(day)
    latest = {(pd["url"], str(doc_id)): pd["at"] for pd in page_days for doc_id in pd["doc_ids"]}
    found = store.by_ids(latest)
    return [{**m, "last_seen": latest[(m["url"], str(m["doc_id"]))]} for m in found]


def _share(part: int, whole: int) -> float | None:
    return round(part / whole, 4) if whole else None


def _span(matches: Iterable[dict]) -> tuple[str, str]:
    """First seen (earliest) and last seen (latest) of ``matches``, ISO formatted."""
    matches = list(matches)
    return (
        min(_utc(m["first_seen"]) for m in matches).isoformat(),
        max(_utc(m["last_seen"]) for m in matches).isoformat(),
    )


def copied_shares(matches: Iterable[dict]) -> dict[str, float]:
    """Per chapter that ``matches`` name, the share of it these pages copy together: the
    union of the master passages they copy, so that a chapter split over several pages is
    copied whole (and a mirror's second copy adds nothing). The union is measured in the
    matches' own unit: their copied share per character of passage, that of the match with
    the most passage text; never less than the best single match's copied share."""
    by_doc: dict[str, list[dict]] = defaultdict(list)
    for match in matches:
        by_doc[str(match["doc_id"])].append(match)
    shares = {}
    for doc_id, found in by_doc.items():
        best = max(as_number(m.get("coverage")) for m in found)
        passages, scale, widest = [], 0.0, 0
        for match in found:
            spans = _master_spans(match)
            chars = _union(spans)
            if chars > widest:
                widest, scale = chars, as_number(match.get("coverage")) / chars
            passages += spans
        shares[doc_id] = round(max(best, min(1.0, _union(passages) * scale)), 4)
    return shares


def _master_spans(match: dict) -> list[tuple[int, int]]:
    spans = []
    for span in match.get("spans") or ():
        start, end = span.get("master_start"), span.get("master_end")
        if isinstance(start, int) and isinstance(end, int) and end > start:
            spans.append((start, end))
    return spans


def _union(spans: list[tuple[int, int]]) -> int:
    """Characters covered by the ``(start, end)`` intervals together."""
    covered, reach = 0, -1
    for start, end in sorted(spans):
        start = max(start, reach)
        if end > start:
            covered += end - start
            reach = end
    return covered


def _copied(matches: Iterable[dict]) -> tuple[int, int]:
    """How many of the chapters ``matches`` name are copied (:func:`copied_shares` at least
    :data:`COPIED_SHARE`) and how many only partly."""
    shares = copied_shares(matches)
    copied = sum(1 for share in shares.values() if share >= COPIED_SHARE)
    return copied, len(shares) - copied


def _work_entry(
    work: str,
    pages: dict[str, list[dict]],
    entries: list[dict[str, Any]],
    library: tuple[int, str],
    is_new: Callable[[list[dict]], bool],
) -> dict[str, Any]:
    total_chapters, unit = library
    matches = [m for page_matches in pages.values() for m in page_matches]
    chapters: dict[str, dict[str, Any]] = {}
    best = copied_shares(matches)
    for match in sorted(matches, key=lambda m: m["doc_id"]):
        chapter = chapters.setdefault(
            str(match["doc_id"]),
            {"doc_id": str(match["doc_id"]), "title": "", "pages": set(), "sites": set()},
        )
        chapter["title"] = chapter["title"] or str(match.get("title") or "")
        chapter["pages"].add(match["url"])
        chapter["sites"].add(match.get("site") or site_of(match["url"]))
    by_site: dict[str, dict[str, list[dict]]] = defaultdict(lambda: defaultdict(list))
    for url, page_matches in pages.items():
        by_site[page_matches[0].get("site") or site_of(url)][url] = page_matches
    sites = []
    for site, site_pages in by_site.items():
        site_matches = [m for ms in site_pages.values() for m in ms]
        found = len({m["doc_id"] for m in site_matches})
        copied, partial = _copied(site_matches)
        first_seen, last_seen = _span(site_matches)
        sites.append(
            {
                "site": site,
                "pages": len(site_pages),
                "chapters": found,
                "coverage": _share(found, total_chapters),
                "found_share": _share(found, total_chapters),
                "copied_chapters": copied,
                "partial_chapters": partial,
                "first_seen": first_seen,
                "last_seen": last_seen,
                "new_pages": sum(1 for ms in site_pages.values() if is_new(ms)),
            }
        )
    sites.sort(key=lambda s: (-s["chapters"], -s["pages"], s["site"]))
    first_seen, last_seen = _span(matches)
    partly = [
        {"doc_id": c["doc_id"], "title": c["title"], "copied_share": round(best[c["doc_id"]], 4)}
        for c in chapters.values()
        if best[c["doc_id"]] < COPIED_SHARE
    ]
    return {
        "work": work,
        "unit": unit,
        "chapters": len(chapters),
        "pages": entries,
        "total_chapters": total_chapters,
        "coverage": _share(len(chapters), total_chapters),
        "found_share": _share(len(chapters), total_chapters),
        "copied_chapters": len(chapters) - len(partly),
        "partial_chapters": len(partly),
        "partly_copied": partly,
        "first_seen": first_seen,
        "last_seen": last_seen,
        "new_pages": sum(1 for e in entries if e["new"]),
        "chapters_found": [
            {**c, "pages": len(c["pages"]), "sites": len(c["sites"])} for c in chapters.values()
        ],
        "sites": sites,
    }


def _trends(
    db: Database, day: date, trend_days: int
) -> tuple[list[dict[str, Any]], dict[str, dict[str, int]]]:
    """The stored figures of the ``trend_days - 1`` days before ``day``: the overall trend (one
    entry per day, null figures for a day without a report) and ``{date: {site: pages}}``."""
    days = [day - timedelta(days=offset) for offset in range(trend_days - 1, 0, -1)]
    stored = ReportStore(db).days(days)
    trend, site_pages = [], {}
    for past in days:
        doc = stored.get(past.isoformat())
        summary = doc.get("summary", {}) if doc else {}
        trend.append(
            {
                "date": past.isoformat(),
                **{k: summary.get(k) if doc else None for k in TREND_FIGURES},
            }
        )
        if doc:
            site_pages[past.isoformat()] = {s["site"]: s["pages"] for s in doc.get("sites", [])}
    return trend, site_pages


def _site_entries(
    day: date,
    flat_pages: list[dict[str, Any]],
    by_url: dict[str, list[dict]],
    site_trends: dict[str, dict[str, int]],
    trend: list[dict[str, Any]],
) -> list[dict[str, Any]]:
    by_site: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for page in flat_pages:
        by_site[page["site"]].append(page)
    sites = []
    for site, pages in by_site.items():
        matches = [m for page in pages for m in by_url[page["url"]]]
        first_seen, last_seen = _span(matches)
        past = [
            {
                "date": t["date"],
                "pages": site_trends[t["date"]].get(site, 0) if t["date"] in site_trends else None,
            }
            for t in trend
        ]
        sites.append(
            {
                "site": site,
                "pages": len(pages),
                "works": len({_work_of(m) for m in matches}),
                "matches": len(matches),
                "new_pages": sum(1 for p in pages if p["new"]),
                "first_seen": first_seen,
                "last_seen": last_seen,
                "trend": [*past, {"date": day.isoformat(), "pages": len(pages)}],
            }
        )
    sites.sort(key=lambda s: (-s["pages"], s["site"]))
    return sites


def _mirror_groups(
    flat_pages: list[dict[str, Any]], by_url: dict[str, list[dict]]
) -> list[dict[str, Any]]:
    members: dict[int, list[dict[str, Any]]] = defaultdict(list)
    for page in flat_pages:
        if page["group"] is not None:
            members[page["group"]].append(page)
    groups = [
        {
            "group": group,
            "pages": [p["url"] for p in pages],
            "sites": sorted({p["site"] for p in pages}),
            "works": sorted({_work_of(m) for p in pages for m in by_url[p["url"]]}),
            "doc_ids": sorted({d for p in pages for d in p["doc_ids"]}),
        }
        for group, pages in members.items()
        if len(pages) > 1
    ]
    groups.sort(key=lambda g: (-len(g["pages"]), g["group"]))
    return groups


def _work_of(match: dict) -> str:
    return str(match.get("work") or "") or UNKNOWN_WORK


def _page_entry(url: str, matches: list[dict], units: dict[str, str]) -> dict[str, Any]:
    """``url, site, doc_ids, copies, score, coverage, method, rewritten, first_seen``
    aggregated over ``matches``."""
    return {
        "url": url,
        "site": matches[0].get("site") or site_of(url),
        "doc_ids": sorted({str(m["doc_id"]) for m in matches}),
        "copies": copies(matches, units),
        "score": round(max(as_number(m.get("score")) for m in matches), 4),
        "coverage": round(max(as_number(m.get("coverage")) for m in matches), 4),
        "method": method_of(matches),
        "rewritten": rewritten(matches),
        "first_seen": min(_utc(m["first_seen"]) for m in matches).isoformat(),
    }


def copies(matches: Iterable[dict], units: dict[str, str] | None = None) -> list[dict[str, Any]]:
    """What a page copies, work by work: ``{"work", "chapters", "numbers", "label"}``, e.g. a
    whole-book page as ``98 chapters of 西游记 (1–98)`` rather than 98 loose rows, a news
    work's as ``2 articles of 人民日报`` (``units``: work → ``chapter`` or ``article``; chapter
    when unknown). Chapter numbers are read from the doc ids (``WORK/12``, as ``tracker
    ingest`` names chapters); articles have none."""
    by_work: dict[str, set[str]] = defaultdict(set)
    for match in matches:
        by_work[_work_of(match)].add(str(match["doc_id"]))
    found = []
    for work, doc_ids in sorted(by_work.items(), key=lambda item: (-len(item[1]), item[0])):
        unit = (units or {}).get(work, CHAPTER)
        numbers = chapter_ranges(doc_ids) if unit != ARTICLE else ""
        count = len(doc_ids)
        label = f"{plural(count, unit)} of {work}"
        found.append(
            {
                "work": work,
                "chapters": count,
                "numbers": numbers,
                "label": f"{label} ({numbers})" if numbers else label,
            }
        )
    return found


_CHAPTER_NUMBER = re.compile(r"(\d+)$")


def chapter_ranges(doc_ids: Iterable[str]) -> str:
    """``1–98`` or ``1–3, 7, 9–12`` from the numbers ending the doc ids; "" when one of them
    has none (articles, ids of the rights holder's own)."""
    numbers = []
    for doc_id in doc_ids:
        found = _CHAPTER_NUMBER.search(doc_id)
        if found is None:
            return ""
        numbers.append(int(found[1]))
    return number_ranges(numbers)


def _ordered_page(entry: dict[str, Any]) -> dict[str, Any]:
    keys = (
        "url",
        "site",
        "title",
        "doc_ids",
        "copies",
        "score",
        "coverage",
        "method",
        "rewritten",
        "first_seen",
        "evidence",
        "pairs",
        "aligned",
        "last_seen",
        "new",
        "group",
        "file",
    )
    return {key: entry[key] for key in keys if key in entry}


def label_files(entry: dict[str, Any]) -> dict[str, Any]:
    """A report row whose ``file`` is a download file's (:mod:`tracker.files`: name, size,
    SHA-256, members, chapters; None for a page), its copies labelled with the file's name:
    ``40 chapters of 三国演义 in 三国演义.zip (1–40)``."""
    file = entry.get("file")
    if not file:
        entry.pop("file", None)  # a page: the rows stay as they were
        return entry
    for copy in entry["copies"]:
        label = f"{plural(copy['chapters'], 'chapter')} of {copy['work']} in {file['name']}"
        copy["label"] = f"{label} ({copy['numbers']})" if copy["numbers"] else label
    return entry


def evidence_passage(matches: Iterable[dict]) -> str:
    """A page's evidence passage for its ``matches`` (of one work): the longest copied passage
    as it stands on the page, without the lines the pirate site inserted (:func:`copied_text`),
    truncated to ``EVIDENCE_CHARS``. The report's pages, the notice drafts and the notices sent
    (:func:`tracker.enforcement.notices.infringing_pages`) all quote this one passage. Of the
    verbatim copies only: a rewritten copy's sentences are no copied passage (its evidence is
    its aligned pairs, :func:`tracker.reports.pairs.telling_pairs`); "" when all are."""
    best = ""
    verbatim = (m for m in matches if not is_rewrite(m))
    for match in sorted(verbatim, key=lambda m: -as_number(m.get("score"))):
        for span in match.get("spans") or ():
            text = copied_text(str(span.get("text") or ""))
            if len(text) > len(best):
                best = text
    if len(best) > EVIDENCE_CHARS:
        best = best[: EVIDENCE_CHARS - 1] + "…"
    return best


def copied_text(passage: str) -> str:
    """A copied passage as evidence: the copied text, without the ad and watermark lines (and
    bracketed ads, site addresses) the pirate site inserted into it, which matching leaves out
    too (:func:`tracker.text.normalize.boilerplate_mask`); each is marked :data:`INSERTED`, and
    whitespace is collapsed."""
    mask = boilerplate_mask(passage)
    if mask.any():
        edges = np.flatnonzero(np.diff(np.concatenate(([0], mask.view(np.int8), [0])))).tolist()
        parts, at = [], 0
        for start, end in zip(edges[::2], edges[1::2], strict=True):
            parts += [passage[at:start], f" {INSERTED} "]
            at = end
        passage = "".join([*parts, passage[at:]])
    return " ".join(passage.split())


def as_number(value: Any) -> float:
    """A stored score or coverage as a float (0 when missing or malformed)."""
    try:
        return float(value or 0.0)
    except (TypeError, ValueError):
        return 0.0


def _utc(moment: datetime) -> datetime:
    """``moment`` as tz-aware UTC (a naive datetime from a non tz-aware client is UTC)."""
    return moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment.astimezone(UTC)
